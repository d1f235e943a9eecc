//go:build !nousb && !libusb && (darwin || windows || (linux && libusbdl))

package backend

import (
	"context"

	"github.com/usbflash/usbflash/usbms/libusbdl"
	"github.com/usbflash/usbflash/usbms/usbdev"
)

// Name names this build's backend.
const Name = "libusbdl"

// List lists the mass-storage interfaces of the USB devices.
func List(ctx context.Context) ([]usbdev.Info, error) { return libusbdl.List(ctx) }

// Access is nil: libusb tells whether a device may be opened only by
// opening it, which Open does in its turn.
func Access(usbdev.Info) error { return nil }

// Open claims the mass-storage interface info names.
func Open(ctx context.Context, info usbdev.Info, opts usbdev.OpenOptions) (Device, error) {
	d, err := libusbdl.Open(ctx, info, opts)
	if err != nil {
		return nil, err
	}
	return d, nil
}
