//go:build !nousb && (libusb || !(linux || darwin || windows))

package backend

import (
	"context"

	"github.com/usbflash/usbflash/usbms/libusb"
	"github.com/usbflash/usbflash/usbms/usbdev"
)

// Name names this build's backend.
const Name = "libusb"

// List lists the mass-storage interfaces of the USB devices.
func List(ctx context.Context) ([]usbdev.Info, error) { return libusb.List(ctx) }

// Access is nil: libusb tells whether a device may be opened only by
// opening it, which Open does in its turn.
func Access(usbdev.Info) error { return nil }

// Open claims the mass-storage interface info names.
func Open(ctx context.Context, info usbdev.Info, opts usbdev.OpenOptions) (Device, error) {
	d, err := libusb.Open(ctx, info, opts)
	if err != nil {
		return nil, err
	}
	return d, nil
}
