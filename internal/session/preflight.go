package session

import (
	"fmt"

	"github.com/usbflash/usbflash/internal/drive"
	"github.com/usbflash/usbflash/internal/failure"
	"github.com/usbflash/usbflash/internal/image"
	"github.com/usbflash/usbflash/internal/lib/units"
)

// ErrTooSmallImage: the image is smaller than one transfer, too small to
// be an OS image.
var ErrTooSmallImage = failure.New(failure.Refused, "image too small to be an OS image")

// RefusedImageError is an image the pre-write checks refuse for what it
// is (Err: its kind, ErrTooSmallImage): nothing was written.
type RefusedImageError struct {
	Msg string // the facts
	Err error
}

func (e *RefusedImageError) Error() string { return e.Msg }
func (e *RefusedImageError) Unwrap() error { return e.Err }

// Class is Refused: the bytes may be what the user meant, and a forced
// write takes them.
func (e *RefusedImageError) Class() failure.Class { return failure.Refused }

// checkWrite runs the checks every write passes once its card is open and
// before its first byte, whatever the mode (one card, several, a
// station): what is written (the image, src) against what an OS image is,
// then the medium against it (drive.CheckWrite: write-protected, too
// small, a last block the reader cannot take). transfer is the card's
// transfer size.
func checkWrite(d *drive.Device, src *image.Source, transfer int, force bool) error {
	if err := checkImageSize(src, transfer, force); err != nil {
		return err
	}
	return drive.CheckWrite(d, src.Size, src.SizeExact)
}

// checkImageSize refuses an image smaller than one transfer: no OS image
// is that small, and what is (an error page, a checksum file, a truncated
// download) would still overwrite the card's partition table. It is a
// refusal rather than a bad image because the bytes may be exactly what
// the user meant, a boot sector or a test pattern: force writes them. Only
// a size known for a fact is judged; a stream of unknown size is judged by
// its decoder as it is read.
func checkImageSize(src *image.Source, transfer int, force bool) error {
	if force || !src.SizeExact || src.Size >= int64(transfer) {
		return nil
	}
	return &RefusedImageError{Err: ErrTooSmallImage,
		Msg: fmt.Sprintf("image is only %d bytes (%s), less than one %s transfer: too small to be an OS image; nothing was written",
			src.Size, image.Describe(src.Head()), units.FormatSize(int64(transfer)))}
}
