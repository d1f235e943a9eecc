//go:build linux && !libusb && !libusbdl && !nousb

package backend

import (
	"context"

	"github.com/usbflash/usbflash/usbms/usbdev"
	"github.com/usbflash/usbflash/usbms/usbfs"
)

// Name names this build's backend.
const Name = "usbfs"

// List lists the mass-storage interfaces of the USB devices.
func List(ctx context.Context) ([]usbdev.Info, error) { return usbfs.List(ctx) }

// Access says, without opening it, whether this user may open the
// reader's device node.
func Access(info usbdev.Info) error { return usbfs.Access(info) }

// Open claims the mass-storage interface info names.
func Open(ctx context.Context, info usbdev.Info, opts usbdev.OpenOptions) (Device, error) {
	d, err := usbfs.Open(ctx, info, opts)
	if err != nil {
		return nil, err
	}
	return d, nil
}
