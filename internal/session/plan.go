package session

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"net/url"
	"os"
	"path"
	"path/filepath"

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

// planWrite finds and checks the block map before anything is written and
// says, before the first command, which map the write uses. A map that
// does not fit the image is refused here when the image's size is known,
// and by the checker at the end of the stream otherwise. many: the
// session writes several cards or watches, where a map or --sparse (which
// keep each card's old bytes) would mean different cards end different.
func (s *session) planWrite(ctx context.Context, src *image.Source, f BlockMapChoice, many bool) (*writePlan, error) {
	switch {
	case f.Path != "" && f.Off:
		return nil, &failure.SettingError{Setting: SettingBlockMap, Err: ErrBlockMapConflict}
	case f.Path != "" && f.Sparse:
		return nil, &failure.SettingError{Setting: SettingSparse, Err: ErrBlockMapConflict}
	case many && (f.Path != "" || f.Sparse):
		return nil, ErrBlockMapOneCard
	case f.Sparse:
		s.emit(Note{Message: "Sparse write: zero 4 KiB blocks are skipped (short runs inside a transfer are written through), and those regions keep the card's old bytes"})
		return &writePlan{sparse: true}, nil
	}
	if many && f.Path == "" {
		// A map beside the image is for one card: said, not passed over.
		if path := s.blockMapBeside(ctx, f); path != "" {
			s.emit(Note{Message: fmt.Sprintf("Block map %s is not used: several cards, or cards taken as they are inserted, are written whole, "+
				"so that every card ends the same (a map leaves each card's old bytes where the image has none)", path)})
		}
		return &writePlan{}, nil
	}
	m, path, err := findBlockMapWith(s.cfg.Image, src, f, s.readBeside(ctx), s.blockMapSig())
	switch {
	case err != nil:
		return nil, err
	case m == nil:
		return &writePlan{}, nil
	}
	s.emit(BlockMapChosen{Path: path, Ranges: len(m.Ranges), MappedBytes: m.MappedBytes(), ImageSize: m.ImageSize})
	return &writePlan{m: m, path: path, signed: s.cfg.SHA256Keyring != ""}, nil
}

// blockMapBeside is the block map a write of one card would find beside
// the image ("" when none is, or --no-bmap's choice says none is
// wanted); for a URL it asks the server, as that write would.
func (s *session) blockMapBeside(ctx context.Context, f BlockMapChoice) string {
	if f.Off || f.Path != "" {
		return ""
	}
	if read := s.readBeside(ctx); read != nil {
		path, _, err := findBlockMapURL(s.cfg.Image, read)
		if err != nil {
			return ""
		}
		return path
	}
	return findBlockMap(s.cfg.Image)
}

// FindBlockMap is the block map a write of image uses, and where it was
// found: --bmap's, else IMAGE.bmap beside the image as bmaptool finds it,
// unless --no-bmap; nil when there is none. A map that does not fit the
// image is refused here when the image's size is known (and by the checker
// at the end of the stream otherwise). verify uses it to compare what such
// a write wrote.
func FindBlockMap(imageRef string, src *image.Source, f BlockMapChoice) (*bmap.Map, string, error) {
	return findBlockMapWith(imageRef, src, f, nil, blockMapSig{})
}

// maxBlockMap bounds a block map read from a URL: a map of a 64 GiB image
// with a checksum per range is megabytes.
const maxBlockMap = 64 << 20

// findBlockMapWith is FindBlockMap with readBeside reading the files
// beside a URL image (and a map given as a URL); nil for a file image.
func findBlockMapWith(imageRef string, src *image.Source, f BlockMapChoice, readBeside image.ReadFunc, sig blockMapSig) (*bmap.Map, string, error) {
	if f.Path != "" && f.Off {
		return nil, "", &failure.SettingError{Setting: SettingBlockMap, Err: ErrBlockMapConflict}
	}
	path := f.Path
	var data []byte
	var err error
	switch {
	case path == "" && !f.Off && readBeside != nil:
		path, data, err = findBlockMapURL(imageRef, readBeside)
	case path == "" && !f.Off:
		path = findBlockMap(imageRef)
	}
	if path == "" {
		return nil, "", nil
	}
	if data == nil && err == nil {
		if readBeside != nil && isURL(path) {
			data, err = readBeside(path, maxBlockMap)
		} else {
			data, err = os.ReadFile(path)
		}
	}
	if err != nil {
		return nil, "", &BlockMapError{Path: path, Err: err, Unreadable: true}
	}
	if data, err = sig.check(path, data, readBeside); err != nil {
		return nil, "", err
	}
	m, err := bmap.Parse(data)
	if err == nil && src.SizeExact {
		err = m.CheckImageSize(src.Size)
	}
	if err != nil {
		return nil, "", &BlockMapError{Path: path, Err: err}
	}
	return m, path, nil
}

// ErrBlockMapOneCard: a block map or a sparse write writes one card at a time.
var ErrBlockMapOneCard = failure.New(failure.Usage, "a block map or a sparse write writes one card at a time")

// BlockMapError is a block map that cannot be used: unreadable (an image
// error) or not a map of this image (a refusal). Nothing was written.
type BlockMapError struct {
	Path       string
	Unreadable bool
	Err        error
}

func (e *BlockMapError) Error() string {
	return fmt.Sprintf("block map %s: %v; nothing was written", e.Path, e.Err)
}
func (e *BlockMapError) Unwrap() error { return e.Err }

// Class is Image for a map that cannot be read, else Refused: it is not
// a map of this image.
func (e *BlockMapError) Class() failure.Class {
	if e.Unreadable {
		return failure.Image
	}
	return failure.Refused
}

// findBlockMap looks for the map next to the image as bmaptool does:
// IMAGE.bmap, then with one suffix after another removed
// (os.img.xz: os.img.xz.bmap, os.img.bmap, os.bmap).
func findBlockMap(imageRef string) string {
	if imageRef == "-" {
		return ""
	}
	for p := imageRef; ; {
		if st, err := os.Stat(p + ".bmap"); err == nil && st.Mode().IsRegular() {
			return p + ".bmap"
		}
		ext := filepath.Ext(p)
		if ext == "" {
			return ""
		}
		p = p[:len(p)-len(ext)]
	}
}

// findBlockMapURL looks for the map beside a URL as findBlockMap does
// beside a file (the URL's query is not the map's), and reads the first
// one there; "" when none is.
func findBlockMapURL(imageRef string, read image.ReadFunc) (string, []byte, error) {
	u, err := url.Parse(imageRef)
	if err != nil {
		return "", nil, nil
	}
	u.RawQuery, u.ForceQuery, u.Fragment, u.RawPath = "", false, "", ""
	for p := u.Path; ; {
		v := *u
		v.Path = p + ".bmap"
		data, err := read(v.String(), maxBlockMap)
		if !errors.Is(err, fs.ErrNotExist) {
			return v.String(), data, err
		}
		ext := path.Ext(p)
		if ext == "" {
			return "", nil, nil
		}
		p = p[:len(p)-len(ext)]
	}
}

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
		err = &ImageError{Err: err}
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
