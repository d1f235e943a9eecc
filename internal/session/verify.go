package session

import (
	"context"
	"errors"
	"fmt"
	"io"

	"github.com/usbflash/usbflash/internal/drive"
	"github.com/usbflash/usbflash/internal/failure"
	"github.com/usbflash/usbflash/internal/image"
	"github.com/usbflash/usbflash/internal/image/httpsrc"
	"github.com/usbflash/usbflash/internal/lib/units"
	"github.com/usbflash/usbflash/pipeline"
	"github.com/usbflash/usbflash/pipeline/blockdev"
	"github.com/usbflash/usbflash/usbms"
)

// VerifyConfig is what a verify compares: one card with an image, byte
// by byte, nothing written.
type VerifyConfig struct {
	Image string          // a path, an http(s) URL, or "-" for standard input
	HTTP  httpsrc.Options // how a URL is read
	// Catalog and OS name the image by a catalog entry, as Config's.
	Catalog, OS string
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
	// it cannot be (write-protected); the image must be a file of known
	// size.
	Repair bool
}

// VerifyResult is a card that matched its image.
type VerifyResult struct {
	Card string // the card's name once open
	pipeline.VerifyResult
	// Repair is what was written again before the card matched; nil when
	// it matched at once.
	Repair *pipeline.RepairResult
}

// Verify compares the card spec names with the image: Started, then the
// block map it uses, Opened, Progress, and a *VerifyResult when every
// byte compared matches. A card too small to hold the image does not match
// it (*SmallerCardError, a verify failure like any difference), whatever
// the image's format: found before reading when the image says its size,
// at the card's end otherwise.
func Verify(ctx context.Context, cfg VerifyConfig, spec drive.Spec) (*VerifyResult, error) {
	s := newSession(Config{Image: cfg.Image, Observer: cfg.Observer, HTTP: cfg.HTTP, Catalog: cfg.Catalog, OS: cfg.OS})
	if err := s.resolveCatalog(ctx); err != nil {
		return nil, err
	}
	cfg.Image = s.cfg.Image
	transfer := cfg.TransferSize
	if transfer == 0 {
		transfer = pipeline.DefaultReadSize
	}
	// A verify's buffers: two to read into, one for the image's side.
	if err := checkSizes(transfer, 2, 0, 1, readAhead(cfg.Image)); err != nil {
		return nil, err
	}
	src, err := s.openImage(ctx, nil)
	if err != nil {
		return nil, err
	}
	defer src.Close()
	s.emit(Started{Image: displayImage(cfg.Image), Source: src, Targets: []string{spec.Raw}, TransferSize: transfer})
	m, mapPath, err := findBlockMapWith(cfg.Image, src, cfg.BlockMap, s.readBeside(ctx), blockMapSig{})
	if err != nil {
		return nil, err
	}
	var only []blockdev.Extent
	if m != nil {
		only = m.Extents()
		s.emit(BlockMapChosen{Path: mapPath, Ranges: len(m.Ranges), MappedBytes: m.MappedBytes(), ImageSize: m.ImageSize})
	}
	d, err := drive.Open(ctx, spec, drive.Options{ReadOnly: !cfg.Repair, Readers: cfg.Readers,
		OnNotice: func(reader string, n usbms.Notice) { s.emit(Note{Card: reader, Message: n.Text, Notice: &n}) }})
	if err != nil {
		return nil, err
	}
	defer d.Close()
	fitted := s.openedToRead(d, transfer)
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
	res, err := pipeline.Verify(ctx, d.Dev, src, size, opts)
	var rr *pipeline.RepairResult
	if err != nil && cfg.Repair && size >= 0 && cfg.Image != "-" && !isURL(cfg.Image) && failure.Of(err) == failure.Verify {
		open := func() (io.ReadCloser, error) { return image.Open(cfg.Image) }
		ro := pipeline.RepairOptions{Verify: pipeline.VerifyOptions{Name: d.Name, TransferSize: fitted, Only: only}}
		if rr, err = s.repair(ctx, d, open, size, ro, err); err == nil {
			res, err = verifyAgain(ctx, d, open, size, opts)
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
	return &VerifyResult{Card: d.Name, VerifyResult: res, Repair: rr}, nil
}

// verifyAgain compares the whole card with the image once more, after a
// repair.
func verifyAgain(ctx context.Context, d *drive.Device, open func() (io.ReadCloser, error), size int64, opts pipeline.VerifyOptions) (pipeline.VerifyResult, error) {
	src, err := open()
	if err != nil {
		return pipeline.VerifyResult{}, &ImageError{Err: err}
	}
	defer src.Close()
	return pipeline.Verify(ctx, d.Dev, src, size, opts)
}

// openedToRead says a card opened to be read and fits the transfer size
// to it.
func (s *session) openedToRead(d *drive.Device, transfer int) int {
	fit := blockdev.FitTransfer(d.Dev, transfer)
	fitted, note := fit.Size, fit.Note(d.Name)
	s.emit(Opened{Card: d.Name, Capacity: d.Capacity(), BlockSize: d.Dev.BlockSize(), TransferSize: fitted, Transport: transportOf(d)})
	if note != "" {
		s.emit(Note{Card: d.Name, Message: note})
	}
	return fitted
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
