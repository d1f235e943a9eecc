package drive

import (
	"context"
	"errors"

	"github.com/usbflash/usbflash/internal/failure"
	"github.com/usbflash/usbflash/internal/lib/linuxdisk"
)

// Refusals and absences, each a sentinel of its class that errors.Is
// finds through an *Error, so the one table of advice can say what to do
// about each.
var (
	// ErrInUse: the system uses the target's disk (mounted, active swap,
	// held by dm-crypt, LVM or RAID). The Error's Uses say how. It is the
	// kernel view's own (linuxdisk), so there is one "in use" to ask for.
	ErrInUse = linuxdisk.ErrInUse
	// ErrInUseUnknown: whether the system uses the target's disk could not
	// be read (no mount table, sysfs unreadable), for a usb: reader's
	// disks and a file: block device alike. Not a use: ErrInUse does not
	// match it. The target was not taken; a forced open skips the check.
	ErrInUseUnknown = linuxdisk.ErrInUseUnknown
	// ErrBusy: another usbflash (or another program) holds the target.
	ErrBusy = failure.New(failure.Refused, "in use by another program")
	// ErrIsImage: the target is the image, or holds the file system the
	// image lies on.
	ErrIsImage = failure.New(failure.Refused, "the target is the image")
	// ErrNotFound: no attached reader matches the target.
	ErrNotFound = failure.New(failure.Device, "no such reader")
	// ErrUnsupported: the reader is attached but speaks no protocol
	// usbflash can drive.
	ErrUnsupported = failure.New(failure.Device, "reader not supported")
	// ErrNoMedium: the slot is empty.
	ErrNoMedium = failure.New(failure.Device, "no medium")
	// ErrSystemDisk: the disk: target holds the running system's
	// volume (the boot disk, the Windows directory's, the root
	// filesystem's). Not even a forced write takes it.
	ErrSystemDisk = failure.New(failure.Refused, "the system's disk")
	// ErrInternalDisk: the disk: target is a fixed disk inside the
	// computer, which holds no card; a forced write takes it.
	ErrInternalDisk = failure.New(failure.Refused, "an internal disk")
	// ErrOneMedium: the LUN chosen answers for the same medium as a
	// lower one: the reader ignores the LUN field (Linux's SINGLE_LUN
	// readers), and what is written through it lands on the other's card.
	ErrOneMedium = failure.New(failure.Refused, "two LUNs answer for one medium")
)

// Usage kinds, each a sentinel errors.Is finds through an *Error of class
// Usage: the command line's mistakes the advice table has words for.
var (
	// ErrPath: the target is a path, not one of the target forms.
	ErrPath = failure.New(failure.Usage, "a path, not a target")
	// ErrAmbiguous: the target matches several attached readers.
	ErrAmbiguous = failure.New(failure.Usage, "matches several readers")
	// ErrSameReader: two targets name the same reader without a slot.
	ErrSameReader = failure.New(failure.Usage, "the same reader twice")
	// ErrWhichSlot: the target names a reader of several slots, more or
	// fewer than one of which holds a card.
	ErrWhichSlot = failure.New(failure.Usage, "a slot is to be chosen")
	// ErrNeedsSize: a file target to be made, and no size to make it.
	ErrNeedsSize = failure.New(failure.Usage, "no size to create the file with")
	// ErrNotADisk: a disk: target that names no disk (a regular file,
	// a directory, a path of no disk node of this system).
	ErrNotADisk = failure.New(failure.Usage, "not a disk")
	// ErrNotWholeDisk: a disk: target that names a partition.
	ErrNotWholeDisk = failure.New(failure.Usage, "not a whole disk")
	// ErrDiskUnsupported: disk: targets on a system usbflash cannot open
	// a disk on (the BSDs).
	ErrDiskUnsupported = failure.New(failure.Usage, "no disk: targets on this system")
	// ErrNotUSB: a kernel disk was asked of a target that is no usb:
	// reader.
	ErrNotUSB = failure.New(failure.Usage, "not a usb: reader")
	// ErrNoKernelDisk: the kernel has no disk for the reader.
	ErrNoKernelDisk = failure.New(failure.Usage, "no kernel disk")
	// ErrKernelDisks: the reader has several kernel disks and the target
	// names no slot.
	ErrKernelDisks = failure.New(failure.Usage, "several kernel disks")
)

// SettingKernelDisk is the setting that asks for a reader's kernel disk
// (KernelDiskNode): an error about it is a SettingError naming it.
const SettingKernelDisk failure.Setting = "kernel disk"

// Use is one way the system uses a disk.
type Use int

// Uses of a disk that make it in use.
const (
	UseMounted Use = iota + 1
	UseSwap
	UseHeld // by dm-crypt, LVM or RAID
	// UseOpenFiles: a volume on the disk would not be unmounted or
	// locked, because a program has files open on it (macOS's
	// dissenter, Windows's refused lock).
	UseOpenFiles
)

// Error is a target that could not be opened or may not be written. Its
// text states the facts; what to do about them is the caller's to say,
// from its class, the sentinel it wraps and Uses.
type Error struct {
	// class: Usage when the command line names no usable target (its
	// syntax, a slot that does not exist, a reader it matches several
	// times, a path that cannot be a target); Refused when a safety check
	// refused the target (nothing was written); Device when the reader,
	// the card or the file failed, or is absent.
	class  failure.Class
	Target string // the target as the user gave it, or as it was named once open
	Msg    string // the facts, naming the target
	Uses   []Use  // with ErrInUse: how the system uses the disk
	Err    error  // the sentinel or the underlying error; may be nil
}

func (e *Error) Error() string { return e.Msg }
func (e *Error) Unwrap() error { return e.Err }

// Class is the error's class (when this package gave none, its
// sentinel's); a cancellation under it is Interrupted.
func (e *Error) Class() failure.Class {
	switch {
	case errors.Is(e.Err, context.Canceled):
		return failure.Interrupted
	case e.class != failure.Unknown:
		return e.class
	}
	return failure.Of(e.Err)
}

func usageErr(target, msg string) *Error {
	return &Error{class: failure.Usage, Target: target, Msg: msg}
}

// usageKind is a usage error of a kind the caller may advise on.
func usageKind(target string, kind error, msg string) *Error {
	return &Error{class: failure.Usage, Target: target, Msg: msg, Err: kind}
}
