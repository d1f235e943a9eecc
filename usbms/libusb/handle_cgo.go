//go:build cgo && !nousb

package libusb

/*
#cgo pkg-config: libusb-1.0
#include <libusb.h>
*/
import "C"

import (
	"errors"
	"reflect"

	"github.com/google/gousb"
)

// gousb v1.1.3 wraps libusb but exposes neither libusb_clear_halt nor
// libusb_attach_kernel_driver, and its SetAutoDetach(true) also detaches the
// kernel drivers of every other interface of the configuration (Device.Config
// loops over all of them), which is wrong for composite devices. All three
// need the libusb_device_handle, which gousb keeps in the unexported field
// Device.handle (device.go: `handle *libusbDevHandle`, a named type for
// C.libusb_device_handle). We read that pointer with reflect; the layout is
// pinned by TestGousbHandleLayout, so a gousb upgrade that changes it fails
// the tests loudly instead of misbehaving, and at run time rawHandle checks
// the field before touching it and the callers fall back (see Device).

// errHandleLayout says the pinned gousb layout is not the one compiled in.
var errHandleLayout = errors.New("gousb.Device has no field `handle *libusbDevHandle` (gousb version changed?): the libusb device handle is unreachable")

// checkHandleField verifies that gousb.Device still has the field we read.
func checkHandleField() error {
	f, ok := reflect.TypeOf(gousb.Device{}).FieldByName("handle")
	if !ok || f.Type.Kind() != reflect.Pointer {
		return errHandleLayout
	}
	if e := f.Type.Elem(); e.Name() != "libusbDevHandle" || e.PkgPath() != "github.com/google/gousb" {
		return errHandleLayout
	}
	return nil
}

// rawHandle returns the libusb_device_handle behind an open gousb.Device.
func rawHandle(d *gousb.Device) (*C.libusb_device_handle, error) {
	if err := checkHandleField(); err != nil {
		return nil, err
	}
	if d == nil {
		return nil, ErrClosed
	}
	// UnsafePointer does not require the field to be exported; the value
	// is a C pointer (libusb owns the memory), so passing it back to C
	// obeys the cgo pointer rules.
	p := reflect.ValueOf(d).Elem().FieldByName("handle").UnsafePointer()
	if p == nil {
		return nil, ErrClosed
	}
	return (*C.libusb_device_handle)(p), nil
}

// libusbErr turns a libusb return code into gousb's error type, so that one
// mapping (errmap_cgo.go) serves both gousb's calls and ours.
func libusbErr(rc C.int) error {
	if rc >= 0 {
		return nil
	}
	return gousb.Error(rc)
}

// clearHalt is libusb_clear_halt: on Linux the USBDEVFS_CLEAR_HALT ioctl,
// whose kernel side (usb_clear_halt) sends CLEAR_FEATURE(ENDPOINT_HALT) and
// then resets the host's endpoint state, data toggle included. See ClearHalt
// for the source references. It blocks for at most the kernel's
// USB_CTRL_SET_TIMEOUT (5 s).
func clearHalt(h *C.libusb_device_handle, ep uint8) error {
	return libusbErr(C.libusb_clear_halt(h, C.uchar(ep)))
}

// resetDevice is libusb_reset_device. On Linux (op_reset_device) libusb
// releases the interfaces this handle claimed, issues USBDEVFS_RESET, and
// claims them again with USBDEVFS_DISCONNECT_CLAIM, so the kernel driver does
// not get the interface in between. It returns LIBUSB_ERROR_NOT_FOUND when
// the device re-enumerated (descriptors changed) or could not be re-claimed.
func resetDevice(h *C.libusb_device_handle) error {
	return libusbErr(C.libusb_reset_device(h))
}

// setAutoDetach makes libusb detach the kernel driver atomically while
// claiming (USBDEVFS_DISCONNECT_CLAIM) for this handle only. NOT_SUPPORTED
// (not Linux) is not an error: there is nothing to detach.
func setAutoDetach(h *C.libusb_device_handle, on bool) error {
	v := C.int(0)
	if on {
		v = 1
	}
	err := libusbErr(C.libusb_set_auto_detach_kernel_driver(h, v))
	if errors.Is(err, gousb.ErrorNotSupported) {
		return nil
	}
	return err
}

// kernelDriverActive tells whether a kernel driver (other than usbfs) is
// bound to the interface.
func kernelDriverActive(h *C.libusb_device_handle, iface int) (bool, error) {
	rc := C.libusb_kernel_driver_active(h, C.int(iface))
	if rc < 0 {
		if gousb.Error(rc) == gousb.ErrorNotSupported {
			return false, nil
		}
		return false, gousb.Error(rc)
	}
	return rc == 1, nil
}

// attachKernelDriver gives the interface back to the kernel (USBDEVFS_CONNECT).
// NOT_FOUND means no driver wanted it and BUSY that one already has it:
// neither is a failure to report.
func attachKernelDriver(h *C.libusb_device_handle, iface int) error {
	err := libusbErr(C.libusb_attach_kernel_driver(h, C.int(iface)))
	switch {
	case errors.Is(err, gousb.ErrorNotFound), errors.Is(err, gousb.ErrorBusy),
		errors.Is(err, gousb.ErrorNotSupported), errors.Is(err, gousb.ErrorNoDevice):
		return nil
	}
	return err
}
