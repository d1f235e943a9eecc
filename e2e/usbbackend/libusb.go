//go:build e2e && (!linux || libusb)

package usbbackend

import (
	"context"

	"github.com/usbflash/usbflash/usbms/libusb"
	"github.com/usbflash/usbflash/usbms/usbdev"
)

// Backend names the USB backend of this build, as drive.Backend does.
const Backend = "libusb"

// Device is an opened mass-storage interface of this build's backend.
type Device = libusb.Device

// List lists the mass-storage interfaces.
func List(ctx context.Context) ([]usbdev.Info, error) { return libusb.List(ctx) }

// Open claims a mass-storage interface.
func Open(ctx context.Context, info usbdev.Info, opts usbdev.OpenOptions) (*Device, error) {
	return libusb.Open(ctx, info, opts)
}
