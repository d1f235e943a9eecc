package imagesrc

import (
	"usbflash/xzdec"

	"errors"
	"fmt"
	"io"

	"usbflash/internal/units"
)

// Error reports an image that cannot be written as it is: a damaged or
// incomplete archive (the decoder found data it cannot decode, or the data
// ended early), a file whose bytes are not what its name says, or an image
// that changed while it was read. Damage always carries where it happened, so
// the user can tell a short download (truncated near the end) from a damaged
// one.
type Error struct {
	// Problem says which of the above this is; the zero value is damage.
	Problem Problem
	// Format is the container being decoded or, for NotNamedFormat, the
	// one the file name promises.
	Format Format
	// Offset is how far into the compressed input the decoder had read.
	// Decoders read ahead, so the damage is at or before this byte.
	Offset int64
	// Decoded is how many image bytes had been produced.
	Decoded int64
	// Truncated is set when the input ended before the archive did.
	Truncated bool
	Err       error
}

// Problem is the kind of trouble an Error reports.
type Problem int

const (
	// Damaged: the archive's data cannot be decoded or ends early.
	Damaged Problem = iota
	// NotNamedFormat: the file name promises a container (.xz, .gz, .zip)
	// and the bytes are something else, typically an error page saved
	// under the image's name. Written raw it would destroy the card's
	// partition table for nothing.
	NotNamedFormat
	// Changed: the image file was modified, replaced or resized while it
	// was read, so what was written (and hashed) is not one image.
	Changed
	// Unreadable: the input itself failed (a failing disk, a dropped
	// network share), not the archive's data.
	Unreadable
)

func (e *Error) Error() string {
	cause := "unknown error"
	if e.Err != nil {
		cause = e.Err.Error()
	}
	switch e.Problem {
	case NotNamedFormat, Changed, Unreadable:
		return cause
	}
	if e.Truncated {
		return fmt.Sprintf("%s: truncated: input ends at compressed byte %d (after %s decoded): %s; "+
			"the file is incomplete: download it again and compare its checksum",
			e.Format, e.Offset, units.FormatSize(e.Decoded), cause)
	}
	return fmt.Sprintf("%s: corrupt data at compressed byte %d (after %s decoded): %s; "+
		"the file is damaged: download it again and compare its checksum",
		e.Format, e.Offset, units.FormatSize(e.Decoded), cause)
}

func (e *Error) Unwrap() error { return e.Err }

// isTruncation reports whether a decoder error means the input ran out.
// Decoders say so with io.ErrUnexpectedEOF, sometimes wrapped.
func isTruncation(err error) bool {
	return errors.Is(err, io.ErrUnexpectedEOF) || errors.Is(err, xzdec.ErrTruncated)
}

// errDecodedShort is the cause when a decoder reports a clean end but
// produced fewer bytes than the container declared.
var errDecodedShort = errors.New("data ended before the size the archive declares")

// errDecodedLong is the cause when a decoder produced more bytes than the
// container declared.
var errDecodedLong = errors.New("data continues past the size the archive declares")
