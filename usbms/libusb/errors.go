package libusb

import (
	"errors"
	"fmt"
	"strings"
)

// Sentinel errors, matched with errors.Is. Failing calls return an *Error
// that wraps one of these (or usbms.ErrStall / usbms.ErrNoDevice /
// a context error) together with libusb's own error.
var (
	// ErrNoUSBSupport is returned by every call of a build without libusb.
	ErrNoUSBSupport = errors.New("this usbflash was built without USB support (libusb-1.0); install libusb-1.0-0-dev and rebuild (make build); sim: and file: targets still work")
	// ErrNoUSBAccess means this process cannot reach USB at all: no
	// /dev/bus/usb (a container or VM without USB passthrough) or libusb
	// failed to start.
	ErrNoUSBAccess = errors.New("no access to USB on this machine")
	// ErrPermission means the device node exists but this user may not
	// open it.
	ErrPermission = errors.New("no permission to open the USB device")
	// ErrBusy means another program or a kernel driver holds the interface.
	ErrBusy = errors.New("device busy: another program (or the kernel driver) holds it")
	// ErrNotFound means the device is no longer attached where Info said.
	ErrNotFound = errors.New("device not found")
	// ErrClosed means the Device was closed.
	ErrClosed = errors.New("device closed")
)

// Error is the error every failing device call returns: what was being done,
// to which device, why it failed, and what the user can do about it.
type Error struct {
	Op     string // what was attempted, e.g. "bulk OUT transfer of 31 bytes"
	Device string // Info.String() of the device
	Kind   error  // a sentinel (this package's, usbms's, or a context error); may be nil
	Err    error  // the underlying libusb/gousb error; may be nil
	Hint   string // what the user can do; may be empty
}

func (e *Error) Error() string {
	var b strings.Builder
	b.WriteString(e.Op)
	if e.Device != "" {
		b.WriteString(" on ")
		b.WriteString(e.Device)
	}
	switch {
	case e.Kind != nil && e.Err != nil:
		fmt.Fprintf(&b, ": %v (%v)", e.Kind, e.Err)
	case e.Kind != nil:
		fmt.Fprintf(&b, ": %v", e.Kind)
	case e.Err != nil:
		fmt.Fprintf(&b, ": %v", e.Err)
	}
	if e.Hint != "" {
		b.WriteString(": ")
		b.WriteString(e.Hint)
	}
	return b.String()
}

// Unwrap exposes both the sentinel and the underlying error to errors.Is/As.
func (e *Error) Unwrap() []error {
	var errs []error
	if e.Kind != nil {
		errs = append(errs, e.Kind)
	}
	if e.Err != nil {
		errs = append(errs, e.Err)
	}
	return errs
}

// permissionHint is the advice for a device node this user cannot open.
func permissionHint(info Info) string {
	return fmt.Sprintf("no permission to open %s: run with sudo, or add a udev rule such as "+
		`SUBSYSTEM=="usb", ATTR{idVendor}=="%04x", MODE="0660", GROUP="plugdev"`, info.DevNode(), info.VID)
}
