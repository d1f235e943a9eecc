//go:build windows

package libusbdl

import (
	"context"
	"errors"

	"github.com/usbflash/usbflash/usbms/usbdev"
)

// noDisks is Windows's view of a reader's disks: libusb opens only a
// reader bound to WinUSB, of which Windows makes no disk, so there is
// nothing mounted to refuse it for.
type noDisks struct{}

func (noDisks) InterfaceDisks(string) ([]usbdev.KernelDisk, error) { return nil, nil }

func diskView() usbdev.DiskView { return noDisks{} }

func sysfsSerial(string) (string, bool) { return "", false }

func platformClaimCheck(*Library, usbdev.Info, bool) error { return nil }

// errNotWinUSB is why libusb cannot open a reader on Windows: its
// libusb_open says LIBUSB_ERROR_NOT_SUPPORTED for a device whose driver
// is none of WinUSB, libusbK, libusb0 or HID, and a card reader has
// Windows's USBSTOR until it is bound to WinUSB (Zadig does it).
var errNotWinUSB = errors.New("the reader is bound to Windows's mass-storage driver (USBSTOR), not to WinUSB, and libusb drives only a device bound to WinUSB")

// openError is the error of a device libusb could not open.
func openError(info usbdev.Info, err error) error {
	if err == ErrNotSupported {
		return usbdev.NewError("opening the reader", info, usbdev.ErrSystemDriver, errNotWinUSB)
	}
	return mapError(context.Background(), "opening the reader", info, err)
}

// openFailure says why a device could not be opened to read its strings.
func openFailure(err error) string {
	if err == ErrNotSupported {
		return "not bound to WinUSB"
	}
	return "could not open the device: " + err.Error()
}
