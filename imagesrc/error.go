package imagesrc

import (
	"github.com/usbflash/usbflash/failure"
	"github.com/usbflash/usbflash/xzdec"

	"errors"
	"fmt"
	"io"

	"github.com/usbflash/usbflash/internal/units"
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
	// Kind says which of the above this is; the zero value is damage.
	Kind Kind
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

// Kind is the kind of trouble an Error reports.
type Kind int

const (
	// Damaged: the archive's data cannot be decoded.
	Damaged Kind = iota
	// Truncated: the input ended before the archive did.
	Truncated
	// NotNamedFormat: the file name promises a container (.xz, .gz, .zip,
	// .7z, .lzma: any of the formats or UnsupportedContainers) and the
	// bytes are something else, typically an error page saved
	// under the image's name. Written raw it would destroy the card's
	// partition table for nothing.
	NotNamedFormat
	// Changed: the image file was modified, replaced or resized while it
	// was read, so what was written (and hashed) is not one image.
	Changed
	// Unreadable: the input itself failed (a failing disk, a dropped
	// network share), not the archive's data.
	Unreadable
	// Unsupported: the data is a container usbflash recognises but does not
	// decode (Container names it: a 7z archive, a qcow2 disk image).
	Unsupported
	// NotAnImage: the archive (Format) decodes to another container, not a
	// disk image: compressed data, or the container Container names.
	NotAnImage
	// Empty: there is no image data at all: an empty file, an archive that
	// decodes to nothing, a zip of directories and metadata only.
	Empty
	// UnsupportedEntry: the zip entry holding the image is encrypted or
	// uses a compression method usbflash does not decode.
	UnsupportedEntry
	// Ambiguous: the zip holds several entries that could be the image.
	Ambiguous
	// NeedsFile: a zip was given as a stream; its directory is at the end
	// of the file, which a stream cannot seek to.
	NeedsFile
	// UnsupportedFeature: the archive is of a format usbflash decodes but
	// uses something in it usbflash does not (Feature names it): an xz
	// filter or integrity check it lacks, a zstd frame that needs a
	// dictionary or a larger window than it allows. The file is not
	// damaged; the format's own tool decodes it.
	UnsupportedFeature
)

var kindNames = [...]string{
	Damaged: "damaged", Truncated: "truncated", NotNamedFormat: "not the named format",
	Changed: "changed", Unreadable: "unreadable", Unsupported: "unsupported container",
	NotAnImage: "not an image", Empty: "empty", UnsupportedEntry: "unsupported zip entry",
	Ambiguous: "ambiguous", NeedsFile: "needs a file", UnsupportedFeature: "unsupported feature",
}

func (k Kind) String() string {
	if k >= 0 && int(k) < len(kindNames) {
		return kindNames[k]
	}
	return fmt.Sprintf("Kind(%d)", int(k))
}

// Kinds lists every Kind, for tables keyed by them.
func Kinds() []Kind {
	ks := make([]Kind, len(kindNames))
	for i := range ks {
		ks[i] = Kind(i)
	}
	return ks
}

func (e *Error) Error() string {
	cause := "unknown error"
	if e.Err != nil {
		cause = e.Err.Error()
	}
	switch e.Kind {
	case Damaged:
		return fmt.Sprintf("%s: corrupt data, found at compressed byte %d (after %s decoded): %s",
			e.Format, e.Offset, units.FormatSize(e.Decoded), cause)
	case Truncated:
		return fmt.Sprintf("%s: truncated: input ends at compressed byte %d (after %s decoded): %s",
			e.Format, e.Offset, units.FormatSize(e.Decoded), cause)
	case UnsupportedFeature:
		return fmt.Sprintf("%s: the image uses %s, which usbflash does not decode (at compressed byte %d)",
			e.Format, e.Feature, e.Offset)
	}
	return cause
}

// Class is the cause's when it says one (a cancellation is Interrupted),
// else Image.
func (e *Error) Class() failure.Class { return failure.Within(failure.Image, e.Err) }

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
