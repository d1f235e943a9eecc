package blockdev

import (
	"fmt"

	"github.com/usbflash/usbflash/internal/failure"
	"github.com/usbflash/usbflash/internal/lib/units"
)

// The facts of a device that every user of it checks the same way: the
// engine, a group of cards, the reader benchmark and the pre-write checks.

// MaxBufferMemory bounds what any command may allocate for the buffers
// of its transfers: a write's or verify's ring ((buffers + 2) x transfer
// size, the two being the held first transfer and the zero buffer), a
// benchmark's largest transfer. Past it the settings are refused up front
// rather than letting the runtime die out of memory.
const MaxBufferMemory = 1 << 30

// CapacityError says the image does not fit on the medium. When the image
// size was known up front nothing was written (Written is 0); when it was
// not, the write stopped at the end of the medium with Written bytes written
// and nothing past it, the first transfer left zeroed.
type CapacityError struct {
	Device    string
	ImageSize int64 // bytes; -1 when unknown and only found to be larger while writing
	Capacity  int64 // bytes the medium holds
	Written   int64 // image bytes written before stopping (0 when refused up front)
}

func (e *CapacityError) Error() string {
	if e.Written == 0 && e.ImageSize >= 0 {
		image, capacity, _ := units.FormatBytesPair(e.ImageSize, e.Capacity)
		return fmt.Sprintf("image is %s but %s holds %s; nothing was written", image, e.Device, capacity)
	}
	return fmt.Sprintf("image is larger than %s (%s): stopped at its end after writing %s, "+
		"with the first transfer left zeroed so the card does not boot a truncated image",
		e.Device, units.FormatBytes(e.Capacity), units.FormatBytes(e.Written))
}

// Class is Refused: the image does not fit, nothing failed (also when
// the end of the card was found by writing to it).
func (e *CapacityError) Class() failure.Class { return failure.Refused }

// CheckFits refuses, before anything is written or read, an image of size
// bytes that cannot fit on dev, with a *CapacityError naming the device
// (name, or the device's own). Only an exact size refuses: a size that is a
// hint (gzip's ISIZE trailer, which a truncated or padded file makes up) or
// unknown (-1) passes, and a write then stops at the end of the medium.
func CheckFits(dev Device, name string, size int64, exact bool) error {
	if !exact || size < 0 {
		return nil
	}
	if c := Capacity(dev); size > c {
		return &CapacityError{Device: Name(dev, name), ImageSize: size, Capacity: c}
	}
	return nil
}

// CheckWritable refuses, before anything is written, a device whose medium
// says it is write-protected, with an error naming the device (name, or
// the device's own) that wraps ErrWriteProtected. A device that cannot
// tell passes.
func CheckWritable(dev Device, name string) error {
	if wp, ok := dev.(WriteProtector); ok && wp.WriteProtected() {
		return fmt.Errorf("%s is %w; nothing was written", Name(dev, name), ErrWriteProtected)
	}
	return nil
}
