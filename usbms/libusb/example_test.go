package libusb_test

import (
	"context"
	"errors"
	"fmt"

	"github.com/usbflash/usbflash/usbms/libusb"
	"github.com/usbflash/usbflash/usbms/usbdev"
)

// Open claims a mass-storage interface that List found. Whatever the
// build (libusb through cgo, or the stub of a build without it) a failure
// is told by usbdev's kinds: a reader not attached where its Info says
// (usbdev.ErrNotFound), a machine without USB access
// (usbdev.ErrNoUSBAccess), a build without libusb (usbdev.ErrNoUSBSupport).
func ExampleOpen() {
	missing := usbdev.Info{Bus: 255, Address: 127, PortPath: "255-9", VID: 0x46f4, PID: 0x0001,
		SubClass: usbdev.SubclassSCSI, Protocol: usbdev.ProtocolBOT, BulkIn: 0x81, BulkOut: 0x02, Supported: true}
	dev, err := libusb.Open(context.Background(), missing, usbdev.OpenOptions{})
	told := errors.Is(err, usbdev.ErrNotFound) || errors.Is(err, usbdev.ErrNoUSBAccess) || errors.Is(err, usbdev.ErrNoUSBSupport)
	fmt.Println(dev == nil, told)
	// Output:
	// true true
}
