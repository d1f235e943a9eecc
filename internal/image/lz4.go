package image

import (
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"math"

	"github.com/pierrec/lz4/v4"
)

// newLz4Decoder decodes an lz4 stream as lz4 -d does: frames one after
// another (lz4 -m, cat a.lz4 b.lz4), skippable frames stepped over, legacy
// frames (lz4 -l), each frame's content checksum and stated content size
// checked. It reads on the caller's goroutine: lz4 decodes at gigabytes a
// second, faster than any card is written.
func newLz4Decoder(r io.Reader) io.Reader {
	return &lz4Stream{d: lz4.NewReader(r)}
}

// lz4Stream turns the decoder's errors into the ones Source tells apart.
type lz4Stream struct{ d *lz4.Reader }

func (l *lz4Stream) Read(p []byte) (int, error) {
	n, err := l.d.Read(p)
	if errors.Is(err, lz4.ErrInvalidFrame) {
		// The bytes after a frame are no frame: trailing data.
		err = fmt.Errorf("%w: %w", errTrailing("frame"), err)
	}
	return n, err
}

// The lz4 frame format's magic numbers.
const (
	lz4FrameMagic     = 0x184d2204
	lz4LegacyMagic    = 0x184c2102
	lz4SkippableMagic = 0x184d2a50 // the low four bits are free
	// lz4LegacyBlockMax is the largest block a legacy frame holds
	// compressed: 8 MiB of input compresses to at most this.
	lz4LegacyBlockMax = 8<<20 + 8<<20/255 + 16
)

// lz4Frames is what the frame headers of an lz4 input say.
type lz4Frames struct {
	// size is the sum of the frames' content sizes, -1 when a frame does
	// not state its own (lz4 writes it only with --content-size) or the
	// walk did not reach the end of the input.
	size int64
	// checksum: every frame walked carries a content or block checksum.
	checksum bool
	frames   int
}

// lz4MaxBlocks bounds the walk as zstdMaxBlocks does zstd's.
const lz4MaxBlocks = 1 << 22

// scanLz4 walks the frames of an lz4 input of size bytes, reading their
// descriptors and stepping over their blocks. With first it stops after the
// first frame that is not a skippable one. Any inconsistency stops the walk
// and leaves the size unknown: the decoder says what is wrong.
func scanLz4(ra io.ReaderAt, size int64, first bool) lz4Frames {
	z := lz4Frames{size: -1, checksum: true}
	var total int64
	sizeKnown := true
	blocks := 0
	var b [15]byte
	for off := int64(0); off < size; {
		if _, err := ra.ReadAt(b[:4], off); err != nil {
			return z
		}
		magic := binary.LittleEndian.Uint32(b[:4])
		switch {
		case magic&0xfffffff0 == lz4SkippableMagic:
			if _, err := ra.ReadAt(b[4:8], off+4); err != nil {
				return z
			}
			off += 8 + int64(binary.LittleEndian.Uint32(b[4:8]))
			continue
		case magic == lz4LegacyMagic:
			// No sizes and no checksums: blocks until the input ends or
			// another magic starts.
			z.checksum, sizeKnown = false, false
			z.frames++
			if first {
				return z
			}
			for off += 4; off < size; {
				if blocks++; blocks > lz4MaxBlocks {
					return z
				}
				if _, err := ra.ReadAt(b[:4], off); err != nil {
					return z
				}
				n := int64(binary.LittleEndian.Uint32(b[:4]))
				if n > lz4LegacyBlockMax {
					break // the next frame's magic, or damage
				}
				off += 4 + n
			}
			if off > size {
				return z
			}
			continue
		case magic != lz4FrameMagic:
			return z
		}
		if _, err := ra.ReadAt(b[4:7], off+4); err != nil {
			return z
		}
		flg := b[4]
		descLen := int64(3) // FLG, BD, HC
		hasSize := flg&0x08 != 0
		if hasSize {
			if _, err := ra.ReadAt(b[7:15], off+6); err != nil {
				return z
			}
			descLen += 8
		}
		if flg&0x01 != 0 {
			descLen += 4 // a dictionary ID: the decoder refuses it
		}
		blockSum, contentSum := flg&0x10 != 0, flg&0x04 != 0
		z.checksum = z.checksum && (blockSum || contentSum)
		z.frames++
		if first {
			return z
		}
		if cs := binary.LittleEndian.Uint64(b[7:15]); !hasSize || cs > math.MaxInt64-uint64(total) {
			sizeKnown = false
		} else {
			total += int64(cs)
		}
		off += 4 + descLen
		for {
			if blocks++; blocks > lz4MaxBlocks {
				return z
			}
			if _, err := ra.ReadAt(b[:4], off); err != nil {
				return z
			}
			v := binary.LittleEndian.Uint32(b[:4])
			off += 4
			if v == 0 {
				break // EndMark
			}
			off += int64(v &^ (1 << 31))
			if blockSum {
				off += 4
			}
		}
		if contentSum {
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
