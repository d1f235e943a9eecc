package image

import (
	"github.com/usbflash/usbflash/internal/failure"
	"github.com/usbflash/usbflash/internal/image/xzdec"

	"errors"
	"fmt"
	"io"

	"github.com/usbflash/usbflash/internal/lib/units"
)

// Error reports an image that cannot be written as it is: a damaged or
// incomplete archive (the decoder found data it cannot decode, or the data
// ended early), a file whose bytes are not what its name says, a container
// or archive feature usbflash does not decode, an input that holds no
// image, or an image that changed or could not be read while it was read.
// Damage always carries where it happened, so a short download (truncated
// near the end) can be told from a damaged one. Error states facts; what to
// do about each Kind is for the program's user interface to say.
type Error struct {
	// Kind says which of the above this is: one of Kinds.
	Kind error
	// Format is the container being decoded or, for NotNamedFormat, the
	// one the file name promises.
	Format Format
	// Container names a container usbflash recognises but does not decode
	// (one of UnsupportedContainers), for Unsupported, for NotAnImage when
	// the archive holds one, and for NotNamedFormat when the file name
	// promises one (.7z, .lzma); "" otherwise.
	Container string
	// Feature names what the archive uses that usbflash does not decode,
	// for UnsupportedFeature: "the RISC-V BCJ filter (ID 0xb)", "a
	// dictionary (ID 7)"; "" otherwise.
	Feature string
	// Offset is where in the compressed input the decoder found the
	// trouble: for damage, how far it had consumed the input when the data
	// stopped making sense, so the damage is at or before this byte (a
	// checksum catches it only at the end of what it covers); for
	// truncation, where the input ends; for trailing data, where it starts.
	Offset int64
	// Decoded is how many image bytes had been produced.
	Decoded int64
	Err     error
}

// Kinds of Error: the kinds of trouble it reports, each a sentinel of
// class Image that errors.Is finds through it.
var (
	// ErrDamaged: the archive's data cannot be decoded.
	ErrDamaged = failure.New(failure.Image, "damaged")
	// ErrTruncated: the input ended before the archive did.
	ErrTruncated = failure.New(failure.Image, "truncated")
	// ErrNotNamedFormat: the file name promises a container (.xz, .gz, .zip,
	// .7z, .lzma: any of the formats or UnsupportedContainers) and the
	// bytes are something else, typically an error page saved
	// under the image's name. Written raw it would destroy the card's
	// partition table for nothing.
	ErrNotNamedFormat = failure.New(failure.Image, "not the named format")
	// ErrChanged: the image file was modified, replaced or resized while it
	// was read, so what was written (and hashed) is not one image.
	ErrChanged = failure.New(failure.Image, "changed")
	// ErrUnreadable: the input itself failed (a failing disk, a dropped
	// network share), not the archive's data.
	ErrUnreadable = failure.New(failure.Image, "unreadable")
	// ErrUnsupported: the data is a container usbflash recognises but does not
	// decode (Container names it: a 7z archive, a qcow2 disk image).
	ErrUnsupported = failure.New(failure.Image, "unsupported container")
	// ErrNotAnImage: the archive (Format) decodes to another container, not a
	// disk image: compressed data, or the container Container names.
	ErrNotAnImage = failure.New(failure.Image, "not an image")
	// ErrEmpty: there is no image data at all: an empty file, an archive that
	// decodes to nothing, a zip of directories and metadata only.
	ErrEmpty = failure.New(failure.Image, "empty")
	// ErrUnsupportedEntry: the zip entry holding the image is encrypted or
	// uses a compression method usbflash does not decode.
	ErrUnsupportedEntry = failure.New(failure.Image, "unsupported zip entry")
	// ErrAmbiguous: the zip holds several entries that could be the image.
	ErrAmbiguous = failure.New(failure.Image, "ambiguous")
	// ErrNeedsFile: a zip was given as a stream; its directory is at the end
	// of the file, which a stream cannot seek to.
	ErrNeedsFile = failure.New(failure.Image, "needs a file")
	// ErrUnsupportedFeature: the archive is of a format usbflash decodes but
	// uses something in it usbflash does not (Feature names it): an xz
	// filter or integrity check it lacks, a zstd frame that needs a
	// dictionary or a larger window than it allows. The file is not
	// damaged; the format's own tool decodes it.
	ErrUnsupportedFeature = failure.New(failure.Image, "unsupported feature")
	// ErrStatedSize: the image decodes, whole and as its container checks
	// it, to another size than the one stated for it from outside the file
	// (Source.ExpectSize: a catalog's entry): the statement, or the file
	// at its place, is not the image's; nothing says the archive is
	// damaged.
	ErrStatedSize = failure.New(failure.Image, "not the stated size")
)

// Kinds lists every kind of Error, for tables keyed by them.
func Kinds() []error {
	return []error{ErrDamaged, ErrTruncated, ErrNotNamedFormat, ErrChanged, ErrUnreadable, ErrUnsupported,
		ErrNotAnImage, ErrEmpty, ErrUnsupportedEntry, ErrAmbiguous, ErrNeedsFile, ErrUnsupportedFeature, ErrStatedSize}
}

func (e *Error) Error() string {
	cause := "unknown error"
	if e.Err != nil {
		cause = e.Err.Error()
	}
	switch e.Kind {
	case ErrDamaged:
		return fmt.Sprintf("%s: corrupt data, found at compressed byte %d (after %s decoded): %s",
			e.Format, e.Offset, units.FormatSize(e.Decoded), cause)
	case ErrTruncated:
		return fmt.Sprintf("%s: truncated: input ends at compressed byte %d (after %s decoded): %s",
			e.Format, e.Offset, units.FormatSize(e.Decoded), cause)
	case ErrUnsupportedFeature:
		return fmt.Sprintf("%s: the image uses %s, which usbflash does not decode (at compressed byte %d)",
			e.Format, e.Feature, e.Offset)
	}
	return cause
}

// Class is the cause's when it says one (a cancellation is Interrupted),
// else Image.
func (e *Error) Class() failure.Class { return failure.Within(failure.Image, e.Err) }

func (e *Error) Unwrap() error { return e.Err }

// Is makes errors.Is find the error's kind.
func (e *Error) Is(target error) bool { return target == e.Kind }

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
