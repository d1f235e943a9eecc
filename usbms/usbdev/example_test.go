package usbdev_test

import (
	"errors"
	"fmt"
	"syscall"

	"github.com/usbflash/usbflash/usbms/usbdev"
)

// What an interface is and where it sits, in the words both backends
// use: whether usbflash drives it, its name in messages, its port.
func ExampleInfo() {
	info := usbdev.Info{Bus: 2, Address: 7, PortPath: "2-1.4", VID: 0x0bda, PID: 0x0158,
		Manufacturer: "Generic", Product: "USB2.0-CRW", SubClass: usbdev.SubclassSCSI, Protocol: usbdev.ProtocolBOT}
	ok, _ := usbdev.Classify(info.SubClass, info.Protocol)
	fmt.Println(ok, info.HasBOT())
	fmt.Println(info)
	bus, port, err := usbdev.ParsePortPath(info.PortPath)
	fmt.Println(bus, port, err)
	// Output:
	// true true
	// 0bda:0158 "USB2.0-CRW" (bus 2 address 7, port 2-1.4)
	// 2 [1 4] <nil>
}

// Every failing call of a backend is an *Error: what was tried, on which
// device, its kind (a sentinel matched with errors.Is) and the system's
// own error.
func ExampleError() {
	info := usbdev.Info{Bus: 1, Address: 5, VID: 0x46f4, PID: 0x0001}
	var err error = usbdev.NewError("open", info, usbdev.ErrPermission, syscall.EACCES)
	var ue *usbdev.Error
	fmt.Println(errors.Is(err, usbdev.ErrPermission), errors.As(err, &ue) && ue.VID == 0x46f4)
	fmt.Println(errors.Is(err, syscall.EACCES))
	// Output:
	// true true
	// true
}
