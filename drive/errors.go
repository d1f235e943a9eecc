package drive

import (
	"context"
	"errors"

	"github.com/usbflash/usbflash/failure"
)

// Refusals and absences, each a sentinel of its class that errors.Is
// finds through an *Error, so the one table of advice can say what to do
// about each.
var (
	// ErrInUse: the system uses the target's disk (mounted, active swap,
	// held by dm-crypt, LVM or RAID). The Error's Uses say how.
	ErrInUse = failure.New(failure.Refused, "in use by the system")
	// ErrBusy: another usbflash (or another program) holds the target.
	ErrBusy = failure.New(failure.Refused, "in use by another program")
	// ErrIsImage: the target is the image, or holds the file system the
	// image lies on.
	ErrIsImage = failure.New(failure.Refused, "the target is the image")
	// ErrTooSmallImage: the image is smaller than one transfer, too small
	// to be an OS image.
	ErrTooSmallImage = failure.New(failure.Refused, "image too small to be an OS image")
	// ErrNotFound: no attached reader matches the target.
	ErrNotFound = failure.New(failure.Device, "no such reader")
	// ErrUnsupported: the reader is attached but speaks no protocol
	// usbflash can drive.
	ErrUnsupported = failure.New(failure.Device, "reader not supported")
	// ErrNoMedium: the slot is empty.
	ErrNoMedium = failure.New(failure.Device, "no medium")
)

// Use is one way the system uses a disk.
type Use int

// Uses of a disk that make it in use.
const (
	UseMounted Use = iota + 1
	UseSwap
	UseHeld // by dm-crypt, LVM or RAID
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
