package main

import (
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"

	"github.com/spf13/pflag"

	"usbflash/bmap"
	"usbflash/imagesrc"
	"usbflash/internal/units"
	"usbflash/pipeline"
)

// blockMapFlags are write's options for writing less than the whole image.
type blockMapFlags struct {
	path           string
	noBmap, sparse bool
}

func (f *blockMapFlags) register(fl *pflag.FlagSet) {
	fl.StringVar(&f.path, "bmap", "", "write only the ranges this bmaptool block map lists (default: IMAGE.bmap next to the image, compression suffixes removed, when there is one)")
	fl.BoolVar(&f.noBmap, "no-bmap", false, "write every byte even when a block map lies next to the image")
	fl.BoolVar(&f.sparse, "sparse", false, "without a block map, skip what is zero in the image, 4 KiB at a time (those regions keep the card's old bytes)")
}

// checkOneCard refuses a block map or --sparse for a many-card write,
// which writes every byte to every card: asked for, they would be ignored.
func (f blockMapFlags) checkOneCard(many bool) error {
	switch {
	case many && f.path != "":
		return &usageError{"--bmap writes one card at a time: give one TARGET, without --all, --watch or --report"}
	case many && f.sparse:
		return &usageError{"--sparse writes one card at a time: give one TARGET, without --all, --watch or --report"}
	}
	return nil
}

// writePlan is what a block map or --sparse changes in a write; the zero
// value changes nothing.
type writePlan struct {
	m      *bmap.Map
	path   string
	sparse bool
}

// planWrite finds and checks the block map before anything is written and
// says, as the first line of output, which map the write uses. A map that
// does not fit the image is refused here when the image's size is known,
// and by the checker at the end of the stream otherwise.
func planWrite(image string, src *imagesrc.Source, f blockMapFlags, rep reporter) (*writePlan, error) {
	switch {
	case f.path != "" && f.noBmap:
		return nil, &usageError{"--bmap and --no-bmap contradict each other: pass one"}
	case f.path != "" && f.sparse:
		return nil, &usageError{"--sparse is for writes without a block map: drop it or --bmap"}
	case f.sparse:
		msg := "Sparse write: zero 4 KiB blocks are skipped (short runs inside a transfer are written through), and those regions keep the card's old bytes"
		rep.event(&noteEvent{eventHeader{Event: evNote}, msg}, msg)
		return &writePlan{sparse: true}, nil
	}
	path := f.path
	if path == "" && !f.noBmap {
		path = findBlockMap(image)
	}
	if path == "" {
		return &writePlan{}, nil
	}
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, &codedError{exitSource, fmt.Errorf("block map %s: %w", path, err)}
	}
	m, err := bmap.Parse(data)
	if err == nil && src.SizeExact {
		err = m.CheckImageSize(src.Size)
	}
	if err != nil {
		return nil, &refusedError{fmt.Sprintf("%s: %v; nothing was written (pass --no-bmap to write every byte)", path, err)}
	}
	pct := 100.0
	if m.ImageSize > 0 {
		pct = float64(m.MappedBytes()) * 100 / float64(m.ImageSize)
	}
	msg := fmt.Sprintf("Block map %s: %d ranges, %s of %s mapped (%.0f%%); only those are written and verified",
		path, len(m.Ranges), units.FormatSize(m.MappedBytes()), units.FormatSize(m.ImageSize), pct)
	rep.event(&blockMapEvent{eventHeader: eventHeader{Event: evBlockMap},
		BMap: path, Ranges: len(m.Ranges), MappedBytes: m.MappedBytes(), ImageSize: m.ImageSize}, msg)
	return &writePlan{m: m, path: path}, nil
}

// findBlockMap looks for the map next to the image as bmaptool does:
// IMAGE.bmap, then with one suffix after another removed
// (os.img.xz: os.img.xz.bmap, os.img.bmap, os.bmap).
func findBlockMap(image string) string {
	if image == "-" {
		return ""
	}
	for p := image; ; {
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

// source checks the stream against the map's checksums as it is decoded.
func (p *writePlan) source(src io.Reader) io.Reader {
	if p.m == nil {
		return src
	}
	return checkedSource{bmap.NewChecker(p.m, src)}
}

// checkedSource gives the checker's complaints the image error's exit code.
type checkedSource struct{ c *bmap.Checker }

func (s checkedSource) Read(b []byte) (int, error) {
	n, err := s.c.Read(b)
	var ce *bmap.ChecksumError
	var me *bmap.Error
	if errors.As(err, &ce) || errors.As(err, &me) {
		err = &codedError{exitSource, err}
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

// verify limits the read-back to what was written, against its hash.
func (p *writePlan) verify(res pipeline.WriteResult, o pipeline.VerifyOptions) ([32]byte, pipeline.VerifyOptions) {
	if res.Written == nil {
		return res.SHA256, o
	}
	o.Only = res.Written
	return res.WrittenSHA256, o
}

// summary says how much was skipped and what that means for the card.
func (p *writePlan) summary(sum *summaryEvent, res pipeline.WriteResult) []string {
	if res.Written == nil {
		return nil
	}
	var written int64
	for _, e := range res.Written {
		written += e.Len
	}
	skipped := res.Bytes - written
	sum.SkippedBytes = ptr(skipped)
	why := "unmapped in " + p.path
	if p.sparse {
		why = "all zero"
	}
	return []string{fmt.Sprintf("Skipped %s (%s): those regions keep the card's old bytes", units.FormatSize(skipped), why)}
}
