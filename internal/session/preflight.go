package session

import (
	"context"
	"fmt"
	"strings"

	"github.com/usbflash/usbflash/internal/drive"
	"github.com/usbflash/usbflash/internal/failure"
	"github.com/usbflash/usbflash/internal/image"
	"github.com/usbflash/usbflash/internal/lib/units"
)

// The pre-write checks are one sequence for every way of writing (one
// card, several, a station) and every thing written (an image, or the
// blocks of an erase or a format), in three stages, each before what it
// guards:
//
//  1. checkSettings, before anything is opened or read: the verify
//     method, the sizes against the memory bound, the customisation, the
//     report file, then whether the readers can be reached at all (each
//     way of writing says how: reach);
//  2. prepareImage, once the image is named and opened (image.Open, which
//     runs stage 1 once the image is named and before any of it is read
//     or downloaded): its block map, the announcement (Started), why it
//     cannot be trusted, what a customisation needs of it, its checksum
//     started;
//  3. checkCard, each card once it is open: the transfer size fitted, what
//     is written against the card (checkWrite), the customisation's own
//     values, the fake-capacity probe.
//
// A write of blocks that are no image (an erase's or a format's, made for
// each card once it is open) runs stage 1 (checkSettings, nothing read
// ahead) and stage 3 (checkCard, with the card's own blocks as its source)
// and has no image (s.img nil: checked against nothing, read again by no
// one). A verify, a repair and a customisation in place run the parts
// that concern them: the sizes, fitCard, drive.CheckWritable.

// writeShape is what the checks need to know of how a session writes.
type writeShape struct {
	// cards are written from one decode at once, lag transfers apart.
	cards, lag int
	how        image.Reads
	// many: several cards, or a station: a block map is not used.
	many    bool
	targets []string // as given; none for a station
	watch   bool
	// reach says whether the readers can be reached at all (a reader
	// this user may not open, readers that cannot be listed), before
	// anything is read or downloaded.
	reach func(context.Context) error
}

// checkSettings is stage 1: the settings of a write, checked before
// anything is opened or read; ahead is what the image's download holds
// ahead of its decoder (0 for a file).
func (s *session) checkSettings(ctx context.Context, sh writeShape, ahead int64) error {
	cfg := s.cfg
	if err := cfg.Engine.VerifyMethod.CheckWrite(); err != nil {
		return err
	}
	if err := checkSizes(s.transfer, cfg.Engine.Buffers, sh.lag, sh.cards, ahead); err != nil {
		return err
	}
	if err := checkCustomize(&cfg); err != nil {
		return err
	}
	if sh.reach == nil {
		return nil
	}
	return sh.reach(ctx)
}

// prepareImage is stages 1 and 2 of a write of an image: the image
// opened (read as sh.how says) once the settings passed, its block map
// found (a plan of one card reads the bytes a customisation looked at
// first: plan.head), announced, trusted or refused, what a customisation
// needs found in it, and its checksum started. On an error nothing is
// left open.
func (s *session) prepareImage(ctx context.Context, sh writeShape) (*image.Opened, *writePlan, error) {
	img, err := s.openImage(ctx, sh.how, func(img *image.Opened) error { return s.checkSettings(ctx, sh, img.ReadAhead()) })
	if err != nil {
		return nil, nil, err
	}
	plan, err := s.announce(ctx, img, sh)
	if err != nil {
		img.Close()
		return nil, nil, err
	}
	s.startCheck(ctx, img, img.Source, "as it is written")
	return img, plan, nil
}

