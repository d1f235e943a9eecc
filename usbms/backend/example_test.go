package backend_test

import (
	"context"
	"errors"
	"fmt"

	"github.com/usbflash/usbflash/usbms/backend"
	"github.com/usbflash/usbflash/usbms/usbdev"
)

// A program reaches real readers through the build's backend alone: List,
// Open, then usbms.NewTransport over the Device as over any Endpoint,
// and Close. Which backend
// that is (Name) is the build's tags' choice; what a failure means is
// usbdev's kinds in every build: here a reader not attached where its Info
// says, on a machine with USB or without, or in a build without any.
func Example() {
	ctx := context.Background()
	missing := usbdev.Info{Bus: 255, Address: 127, PortPath: "255-9", VID: 0x46f4, PID: 0x0001,
		SubClass: usbdev.SubclassSCSI, Protocol: usbdev.ProtocolBOT, BulkIn: 0x81, BulkOut: 0x02, Supported: true}
	dev, err := backend.Open(ctx, missing, usbdev.OpenOptions{})
	told := errors.Is(err, usbdev.ErrNotFound) || errors.Is(err, usbdev.ErrNoUSBAccess) || errors.Is(err, usbdev.ErrNoUSBSupport)
	fmt.Println(dev == nil, told)
	// Output:
	// true true
}
