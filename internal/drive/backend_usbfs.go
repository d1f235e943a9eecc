//go:build linux && !libusb && !nousb

package drive

import (
	"context"

	"github.com/usbflash/usbflash/usbms/usbdev"
	"github.com/usbflash/usbflash/usbms/usbfs"
)

// The USB backend on Linux: usbfs, pure Go, so that every Linux build is
// one static CGO_ENABLED=0 binary with USB (-tags libusb selects gousb
// instead, -tags nousb none). Both backends speak usbms/usbdev's vocabulary.

// Backend names the USB backend this build uses.
const Backend = "usbfs"

// ListUSB lists the mass-storage interfaces of the USB devices.
func ListUSB(ctx context.Context) ([]usbdev.Info, error) { return usbfs.List(ctx) }

// accessUSB says, without opening it, whether this user may open the
// reader's device node.
func accessUSB(info usbdev.Info) error { return usbfs.Access(info) }

// openUSB is the one place a reader is opened: for a write, a read, info,
// list and --watch alike.
func openUSB(ctx context.Context, info usbdev.Info, opts usbdev.OpenOptions) (usbDevice, error) {
	d, err := usbfs.Open(ctx, info, opts)
	if err != nil {
		return nil, err
	}
	return d, nil
}
