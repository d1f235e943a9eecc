package usbfs_test

import (
	"context"
	"errors"
	"fmt"

	"github.com/usbflash/usbflash/usbms/usbdev"
	"github.com/usbflash/usbflash/usbms/usbfs"
)

// List finds the mass-storage interfaces (usbdev.Info, without claiming
// anything) and Open claims one. A reader that is not attached where its
// Info says is refused with an *usbdev.Error of kind usbdev.ErrNotFound,
// before anything is claimed, as is a look at its device node (Access).
func ExampleOpen() {
	missing := usbdev.Info{Bus: 255, Address: 127, PortPath: "255-9", VID: 0x46f4, PID: 0x0001,
		SubClass: usbdev.SubclassSCSI, Protocol: usbdev.ProtocolBOT, BulkIn: 0x81, BulkOut: 0x02, Supported: true}
	dev, err := usbfs.Open(context.Background(), missing, usbdev.OpenOptions{})
	var ue *usbdev.Error
	fmt.Println(dev == nil, errors.Is(err, usbdev.ErrNotFound), errors.As(err, &ue) && ue.Port == "255-9")
	fmt.Println(errors.Is(usbfs.Access(missing), usbdev.ErrNotFound))
	// Output:
	// true true true
	// true
}
