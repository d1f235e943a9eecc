//go:build !linux || libusb || nousb

package drive

import (
	"context"

	"github.com/usbflash/usbflash/usbms/libusb"
	"github.com/usbflash/usbflash/usbms/usbdev"
)

// The USB backend: libusb (gousb, cgo) on macOS, Windows and the BSDs, and
// on Linux with -tags libusb (Linux's default is usbfs: backend_usbfs.go);
// with -tags nousb its stub. These two functions are the only places
// target reaches a backend.

// Backend names the USB backend this build uses.
const Backend = "libusb"

// ListUSB lists the mass-storage interfaces of the USB devices.
func ListUSB(ctx context.Context) ([]usbdev.Info, error) { return libusb.List(ctx) }

// accessUSB is nil: libusb tells whether a device may be opened only by
// opening it, which the open does in its turn.
func accessUSB(usbdev.Info) error { return nil }

// openUSB is the one place a reader is opened: for a write, a read, info,
// list and --watch alike.
func openUSB(ctx context.Context, info usbdev.Info, opts usbdev.OpenOptions) (usbDevice, error) {
	d, err := libusb.Open(ctx, info, opts)
	if err != nil {
		return nil, err
	}
	return d, nil
}
