package session

import (
	"context"
	"errors"
	"fmt"
	"io"

	"github.com/usbflash/usbflash/internal/drive"
	"github.com/usbflash/usbflash/internal/failure"
	"github.com/usbflash/usbflash/internal/image"
	"github.com/usbflash/usbflash/internal/lib/units"
	"github.com/usbflash/usbflash/pipeline"
	"github.com/usbflash/usbflash/pipeline/blockdev"
)

// VerifyConfig is what a verify compares: one card with an image, byte
// by byte, nothing written (but with Repair).
type VerifyConfig struct {
	// Image is found, opened and trusted as a write's is (image.Open: its
	// checksum given, beside it or its catalog entry's; the keyring's
	// signature), and a card that matches an image that is not its
	// publisher's does not match it.
	Image image.Ref
	// TransferSize is the bytes per READ, lowered to what the card takes;
	// 0: pipeline.DefaultReadSize.
	TransferSize int
	// BlockMap: with a map (given, or beside the image as a write finds
	// it) only the ranges it maps are compared, as only they were written.
	BlockMap BlockMapChoice
	Readers  *drive.Readers // nil: Verify enumerates
	Observer Observer
	// Repair: when the card differs, write the ranges that differ again
	// and compare again (pipeline.Repair), then compare the whole card
	// once more. The card is then opened to be written, and refused when
	// it cannot be (write-protected); the image must pass its checksum
	// before anything is written, and be decoded again: an image at a URL
	// is read into the cache first (a temporary one without Cache),
	// standard input is refused. A card the repair could not make match
	// has its first transfer zeroed (*FirstZeroedError).
	Repair bool
}

// session is the Config of the verify's session.
func (c VerifyConfig) session() Config {
	return Config{Image: c.Image, Output: Output{Observer: c.Observer}}
}

// VerifyResult is a card that matched its image.
type VerifyResult struct {
	Card string // the card's name once open
	// Image is the image as messages name it: its path or URL, a catalog
	// entry's name with its URL.
	Image string
	pipeline.VerifyResult
	// Repair is what was written again before the card matched; nil when
	// it matched at once.
	Repair *pipeline.RepairResult
}

// Verify compares the card spec names with the image: Started, then the
// block map it uses, Opened, Progress, and a *VerifyResult when every
// byte compared matches and the image is its publisher's (its checksum,
// the keyring's signature, its catalog entry's sums and size: as a write
// trusts it). A card too small to hold the image does not match it
// (*SmallerCardError, a verify failure like any difference), whatever the
// image's format: found before reading when the image says its size, at
// the card's end otherwise.
func Verify(ctx context.Context, cfg VerifyConfig, spec drive.Spec) (*VerifyResult, error) {
	s := newSession(cfg.session())
	res, err := s.verify(ctx, cfg, spec)
	// A cache entry an image error came from is hashed, and removed when
	// it is damaged, as after a write.
	s.afterImage(err)
	return res, err
}

func (s *session) verify(ctx context.Context, cfg VerifyConfig, spec drive.Spec) (*VerifyResult, error) {
	transfer := transferSize(cfg.TransferSize).read()
	how := image.ReadOnce
	if cfg.Repair {
		how = image.ReadAgain
	}
	img, err := s.openImage(ctx, how, func(img *image.Opened) error {
		// A verify's buffers: two to read into, one for the image's side.
		return checkSizes(transfer, 2, 0, 1, img.ReadAhead())
	})
	if err != nil {
		return nil, err
	}
	defer img.Close()
	cfg.Image.Path = img.Path()
	src := img.Source
	s.emit(Started{Image: image.Shown(cfg.Image.Path), Source: src, Targets: []string{spec.Raw}, TransferSize: transfer})
	if err := cfg.BlockMap.check(); err != nil {
		return nil, err
	}
	plan, err := s.blockMapPlan(ctx, img, cfg.BlockMap)
	if err != nil {
		return nil, err
	}
	var only []blockdev.Extent
	if plan.m != nil {
		only = plan.m.Extents()
	}
	if err := s.trust(img, plan); err != nil {
		return nil, err
	}
	s.startCheck(ctx, img, src, "as it is compared")
	d, err := drive.Open(ctx, spec, drive.Options{ReadOnly: !cfg.Repair, Readers: cfg.Readers,
		OnNotice: s.onNotice})
	if err != nil {
		return nil, err
	}
	defer d.Close()
	fitted := s.fitCard(d, transfer)
	if cfg.Repair {
		if err := drive.CheckWritable(d); err != nil {
			return nil, err
		}
	}
	size := expectedSize(src)
	if err := blockdev.CheckFits(d.Dev, d.Name, size, true); err != nil {
		return nil, &SmallerCardError{Device: d.Name, Capacity: d.Capacity(), ImageSize: size}
	}
	opts := pipeline.VerifyOptions{
		Name: d.Name, TransferSize: fitted, Only: only,
		Progress: func(p pipeline.Progress) { s.emit(cardProgress(d.Name, p)) },
	}
	res, err := pipeline.Verify(ctx, d.Dev, plan.source(src), size, opts)
	var rr *pipeline.RepairResult
	if failure.Of(err) == failure.Verify {
		// The image is checked before the difference is believed, and
		// before a repair writes anything: a card that differs from an
		// image that is not its publisher's says nothing.
		if cerr := s.checkCompared(ctx, src); cerr != nil {
			return nil, cerr
		}
		if cfg.Repair {
			ro := pipeline.RepairOptions{Verify: pipeline.VerifyOptions{Name: d.Name, TransferSize: fitted, Only: only}}
			res, rr, err = s.repairCard(ctx, d, size, ro, opts, err)
		}
	} else if err == nil {
		if err := s.checkCompared(ctx, src); err != nil {
			return nil, err
		}
	}
	var ce *blockdev.CapacityError
	if errors.As(err, &ce) {
		// The card matched the image as far as it goes, and the image
		// goes on: the size was not known before.
		return nil, &SmallerCardError{Device: d.Name, Capacity: d.Capacity(), ImageSize: -1}
	}
	if err != nil {
		return nil, err
	}
	return &VerifyResult{Card: d.Name, Image: img.Label(), VerifyResult: res, Repair: rr}, nil
}