// announce is stage 2 once the image is open.
func (s *session) announce(ctx context.Context, img *image.Opened, sh writeShape) (*writePlan, error) {
	cfg := s.cfg
	src := img.Source
	plan, err := s.planWrite(ctx, img, cfg.Engine.BlockMap, sh.many)
	if err != nil {
		return nil, err
	}
	lag := cfg.Engine.Lag
	if sh.watch {
		lag = 0
	}
	s.emit(Started{Image: image.Shown(cfg.Image.Path), Source: src, Targets: sh.targets, TransferSize: s.transfer,
		Buffers: buffersFor(s.transfer, cfg.Engine.Buffers), Lag: lag, Watch: sh.watch})
	if src.Spooled != "" {
		s.emit(Note{Message: "The 7z archive was copied to a temporary file (" + src.Spooled + ", removed) before it was decoded: its header is at its end"})
	}
	if err := s.trust(img, plan); err != nil {
		return nil, err
	}
	head, err := s.inspectImage(src)
	if err != nil {
		return nil, err
	}
	if !sh.watch {
		// A station's cards each read their own source: the first bytes
		// read to decide are not written.
		plan.head = head
	}
	return plan, nil
}

// fitCard says a card is open (Opened, under the name every later event
// uses) and fits the transfer size asked to it, with a note when it
// changed: the one place a session's transfer size meets a card.
func (s *session) fitCard(d *drive.Device, transfer int) int {
	fit := fitTransfer(d, transfer)
	s.emit(Opened{Card: d.Name, Capacity: d.Capacity(), BlockSize: d.Dev.BlockSize(), TransferSize: fit.Size, Transport: transportOf(d)})
	if note := fit.Note(d.Name); note != "" {
		s.emit(Note{Card: d.Name, Message: note})
	}
	return fit.Size
}

// checkCard is stage 3: a card that opened, described and checked before
// its first byte (with Config.Check, probed for a fake capacity too); the
// card's error says why it may not be written.
func (s *session) checkCard(ctx context.Context, c *card, src *image.Source) {
	d := c.d
	c.out.Target, c.out.Capacity, c.out.Serial = d.Name, d.Capacity(), readerSerial(d)
	c.transfer = s.fitCard(d, s.transfer)
	c.out.Identity = identityOf(d, c.transfer)
	c.fail(checkWrite(d, src, c.transfer, s.cfg.Targets.Force))
	s.customizeFor(c)
	if s.cfg.Targets.Check != nil && !c.failed() {
		s.checkFake(ctx, c, src)
	}
}

var (
	// ErrTooSmallImage: the image is smaller than one transfer, too small
	// to be an OS image.
	ErrTooSmallImage = failure.New(failure.Refused, "image too small to be an OS image")
	// ErrDiscOnly: the image is an optical disc image (ISO 9660 or UDF)
	// that boots only from a CD or DVD (an El Torito boot catalog, no MBR
	// partition table or GPT): a Windows installer ISO, for one. Written
	// raw to a card or stick it boots nothing.
	ErrDiscOnly = failure.New(failure.Refused, "a disc image that boots only from a CD or DVD")
)

// RefusedImageError is an image the pre-write checks refuse for what it
// is (Err: its kind, ErrDiscOnly or ErrTooSmallImage): nothing was
// written.
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
// station): what is written (the image, src) against what an OS image is
// (a disc image that boots only from a CD or DVD, an image too small to
// be one), then the medium against it (drive.CheckWrite: write-protected,
// too small, a last block the reader cannot take). transfer is the card's
// transfer size.
func checkWrite(d *drive.Device, src *image.Source, transfer int, force bool) error {
	if err := checkDisc(src, force); err != nil {
		return err
	}
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

// checkDisc refuses an optical disc image that boots only from a CD or
// DVD: a card or stick is booted from its partition table, which such an
// image lacks, so written raw it boots nothing, and the user finds out
// only at the machine to install. force writes it all the same (a disc
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
	return &RefusedImageError{Err: ErrDiscOnly,
		Msg: fmt.Sprintf("image is %s (%s%s) with an El Torito boot catalog for CD and DVD firmware and neither an MBR partition table nor a GPT: "+
			"written raw to a card or stick it boots nothing; nothing was written", what, strings.Join(fs, " and "), vol)}
}
