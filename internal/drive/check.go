package drive

import (
	"fmt"
	"strings"

	"github.com/usbflash/usbflash/internal/failure"
	"github.com/usbflash/usbflash/internal/image"
	"github.com/usbflash/usbflash/internal/lib/units"
	"github.com/usbflash/usbflash/pipeline/blockdev"
	"github.com/usbflash/usbflash/usbms"
)

// CheckOptions are what the pre-write checks need besides the device and
// the image.
type CheckOptions struct {
	// TransferSize is the write's transfer size: an image smaller than
	// one is no OS image.
	TransferSize int
	// Force writes an image smaller than one transfer all the same.
	Force bool
}

// Check runs the checks every write passes after its target is open and
// before its first byte, whatever the mode (one card, several, --watch):
// a disc image that boots only from a CD or DVD, an image too small to be
// an OS image, a write-protected medium, an
// image larger than the medium. The checks that need no open device (in
// use, locked, the image itself) ran when it was opened.
func Check(d *Device, src *image.Source, opts CheckOptions) error {
	if err := checkDisc(src, opts.Force); err != nil {
		return err
	}
	if err := checkImageSize(src, opts.TransferSize, opts.Force); err != nil {
		return err
	}
	if err := CheckWritable(d); err != nil {
		return err
	}
	// Only a size the container vouches for refuses: gzip's size trailer
	// of a damaged file can claim anything. An image whose size is found
	// by writing stops at the end of the card (blockdev.CapacityError).
	if err := blockdev.CheckFits(d.Dev, d.Name, src.Size, src.SizeExact); err != nil {
		return err
	}
	return checkLastBlock(d, src)
}

// checkLastBlock refuses an image that needs the last block of a reader
// that called that block out of range when it was opened (the count
// reported where the last address belongs): the write would fail there,
// at its very end, after every other block was written.
func checkLastBlock(d *Device, src *image.Source) error {
	s, ok := d.Dev.(SCSI)
	if !ok || !s.SCSI().LastBlockRefused() || !src.SizeExact {
		return nil
	}
	bs, blocks := int64(d.Dev.BlockSize()), s.SCSI().BlockCount()
	if src.Size <= (blocks-1)*bs {
		return nil
	}
	return &Error{class: failure.Refused, Target: d.Name, Err: usbms.ErrCapacityOffByOne,
		Msg: fmt.Sprintf("%s reports %d blocks but called block %d, the last, out of range when it was opened: %v; "+
			"the image (%d bytes) needs that block: nothing was written", d.Name, blocks, blocks-1, usbms.ErrCapacityOffByOne, src.Size)}
}

// CheckData runs Check's checks of the medium for a write of data that is
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

// checkImageSize refuses an image smaller than one transfer: no OS image
// is that small, and what is (an error page, a checksum file, a truncated
// download) would still overwrite the card's partition table. It is a
// refusal rather than a bad image because the bytes may be exactly what
// the user meant, a boot sector or a test pattern: Force writes them. Only
// a size known for a fact is judged; a stream of unknown size is judged by
// its decoder as it is read.
func checkImageSize(src *image.Source, transfer int, force bool) error {
	if force || !src.SizeExact || src.Size >= int64(transfer) {
		return nil
	}
	return &Error{class: failure.Refused, Err: ErrTooSmallImage,
		Msg: fmt.Sprintf("image is only %d bytes (%s), less than one %s transfer: too small to be an OS image; nothing was written",
			src.Size, image.Describe(src.Head()), units.FormatSize(int64(transfer)))}
}

// checkDisc refuses an optical disc image that boots only from a CD or
// DVD: a card or stick is booted from its partition table, which such an
// image lacks, so written raw it boots nothing, and the user finds out
// only at the machine to install. Force writes it all the same (a disc
// image meant to be read, not booted, or a firmware that boots El Torito
// from USB).
func checkDisc(src *image.Source, force bool) error {
	d, ok := src.Disc()
	if force || !ok || !d.BootsOnlyFromDisc() {
		return nil
	}
	what := "a disc image"
	if d.Windows() {
		what = "a Windows installer disc image"
	}
	var fs []string
	if d.ISO9660 {
		fs = append(fs, "ISO 9660")
	}
	if d.UDF {
		fs = append(fs, "UDF")
	}
	vol := ""
	if d.VolumeID != "" {
		vol = fmt.Sprintf(", volume %q", d.VolumeID)
	}
	return &Error{class: failure.Refused, Err: ErrDiscOnly,
		Msg: fmt.Sprintf("image is %s (%s%s) with an El Torito boot catalog for CD and DVD firmware and neither an MBR partition table nor a GPT: "+
			"written raw to a card or stick it boots nothing; nothing was written", what, strings.Join(fs, " and "), vol)}
}

// IsRefusal says whether err is a safety check's refusal (in use, locked,

// the image itself, too small, write-protected, too large), as opposed to
// a device that failed or a command-line mistake.
func IsRefusal(err error) bool {
	return failure.Of(err) == failure.Refused
}
