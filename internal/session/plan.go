package session

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"

	"github.com/usbflash/usbflash/internal/failure"
	"github.com/usbflash/usbflash/internal/image"
	"github.com/usbflash/usbflash/internal/image/bmap"
	"github.com/usbflash/usbflash/pipeline"
)

// BlockMapChoice is what the user said about block maps.
type BlockMapChoice struct {
	Path   string // --bmap: this map; "" looks for one next to the image
	Off    bool   // --no-bmap: write every byte
	Sparse bool   // --sparse: without a map, skip what is zero
}

// ErrBlockMapConflict: the block-map choices contradict each other.
var ErrBlockMapConflict = failure.New(failure.Usage, "contradictory block map options")

// writePlan is what a block map or --sparse changes in a write; the zero
// value changes nothing.
type writePlan struct {
	m      *bmap.Map
	path   string
	sparse bool
	// head is the image's first bytes, already read from its source to
	// decide a customisation (inspectImage): the write reads them first.
	head []byte
	// signed: the map's signature was checked with the keyring's keys.
	signed bool
}

// authenticates says the plan's map vouches for every byte of the image
// as a keyring asks (bmaptool's --keyring): signed by its keys, with a
// checksum of every range it maps, which the stream is checked against as
// it is read, and every block it leaves out checked to be zero.
func (p *writePlan) authenticates() bool {
	return p != nil && p.m != nil && p.signed && p.m.ChecksumType != ""
}

// check refuses block-map choices that contradict each other: a map
// named together with none, or with a sparse write.
func (f BlockMapChoice) check() error {
	switch {
	case f.Path != "" && f.Off:
		return &failure.SettingError{Setting: SettingBlockMap, Err: ErrBlockMapConflict}
	case f.Path != "" && f.Sparse:
		return &failure.SettingError{Setting: SettingSparse, Err: ErrBlockMapConflict}
	}
	return nil
}

// planWrite finds and checks the block map before anything is written and
// says, before the first command, which map the write uses. A map that
// does not fit the image is refused here when the image's size is known,
// and by the checker at the end of the stream otherwise. many: the
// session writes several cards or watches, where a map or --sparse (which
// keep each card's old bytes) would mean different cards end different.
func (s *session) planWrite(ctx context.Context, img *image.Opened, f BlockMapChoice, many bool) (*writePlan, error) {
	if err := f.check(); err != nil {
		return nil, err
	}
	switch {
	case many && (f.Path != "" || f.Sparse):
		return nil, ErrBlockMapOneCard
	case f.Sparse:
		s.note("Sparse write: zero 4 KiB blocks are skipped (short runs inside a transfer are written through), and those regions keep the card's old bytes")
		return &writePlan{sparse: true}, nil
	}
	if many && f.Path == "" {
		// A map beside the image is for one card: said, not passed over.
		if path := s.blockMapBeside(ctx, img, f); path != "" {
			s.note(fmt.Sprintf("Block map %s is not used: several cards, or cards taken as they are inserted, are written whole, "+
				"so that every card ends the same (a map leaves each card's old bytes where the image has none)", path))
		}
		return &writePlan{}, nil
	}
	return s.blockMapPlan(ctx, img, f)
}

// blockMapPlan is the plan of a write (or verify) with the block map
// that goes with the image (img.BlockMap: f's, or the one beside it), told
// as BlockMapChosen; the zero plan when there is none.
func (s *session) blockMapPlan(ctx context.Context, img *image.Opened, f BlockMapChoice) (*writePlan, error) {
	m, path, err := img.BlockMap(ctx, f.Path, f.Off)
	switch {
	case err != nil:
		return nil, err
	case m == nil:
		return &writePlan{}, nil
	}
	s.emit(BlockMapChosen{Path: path, Ranges: len(m.Ranges), MappedBytes: m.MappedBytes(), ImageSize: m.ImageSize})
	return &writePlan{m: m, path: path, signed: img.Signed()}, nil
}

// blockMapBeside is the block map a write of one card would find beside
// the image ("" when none is, or --no-bmap's choice says none is
// wanted).
func (s *session) blockMapBeside(ctx context.Context, img *image.Opened, f BlockMapChoice) string {
	if f.Off || f.Path != "" {
		return ""
	}
	return img.BlockMapBeside(ctx)
}

// ErrBlockMapOneCard: a block map or a sparse write writes one card at a time.
var ErrBlockMapOneCard = failure.New(failure.Usage, "a block map or a sparse write writes one card at a time")

// source is the image's stream as the write reads it: the bytes read to
// decide a customisation first, then the rest of src, checked against the
// map's checksums as it is decoded.
func (p *writePlan) source(src io.Reader) io.Reader {
	if len(p.head) > 0 {
		src = io.MultiReader(bytes.NewReader(p.head), src)
	}
	if p.m == nil {
		return src
	}
	return checkedSource{bmap.NewChecker(p.m, src)}
}

// checkedSource marks the checker's complaints as image errors.
type checkedSource struct{ c *bmap.Checker }

func (s checkedSource) Read(b []byte) (int, error) {
	n, err := s.c.Read(b)
	var ce *bmap.ChecksumError
	var me *bmap.Error
	var ue *bmap.UnmappedDataError
	if errors.As(err, &ce) || errors.As(err, &me) || errors.As(err, &ue) {
		err = &image.ReadError{Err: err}
	}
	return n, err
}

// options adds the pieces to write to a write's options. With a map the
// image's size is the map's, so an image too large for the card is refused
// before anything is written even when the container does not state it.
func (p *writePlan) options(o pipeline.WriteOptions) pipeline.WriteOptions {
	gap := int64(min(bmap.MinGap, o.TransferSize))
	switch {
	case p.m != nil:
		if o.ExpectedSize <= 0 {
			o.ExpectedSize = p.m.ImageSize
		}
		o.Pieces = p.m.Pieces(gap)
	case p.sparse:
		o.Pieces = bmap.SparsePieces(gap)
	}
	return o
}

// skipped is how many image bytes the write left out ("" reason when it
// left out none): those regions keep the card's old bytes.
func (p *writePlan) skipped(res pipeline.WriteResult) (int64, string) {
	if res.Written == nil {
		return 0, ""
	}
	var written int64
	for _, e := range res.Written {
		written += e.Len
	}
	why := "unmapped in " + p.path
	if p.sparse {
		why = "all zero"
	}
	return res.Bytes - written, why
}
