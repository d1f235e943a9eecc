//go:build e2e && linux && !libusb

package usbbackend

import (
	"context"

	"github.com/usbflash/usbflash/usbms/usbdev"
	"github.com/usbflash/usbflash/usbms/usbfs"
)

// Backend names the USB backend of this build, as drive.Backend does.
const Backend = "usbfs"

// Device is an opened mass-storage interface of this build's backend.
type Device = usbfs.Device

// List lists the mass-storage interfaces.
func List(ctx context.Context) ([]usbdev.Info, error) { return usbfs.List(ctx) }

// Open claims a mass-storage interface.
func Open(ctx context.Context, info usbdev.Info, opts usbdev.OpenOptions) (*Device, error) {
	return usbfs.Open(ctx, info, opts)
}