// checkCompared checks the image a verify compared against its sum, if it
// has one, and says what matched. A stream a difference stopped reading
// cannot be checked: said, and the difference stands.
func (s *session) checkCompared(ctx context.Context, src *image.Source) error {
	sum := s.img.Sum()
	if sum == "" {
		return nil
	}
	if src.Stream() && !src.Ended() {
		s.note(s.img.Named() + " was not checked against " + sum +
			": the comparison stopped at the first difference, and a stream is read once")
		return nil
	}
	// A cache entry that is not the file it is named by is removed, as a
	// write removes it: the next run reads the server.
	matched, err := s.img.Check(ctx, src)
	if matched != "" {
		s.note(matched)
	}
	return err
}

// repairCard writes again what differs between the card d and the image
// (verr: the verify's difference; size: the image's, -1 when its container
// does not say), compares the whole card once more with opts, and zeroes
// its first transfer when it still does not match.
func (s *session) repairCard(ctx context.Context, d *drive.Device, size int64, ro pipeline.RepairOptions, opts pipeline.VerifyOptions, verr error) (pipeline.VerifyResult, *pipeline.RepairResult, error) {
	open := s.img.Reopener() // image.ReadAgain kept the image as a file
	var res pipeline.VerifyResult
	if size < 0 {
		// A gzip or bzip2 stream says its size at its end: a repair
		// needs it first.
		n, err := decodedSize(ctx, open)
		if err != nil {
			return res, nil, &image.ReadError{Err: err}
		}
		size = n
	}
	rr, err := s.repair(ctx, d, open, size, ro, verr)
	if err == nil {
		res, err = verifyAgain(ctx, d, open, size, opts)
	}
	if failure.Of(err) == failure.Verify {
		err = s.unboot(ctx, d, ro.TransferSize, err)
	}
	return res, rr, err
}

// decodedSize decodes the image open opens to its end: its size.
func decodedSize(ctx context.Context, open func() (io.ReadCloser, error)) (int64, error) {
	r, err := open()
	if err != nil {
		return 0, err
	}
	defer r.Close()
	buf := make([]byte, 1<<20)
	var n int64
	for {
		if err := ctx.Err(); err != nil {
			return n, err
		}
		k, err := r.Read(buf)
		n += int64(k)
		switch {
		case err == io.EOF:
			return n, nil
		case err != nil:
			return n, err
		}
	}
}

// verifyAgain compares the whole card with the image once more, after a
// repair.
func verifyAgain(ctx context.Context, d *drive.Device, open func() (io.ReadCloser, error), size int64, opts pipeline.VerifyOptions) (pipeline.VerifyResult, error) {
	src, err := open()
	if err != nil {
		return pipeline.VerifyResult{}, &image.ReadError{Err: err}
	}
	defer src.Close()
	return pipeline.Verify(ctx, d.Dev, src, size, opts)
}

// cardProgress is the Progress of a session of one card that reads it.
func cardProgress(name string, p pipeline.Progress) Progress {
	return Progress{Phase: p.Phase, Done: p.Done, Total: p.Total, Elapsed: p.Elapsed, CompressedDone: -1, CompressedTotal: -1,
		Cards: []CardProgress{{Card: name, Phase: p.Phase, Done: p.Done, Total: p.Total}}}
}

// SmallerCardError is a card compared with an image it cannot hold: it
// does not match it, whatever it holds.
type SmallerCardError struct {
	Device    string
	Capacity  int64
	ImageSize int64 // -1: not known before the card's end was reached
}

func (e *SmallerCardError) Error() string {
	holds, imageRef := units.FormatBytes(e.Capacity), units.FormatBytes(e.ImageSize)
	if e.ImageSize < 0 {
		return fmt.Sprintf("%s holds %s, less than the image: it cannot hold the image, so it does not match it", e.Device, holds)
	}
	if holds == imageRef { // rounded alike: the bytes tell them apart
		holds, imageRef = fmt.Sprintf("%d bytes", e.Capacity), fmt.Sprintf("%d bytes", e.ImageSize)
	}
	return fmt.Sprintf("%s holds %s, less than the image's %s: it cannot hold the image, so it does not match it", e.Device, holds, imageRef)
}

// Class is Verify: the card does not hold the image, as when a byte
// differs.
func (e *SmallerCardError) Class() failure.Class { return failure.Verify }
