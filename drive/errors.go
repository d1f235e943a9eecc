package drive

import "errors"

// Kind sorts the errors of this package by what the caller must do about
// them: a command-line mistake, a refusal by a safety check, or a device
// that failed or is not there.
type Kind int

// Kinds of Error.
const (
	// KindUsage: the command line names no usable target (its syntax, a
	// slot that does not exist, a reader it matches several times, a path
	// that cannot be a target).
	KindUsage Kind = iota + 1
	// KindRefused: a safety check refused the target; nothing was written.
	KindRefused
	// KindDevice: the reader, the card or the file failed, or is absent.
	KindDevice
)

// Refusals, each a sentinel errors.Is finds through an *Error, so the one
// table of advice can say what to do about each.
var (
	// ErrInUse: the system uses the target's disk (mounted, active swap,
	// held by dm-crypt, LVM or RAID). The Error's Uses say how.
	ErrInUse = errors.New("in use by the system")
	// ErrBusy: another usbflash (or another program) holds the target.
	ErrBusy = errors.New("in use by another program")
	// ErrIsImage: the target is the image, or holds the file system the
	// image lies on.
	ErrIsImage = errors.New("the target is the image")
	// ErrTooSmallImage: the image is smaller than one transfer, too small
	// to be an OS image.
	ErrTooSmallImage = errors.New("image too small to be an OS image")
	// ErrNotFound: no attached reader matches the target.
	ErrNotFound = errors.New("no such reader")
	// ErrUnsupported: the reader is attached but speaks no protocol
	// usbflash can drive.
	ErrUnsupported = errors.New("reader not supported")
	// ErrNoMedium: the slot is empty.
	ErrNoMedium = errors.New("no medium")
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
// from Kind, the sentinel it wraps and Uses.
type Error struct {
	Kind   Kind
	Target string // the target as the user gave it, or as it was named once open
	Msg    string // the facts, naming the target
	Uses   []Use  // with ErrInUse: how the system uses the disk
	Err    error  // the sentinel or the underlying error; may be nil
}

func (e *Error) Error() string { return e.Msg }
func (e *Error) Unwrap() error { return e.Err }

// KindOf is err's Kind, or 0 when err is no *Error.
func KindOf(err error) Kind {
	var e *Error
	if errors.As(err, &e) {
		return e.Kind
	}
	return 0
}

func usageErr(target, msg string) *Error {
	return &Error{Kind: KindUsage, Target: target, Msg: msg}
}
