//go:build linux || darwin || windows

package libusbdl_test

import (
	"errors"
	"fmt"

	"github.com/usbflash/usbflash/usbms/libusbdl"
	"github.com/usbflash/usbflash/usbms/usbdev"
)

// Where libusb-1.0 is not installed, every call says so with one kind,
// usbdev.ErrNoLibusb, which is also usbdev.ErrNoUSBAccess: this process
// cannot reach USB, and what still works does.
func ExampleLoad() {
	_, err := libusbdl.Load("/nonexistent/libusb-1.0.so.0")
	fmt.Println(errors.Is(err, usbdev.ErrNoLibusb), errors.Is(err, usbdev.ErrNoUSBAccess))
	// Output:
	// true true
}
