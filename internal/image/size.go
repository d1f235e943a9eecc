package image

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"math"

	"github.com/klauspost/compress/zstd"

	"github.com/usbflash/usbflash/internal/lib/units"
)

// probeSize fills Size/SizeExact from what the container records about
// itself. It reads through ra directly, not through the progress meter, and
// any doubt leaves the size unknown: a wrong exact size would fail a good
// write.
func (s *Source) probeSize(ra io.ReaderAt, size int64) {
	switch s.Format {
	case FormatRaw:
		s.Size, s.SizeExact = size, true
	case FormatZstd:
		if s.zstd.size >= 0 {
			s.Size, s.SizeExact = s.zstd.size, true
		}
	case FormatLz4:
		if s.lz4.size >= 0 {
			s.Size, s.SizeExact = s.lz4.size, true
		}

	case FormatGzip:
		if n, ok := gzipSizeHint(ra, size); ok {
			s.Size = n
		}
	}
	// xz sets its size from the index in openParallelXz, zip from the
	// directory in openZip; bzip2 records none.
}

// gzipSizeHint reads ISIZE, the uncompressed size mod 2^32 of the last
// member, as a hint for progress. Deflate expands data by at most ~1032
// times, so ISIZE is the size itself only when the compressed input is too
// small to decode to 4 GiB or more: below about 4 MB. A larger input may
// have wrapped any number of times (a 4.25 GiB image of mostly empty space
// compresses to well under 256 MiB and states ISIZE 256 MiB), and no
// multiple of 4 GiB can be told from another without decoding, so the size
// is unknown; progress then follows the compressed input. A value
// implausibly small for the input (deflate never grows data by more than
// ~0.01% plus headers: the image wrapped, or several members were
// concatenated) is dropped too.
func gzipSizeHint(ra io.ReaderAt, size int64) (int64, bool) {
	const maxRatio, headerSlack = 1032, 64 << 10 // FEXTRA, file name, comment
	if size < 18 || size*maxRatio >= 1<<32 {
		return 0, false
	}
	var b [4]byte
	if _, err := ra.ReadAt(b[:], size-4); err != nil {
		return 0, false
	}
	isize := int64(binary.LittleEndian.Uint32(b[:]))
	if isize+isize/1024+headerSlack < size || isize > size*maxRatio {
		return 0, false
	}
	return isize, true
}

// zstdMaxBlocks bounds the frame walk: a real 64 GiB image has about 512k
// blocks, and a hostile file of empty blocks must not cost millions of reads.
const zstdMaxBlocks = 1 << 22

// zstdFrames is what the frame headers of a zstd input say.
type zstdFrames struct {
	// size is the sum of the frame content sizes, -1 when a frame does not
	// state its own or the walk did not reach the end of the input.
	size int64
	// checksum: every frame walked carries a content checksum.
	checksum bool
	// feature names the first thing usbflash does not decode (a
	// dictionary, a window larger than it allows), at featureAt.
	feature   string
	featureAt int64
	// trailingAt is where data that is no frame starts after the last
	// frame, -1 when there is none (or the walk did not get there).
	trailingAt int64
	// frames counts the frames walked, skippable ones aside.
	frames int
}

// scanZstd walks the frames of a zstd input of size bytes, reading their
// headers and stepping over their blocks. With first it stops after the
// first frame that is not a skippable one: all that a stream's first bytes
// show. Any inconsistency stops the walk, leaving the size unknown; the
// decoder reports what is wrong.
func scanZstd(ra io.ReaderAt, size int64, first bool) zstdFrames {
	z := zstdFrames{size: -1, checksum: true, trailingAt: -1}
	var total int64
	var buf [zstd.HeaderMaxSize]byte
	blocks := 0
	sizeKnown := true
	for off := int64(0); off < size; {
		n, err := ra.ReadAt(buf[:], off)
		if n == 0 || (err != nil && err != io.EOF) {
			return z
		}
		var h zstd.Header
		if err := h.Decode(buf[:n]); err != nil {
			if errors.Is(err, zstd.ErrMagicMismatch) || n < 4 && !zstdMagicPrefix(buf[:n]) {
				z.trailingAt = off
			}
			return z
		}
		if h.Skippable {
			off += int64(h.HeaderSize) + int64(h.SkippableSize)
			continue
		}
		window := h.WindowSize
		if h.SingleSegment {
			window = h.FrameContentSize // the frame is decoded whole
		}
		switch {
		case z.feature != "":
		case h.DictionaryID != 0:
			z.feature, z.featureAt = fmt.Sprintf("a dictionary (ID %d)", h.DictionaryID), off
		case window > zstdMaxWindow:
			z.feature, z.featureAt = fmt.Sprintf("a %s window (usbflash allows up to %s)",
				units.FormatSize(int64(min(window, math.MaxInt64))), units.FormatSize(zstdMaxWindow)), off
		}
		z.checksum = z.checksum && h.HasCheckSum
		z.frames++
		if first {
			return z
		}
		if !h.HasFCS || h.FrameContentSize > math.MaxInt64-uint64(total) {
			sizeKnown = false
		} else {
			total += int64(h.FrameContentSize)
		}
		off += int64(h.HeaderSize)
		for last := false; !last; {
			if blocks++; blocks > zstdMaxBlocks {
				return z
			}
			var bh [3]byte
			if _, err := ra.ReadAt(bh[:], off); err != nil {
				return z
			}
			v := uint32(bh[0]) | uint32(bh[1])<<8 | uint32(bh[2])<<16
			last = v&1 != 0
			bsize := int64(v >> 3)
			switch (v >> 1) & 3 {
			case 1: // RLE: one byte repeated bsize times
				bsize = 1
			case 3: // reserved
				return z
			}
			off += 3 + bsize
		}
		if h.HasCheckSum {
			off += 4
		}
		if off > size {
			return z // the last frame is cut short
		}
	}
	if sizeKnown {
		z.size = total
	}
	return z
}

// zstdMagicPrefix reports whether b could begin a frame or a skippable
// frame: input that ends there is cut short, not trailing data.
func zstdMagicPrefix(b []byte) bool {
	frame, skippable := []byte{0x28, 0xb5, 0x2f, 0xfd}, []byte{0x50, 0x2a, 0x4d, 0x18}
	if len(b) > 0 && b[0]&0xf0 == 0x50 {
		return bytes.HasPrefix(skippable[1:], b[1:])
	}
	return bytes.HasPrefix(frame, b)
}

// ExpectSize states the decoded image's size as the source the image was
// named in gives it (from says which: "the catalog's entry NAME"), when
// the container states none: reading is then checked against it as
// against a container's, and a card too small is known before anything
// is written. An image that decodes whole to another size is an *Error of
// kind ErrStatedSize naming from, not damage. A container that states
// another size is such an error at once. Call it before the first Read.
func (s *Source) ExpectSize(n int64, from string) error {
	switch {
	case n <= 0:
		return nil
	case s.SizeExact && s.Size != n:
		return &Error{Kind: ErrStatedSize, Format: s.Format,
			Err: fmt.Errorf("the image's %s container says it is %d bytes, and %s says %d", s.Format, s.Size, from, n)}
	case !s.SizeExact:
		s.Size, s.SizeExact, s.sizeFrom = n, true, from
	}
	return nil
}
