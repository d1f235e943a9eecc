package session

import (
	"context"
	"errors"
	"fmt"
	"io"

	"github.com/usbflash/usbflash/internal/customize"
	"github.com/usbflash/usbflash/internal/drive"
	"github.com/usbflash/usbflash/internal/failure"
	"github.com/usbflash/usbflash/internal/image"
	"github.com/usbflash/usbflash/internal/lib/aligned"
	"github.com/usbflash/usbflash/pipeline"
	"github.com/usbflash/usbflash/pipeline/blockdev"
	"github.com/usbflash/usbflash/pipeline/fanout"
)

// A customised write changes the boot partition's files after the
// stream, through the card's own block device (pipeline.Edit over the
// LUN, never a mount), before the held first transfer: the card boots
// nothing until every change is on it. The verify reads back the card as
// it then is: the digests of the ranges the customisation changed are
// those of their new bytes, and every range it built on was checked
// against the digest taken as it was written.

// ErrCustomizeVerify is a customised write asked to verify by SHA-256:
// the image's hash is not the card's once customised, and a verify by
// digests covers every byte as it is on the card.
var ErrCustomizeVerify = errors.New("a customised card is verified by each transfer's digest (xxh3), not by the image's SHA-256")

// checkCustomize refuses, before anything is opened, a customisation
// that cannot be written as asked.
func checkCustomize(cfg *Config) error {
	if cfg.Customize == nil {
		return nil
	}
	if err := cfg.Customize.Check(); err != nil {
		return err
	}
	if cfg.Engine.Verify && cfg.Engine.VerifyMethod != pipeline.MethodDigests {
		return &failure.SettingError{Setting: customize.SettingFile, Err: ErrCustomizeVerify}
	}
	return nil
}

// inspectLimit bounds how much of the image is decoded to find its boot
// partition's format before writing: a FAT's tables and root directory
// lie in its first few MiB.
const inspectLimit = 128 << 20

// inspectImage decides the customisation's format from the image itself
// before any card is written, and says it; an image it cannot customise is
// refused here, before the first byte. It reads the image's first bytes
// from src itself (as far as the boot partition's tables and root
// directory go, at most inspectLimit), so that an image read once (standard
// input, a URL) is decided before its write as a file is: the bytes read
// are returned, for the write to read first (writePlan.head).
func (s *session) inspectImage(src *image.Source) ([]byte, error) {
	if s.cfg.Customize == nil {
		return nil, nil
	}
	size := int64(1) << 50
	if src.SizeExact {
		size = src.Size
	}
	v := &prefixVolume{r: src, size: size}
	res, err := customize.Inspect(v, 512, *s.cfg.Customize)
	if v.err != nil && v.err != io.EOF && errors.Is(err, v.err) {
		return nil, &image.ReadError{Err: v.err}
	}
	if err != nil {
		return nil, fmt.Errorf("customising %s: %w", image.Shown(s.cfg.Image.Path), err)
	}
	msg := fmt.Sprintf("Customising as %s (%s)", res.Format, res.FAT)
	if res.Why != "" {
		msg += ": " + res.Why
	}
	if res.Where != "" {
		msg += "; the settings go into " + res.Where
	}
	s.emit(Note{Message: msg})
	s.inspected = res
	return v.buf, nil
}

// prefixVolume is an image's first bytes, decoded as far as they are
// read, as a read-only volume for customize.Inspect.
type prefixVolume struct {
	r    io.Reader
	buf  []byte
	size int64
	err  error // the image's read error, kept
}

func (v *prefixVolume) Size() int64 { return v.size }

