package usbdev

import (
	"fmt"
	"strings"

	"github.com/usbflash/usbflash/internal/failure"
	"github.com/usbflash/usbflash/internal/lib/linuxdisk"
)

// Sentinel errors, matched with errors.Is. A backend's failing calls
// return an *Error that wraps one of these (or usbms.ErrStall, or a
// context error) together with the system's own error. They state what
// happened; what the user can do about it is the CLI's to say, chosen by
// kind.
var (
	// ErrNoUSBSupport is returned by every call of a build without a USB
	// backend: -tags nousb, or libusb's without cgo.
	ErrNoUSBSupport = failure.New(failure.Device, "this usbflash was built without a USB backend")
	// ErrNoUSBAccess means this process cannot reach USB at all: no
	// /dev/bus/usb (a container or VM without USB passthrough) or libusb
	// failed to start.
	ErrNoUSBAccess = failure.New(failure.Device, "no access to USB on this machine")
	// ErrPermission means the device node exists but this user may not
	// open it. The *Error carries the device's VID and node.
	ErrPermission = failure.New(failure.Device, "no permission to open the USB device")
	// ErrBusy means another program or a kernel driver holds the interface.
	ErrBusy = failure.New(failure.Device, "device busy: another program (or the kernel driver) holds it")
	// ErrNotFound means the device is no longer attached where Info said:
	// it was unplugged or re-enumerated.
	ErrNotFound = failure.New(failure.Device, "device not found")
	// ErrNoStreams means UAS was asked of a host controller without
	// scatter-gather, or at SuperSpeed without bulk streams: Linux's uas
	// refuses such a controller too.
	ErrNoStreams = failure.New(failure.Device, "the host controller gives UAS no scatter-gather, or no bulk streams at SuperSpeed")
	// ErrDeviceChanged means a different device (another serial number)
	// is at the device's port. It matches ErrNotFound too.
	ErrDeviceChanged error = &kindError{"a different device is at its port", ErrNotFound}
	// ErrDescriptorsChanged means the device's descriptors no longer have
	// the configuration, interface or endpoints Info names: it changed
	// since it was listed.
	ErrDescriptorsChanged = failure.New(failure.Device, "the device's descriptors changed since it was listed")
	// ErrReenumerationLost means the device did not come back at its port
	// after a port reset made it re-enumerate, so it cannot be used any
	// more. It matches ErrNoDevice too.
	ErrReenumerationLost error = &kindError{"the device did not come back after a port reset", ErrNoDevice}
	// ErrNoMemory means the kernel refused memory for transfers: on Linux,
	// usbfs bounds the memory of all transfers in flight
	// (/sys/module/usbcore/parameters/usbfs_memory_mb, 16 MiB by default).
	ErrNoMemory = failure.New(failure.Device, "the kernel refused memory for the transfer (usbfs_memory_mb limit)")
	// ErrOverflow means the device sent more data than was asked for; the
	// state of its command is unknown.
	ErrOverflow = failure.New(failure.Device, "the device sent more data than was asked for")
	// ErrNoLibusb means libusb-1.0, which the backend that loads it at
	// run time needs, is not installed where it was looked for, or is
	// older than 1.0.16. It matches ErrNoUSBAccess too: without it this
	// process cannot reach USB, and sim: and file: targets still work.
	ErrNoLibusb error = &kindError{"libusb-1.0 could not be loaded", ErrNoUSBAccess}
	// ErrSystemDriver means the operating system's own mass-storage
	// driver holds the reader and this process may not take it: on macOS
	// capturing a device from it needs root (or an entitlement a
	// command-line tool cannot hold); on Windows libusb drives only a
	// device bound to WinUSB. The *Error's Err says which.
	ErrSystemDriver = failure.New(failure.Device, "the system's mass-storage driver holds the reader")
	// ErrListFailed means libusb could not read the list of devices.
	ErrListFailed = failure.New(failure.Device, "libusb could not read the device list")
	// ErrReattachFailed means the kernel driver could not take the
	// interface back on Close: its block device (/dev/sdX) stays away.
	ErrReattachFailed = failure.New(failure.Device, "the kernel driver did not take the interface back")
	// ErrInUse means a disk the kernel made from the device's interface
	// is mounted, swapped on or held (dm, md), so claiming it would pull
	// the disk from under the system: Open refused, with an *InUseError
	// naming the uses. It is the one a file: block device gives too
	// (filedev.ErrInUse): a refusal.
	ErrInUse = linuxdisk.ErrInUse
	// ErrInUseUnknown means the check whether the device's kernel disk is
	// mounted or held could not be made; the device was not opened. It is
	// the kernel view's own (linuxdisk), the one a file: block device
	// gives too: a refusal, and not ErrInUse.
	ErrInUseUnknown = linuxdisk.ErrInUseUnknown
	// ErrClosed means the Device was closed.
	ErrClosed = failure.New(failure.Device, "device closed")
	// ErrNoDevice means the device is gone (unplugged or re-enumerated).
	// usbms's endpoint seam reports it under the same name.
	ErrNoDevice = failure.New(failure.Device, "device disconnected")
)

// kindError is a sentinel that also matches a broader one.
type kindError struct {
	msg   string
	broad error
}

func (k *kindError) Error() string        { return k.msg }
func (k *kindError) Unwrap() error        { return k.broad }
func (k *kindError) Class() failure.Class { return failure.Of(k.broad) }

// Error is the error every failing device call returns: what was being
// done, to which device, and why it failed, with the facts about the device
// that advice needs as fields. It states facts only.
type Error struct {
	Op     string // what was attempted, e.g. "bulk OUT transfer of 31 bytes"
	Device string // Info.String() of the device
	Kind   error  // a sentinel (this package's, usbms's, or a context error); may be nil
	Err    error  // the backend's underlying error (errno, libusb code), or the facts of the failure; may be nil

	VID     uint16 // the device's vendor ID (a udev rule names it); 0 when unknown
	Port    string // the device's port path, e.g. "1-2.3"; "" when unknown
	DevNode string // the usbfs node, e.g. /dev/bus/usb/001/005; "" when unknown
}

// NewError is an *Error about the device info describes, with the facts
// of it that advice needs.
func NewError(op string, info Info, kind, err error) *Error {
	e := &Error{Op: op, Device: info.String(), Kind: kind, Err: err,
		VID: info.VID, Port: info.PortPath}
	if info.Bus != 0 || info.Address != 0 {
		e.DevNode = info.DevNode()
	}
	return e
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
	return b.String()
}

// Class is that of its kind (a cancellation is Interrupted), else Device.
func (e *Error) Class() failure.Class {
	if c := failure.Of(e.Kind); c != failure.Unknown {
		return c
	}
	return failure.Within(failure.Device, e.Err)
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
