package imagesrc

import (
	"encoding/binary"
	"io"
	"math"

	"github.com/klauspost/compress/zstd"
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
		if n, ok := zstdFramesSize(ra, size); ok {
			s.Size, s.SizeExact = n, true
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
// member. It is only a hint: below 4 GiB of input it cannot have wrapped if
// the file is a single member, but a multi-member file cannot be told apart
// without decoding it, so a value implausibly small for the input size
// (deflate never shrinks data to less than ~1/1032, and never grows it by
// more than ~0.01% plus headers) is dropped.
func gzipSizeHint(ra io.ReaderAt, size int64) (int64, bool) {
	if size < 18 || size >= 1<<32 {
		return 0, false
	}
	var b [4]byte
	if _, err := ra.ReadAt(b[:], size-4); err != nil {
		return 0, false
	}
	isize := int64(binary.LittleEndian.Uint32(b[:]))
	const headerSlack = 64 << 10 // FEXTRA, file name, comment
	if isize+isize/1024+headerSlack < size || isize > size*1032 {
		return 0, false
	}
	return isize, true
}

// zstdMaxBlocks bounds the frame walk: a real 64 GiB image has about 512k
// blocks, and a hostile file of empty blocks must not cost millions of reads.
const zstdMaxBlocks = 1 << 22

// zstdFramesSize walks the frames of a seekable zstd input, summing the
// frame content sizes. Skippable frames are stepped over; any frame without
// a content size, or any inconsistency, means unknown.
func zstdFramesSize(ra io.ReaderAt, size int64) (int64, bool) {
	var total int64
	var buf [zstd.HeaderMaxSize]byte
	blocks := 0
	for off := int64(0); off < size; {
		n, err := ra.ReadAt(buf[:], off)
		if n == 0 || (err != nil && err != io.EOF) {
			return 0, false
		}
		var h zstd.Header
		if h.Decode(buf[:n]) != nil {
			return 0, false
		}
		if h.Skippable {
			off += int64(h.HeaderSize) + int64(h.SkippableSize)
			continue
		}
		if !h.HasFCS || h.FrameContentSize > math.MaxInt64-uint64(total) {
			return 0, false
		}
		total += int64(h.FrameContentSize)
		off += int64(h.HeaderSize)
		for last := false; !last; {
			if blocks++; blocks > zstdMaxBlocks {
				return 0, false
			}
			var bh [3]byte
			if _, err := ra.ReadAt(bh[:], off); err != nil {
				return 0, false
			}
			v := uint32(bh[0]) | uint32(bh[1])<<8 | uint32(bh[2])<<16
			last = v&1 != 0
			bsize := int64(v >> 3)
			switch (v >> 1) & 3 {
			case 1: // RLE: one byte repeated bsize times
				bsize = 1
			case 3: // reserved
				return 0, false
			}
			off += 3 + bsize
		}
		if h.HasCheckSum {
			off += 4
		}
	}
	return total, true
}