func (v *prefixVolume) ReadAt(p []byte, off int64) (int, error) {
	end := off + int64(len(p))
	if end > inspectLimit {
		return 0, fmt.Errorf("byte offset %d of the image: past the %d bytes read to find its boot partition", end, inspectLimit)
	}
	for int64(len(v.buf)) < end && v.err == nil {
		chunk := make([]byte, 1<<20)
		n, err := io.ReadFull(v.r, chunk)
		v.buf = append(v.buf, chunk[:n]...)
		if err != nil {
			if errors.Is(err, io.ErrUnexpectedEOF) || errors.Is(err, io.EOF) {
				err = io.EOF
			}
			v.err = err
		}
	}
	if int64(len(v.buf)) < end {
		if v.err == io.EOF {
			return 0, fmt.Errorf("byte offset %d: past the image's end at %d", end, len(v.buf))
		}
		return 0, v.err
	}
	return copy(p, v.buf[off:]), nil
}

func (v *prefixVolume) WriteAt([]byte, int64) (int, error) {
	return 0, errors.New("the image is only read")
}

// firstWriter is the write's FirstWriter when the cards are customised:
// each card gets its own customisation, then its own first transfer.
func (s *session) firstWriter(cards []*card, group *fanout.Group) pipeline.FirstWriter {
	if s.cfg.Customize == nil {
		return nil
	}
	return func(ctx context.Context, dev blockdev.Device, first []byte, d *pipeline.Digests) error {
		if group == nil {
			return s.customizeCard(ctx, cards[0], dev, first, d)
		}
		return group.Each(ctx, func(i int, dev blockdev.Device) (int64, error) {
			own := aligned.Bytes(len(first)) // a card's first transfer may differ from the others'
			copy(own, first)
			if err := s.customizeCard(ctx, cards[i], dev, own, d); err != nil {
				return 0, err
			}
			return int64(len(own)), nil
		})
	}
}

// customizeCard writes the customisation, with this card's values of its
// templates, then the first transfer, and keeps the card's digests.
func (s *session) customizeCard(ctx context.Context, c *card, dev blockdev.Device, first []byte, d *pipeline.Digests) error {
	var own *pipeline.Digests
	if d != nil {
		own = &pipeline.Digests{BlockSize: d.BlockSize, Size: d.Size, List: append([]pipeline.TransferDigest(nil), d.List...)}
	}
	e := pipeline.NewEdit(ctx, dev, first, own)
	res, err := customize.Apply(e, dev.BlockSize(), *c.custom, customize.Options{Card: c.n})
	if err != nil {
		return &CustomizeError{Card: c.d.Name, Err: err}
	}
	if err := e.Commit(); err != nil {
		return err
	}
	c.out.Customized, c.digests = &res, own
	s.emit(Note{Card: c.d.Name, Message: res.Describe()})
	return nil
}

// cardVars are what a customisation's templates stand for on card n of
// d: its number, its reader's and its own serial (as the devices report
// them: customize treats them as hostile).
func cardVars(n int, d *drive.Device) customize.Vars {
	vars := customize.Vars{N: n, USBSerial: readerSerial(d)}
	if sc, ok := d.Dev.(drive.SCSI); ok {
		vars.CardSerial = sc.SCSI().Serial()
	}
	return vars
}

// customizeFor is the customisation of an open card, its templates
// replaced by the card's values and checked, before its first byte: a
// device's serial that makes a value break its rule refuses this card.
func (s *session) customizeFor(c *card) {
	if s.cfg.Customize == nil || c.failed() {
		return
	}
	cfg, err := s.cfg.Customize.For(cardVars(c.n, c.d))
	if err == nil {
		err = s.inspected.Fits(c.d.Capacity()) // a partition to add after the image's
	}
	if err != nil {
		c.fail(fmt.Errorf("customising %s: %w", c.d.Name, err))
		return
	}
	c.custom = &cfg
}

// CustomizeError is a card whose customisation failed: its first
// transfer was left zeroed, so it boots nothing.
type CustomizeError struct {
	Card string
	Err  error
}

func (e *CustomizeError) Error() string {
	return fmt.Sprintf("customising %s (its first transfer left zeroed): %v", e.Card, e.Err)
}
func (e *CustomizeError) Unwrap() error { return e.Err }

// Class is the cause's (a full boot partition is Refused), else Image:
// the image's boot partition could not be changed as asked.
func (e *CustomizeError) Class() failure.Class { return failure.Within(failure.Image, e.Err) }
