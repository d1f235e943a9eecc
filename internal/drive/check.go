package drive

import (
	"fmt"

	"github.com/usbflash/usbflash/internal/failure"
	"github.com/usbflash/usbflash/pipeline/blockdev"
	"github.com/usbflash/usbflash/usbms"
)

// CheckWrite runs the checks of the medium every write passes after its
// target is open and before its first byte, whatever the mode (one card,
// several, --watch) and whatever is written (an image, an erase's
// blocks): a write-protected medium, size bytes that do not fit on it,
// and a last block the reader called out of range when it was opened that
// they need. Only a size known for a fact (exact) refuses: gzip's size
// trailer of a damaged file can claim anything, and what is found by
// writing stops at the end of the card (blockdev.CapacityError). The
// checks that need no open device (in use, locked, the target is the
// image) ran when it was opened; what is written is checked by its writer
// (the session's preflight).
func CheckWrite(d *Device, size int64, exact bool) error {
	if err := CheckWritable(d); err != nil {
		return err
	}
	if err := blockdev.CheckFits(d.Dev, d.Name, size, exact); err != nil {
		return err
	}
	return checkLastBlock(d, size, exact)
}

// checkLastBlock refuses an image that needs the last block of a reader
// that called that block out of range when it was opened (the count
// reported where the last address belongs): the write would fail there,
// at its very end, after every other block was written.
func checkLastBlock(d *Device, size int64, exact bool) error {
	s, ok := d.Dev.(SCSI)
	if !ok || !s.SCSI().LastBlockRefused() || !exact {
		return nil
	}
	bs, blocks := int64(d.Dev.BlockSize()), s.SCSI().BlockCount()
	if size <= (blocks-1)*bs {
		return nil
	}
	return &Error{class: failure.Refused, Target: d.Name, Err: usbms.ErrCapacityOffByOne,
		Msg: fmt.Sprintf("%s reports %d blocks but called block %d, the last, out of range when it was opened: %v; "+
			"the image (%d bytes) needs that block: nothing was written", d.Name, blocks, blocks-1, usbms.ErrCapacityOffByOne, size)}
}

// CheckData runs CheckWrite's checks of the medium for a write of data that is
// no image (a benchmark's, a probe's) up to byte end: a write-protected
// medium, an end past the medium.
func CheckData(d *Device, end int64) error {
	if err := CheckWritable(d); err != nil {
		return err
	}
	return blockdev.CheckFits(d.Dev, d.Name, end, true)
}

// CheckWritable refuses a write-protected medium: the one pre-write check
// of a command that writes no image (check, restore).
func CheckWritable(d *Device) error {
	if err := blockdev.CheckWritable(d.Dev, d.Name); err != nil {
		return &Error{class: failure.Refused, Target: d.Name, Msg: err.Error(), Err: err}
	}
	return nil
}

// IsRefusal says whether err is a safety check's refusal (in use, locked,
// the image itself, too small, write-protected, too large), as opposed to
// a device that failed or a command-line mistake.
func IsRefusal(err error) bool {
	return failure.Of(err) == failure.Refused
}
