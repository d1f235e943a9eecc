package xzdec

import (
	"encoding/binary"
	"hash/crc32"
	"io"
)

// Index describes a seekable .xz file, read from its end without decoding
// any block: stream footers, indexes and stream headers.
type Index struct {
	// UncompressedSize is the exact size of the decoded output.
	UncompressedSize int64
	// Streams lists the concatenated streams in file order.
	Streams []StreamInfo
	// Blocks lists every block of every stream in file order.
	Blocks []BlockInfo
}

// StreamInfo describes one stream.
type StreamInfo struct {
	Offset  int64 // compressed offset of the stream header
	Size    int64 // header through footer
	Padding int64 // zero bytes following the stream
	Check   CheckType
}

// BlockInfo describes one block as its stream's index records it.
type BlockInfo struct {
	Stream             int   // index into Index.Streams
	Offset             int64 // compressed offset of the block header
	UncompressedOffset int64
	UnpaddedSize       int64 // header + compressed data + check
	UncompressedSize   int64
}

// padChunk bounds one read while walking stream padding backwards.
const padChunk = 4096

// ReadIndex reads the index of every stream in ra (size bytes), walking
// backwards from the end as xz --list does. It verifies footers, index
// CRC32s, stream headers, that header and footer flags agree, and that the
// sizes add up; it does not decode blocks.
func ReadIndex(ra io.ReaderAt, size int64) (*Index, error) {
	if size < streamHeaderSize+streamFooterSize || size%4 != 0 {
		return nil, errAt(0, ErrFormat, "file size %d is not a valid xz file size", size)
	}
	var streams []StreamInfo
	var blocks [][]BlockInfo
	pos := size
	for pos > 0 {
		pad, err := skipPadding(ra, pos)
		if err != nil {
			return nil, err
		}
		pos -= pad
		if pos == 0 {
			return nil, errAt(0, ErrFormat, "file starts with stream padding")
		}
		s, bl, err := readStreamBackward(ra, pos)
		if err != nil {
			return nil, err
		}
		s.Padding = pad
		streams = append(streams, s)
		blocks = append(blocks, bl)
		pos = s.Offset
	}
	x := &Index{}
	for i := len(streams) - 1; i >= 0; i-- {
		si := len(x.Streams)
		x.Streams = append(x.Streams, streams[i])
		for _, b := range blocks[i] {
			b.Stream = si
			b.UncompressedOffset = x.UncompressedSize
			if b.UncompressedSize > maxVLI-x.UncompressedSize {
				return nil, errAt(b.Offset, ErrFormat, "total uncompressed size overflows")
			}
			x.UncompressedSize += b.UncompressedSize
			x.Blocks = append(x.Blocks, b)
		}
	}
	return x, nil
}

// skipPadding returns how many zero bytes (a multiple of 4) end at pos.
func skipPadding(ra io.ReaderAt, pos int64) (int64, error) {
	var buf [padChunk]byte
	var pad int64
	for pos-pad > 0 {
		n := min(int64(len(buf)), pos-pad)
		b := buf[:n]
		if _, err := ra.ReadAt(b, pos-pad-n); err != nil {
			return 0, &Error{Offset: pos - pad - n, Err: err}
		}
		for i := len(b) - 4; i >= 0; i -= 4 {
			if binary.LittleEndian.Uint32(b[i:]) != 0 {
				return pad, nil
			}
			pad += 4
		}
	}
	return pad, nil
}

// readStreamBackward parses the stream that ends at end.
func readStreamBackward(ra io.ReaderAt, end int64) (StreamInfo, []BlockInfo, error) {
	var s StreamInfo
	if end < streamHeaderSize+streamFooterSize {
		return s, nil, errAt(0, ErrFormat, "data before offset %d is too short to be an xz stream", end)
	}
	var fb [streamFooterSize]byte
	foff := end - streamFooterSize
	if _, err := ra.ReadAt(fb[:], foff); err != nil {
		return s, nil, &Error{Offset: foff, Err: err}
	}
	flags, back, err := parseStreamFooter(fb[:], foff)
	if err != nil {
		return s, nil, err
	}
	ioff := foff - back
	if ioff < streamHeaderSize {
		return s, nil, errAt(foff+4, ErrFormat, "stream footer backward size %d points before the stream", back)
	}
	ib := make([]byte, back)
	if _, err := ra.ReadAt(ib, ioff); err != nil {
		return s, nil, &Error{Offset: ioff, Err: err}
	}
	recs, err := parseIndex(ib, ioff)
	if err != nil {
		return s, nil, err
	}
	var blocksSize int64
	for _, r := range recs {
		if r.unpadded > ioff {
			return s, nil, errAt(ioff, ErrFormat, "index block sizes exceed the stream")
		}
		blocksSize += (r.unpadded + 3) &^ 3
		if blocksSize > ioff {
			return s, nil, errAt(ioff, ErrFormat, "index block sizes exceed the stream")
		}
	}
	hoff := ioff - blocksSize - streamHeaderSize
	if hoff < 0 {
		return s, nil, errAt(ioff, ErrFormat, "index block sizes exceed the stream")
	}
	var hb [streamHeaderSize]byte
	if _, err := ra.ReadAt(hb[:], hoff); err != nil {
		return s, nil, &Error{Offset: hoff, Err: err}
	}
	hflags, err := parseStreamHeader(hb[:], hoff)
	if err != nil {
		return s, nil, err
	}
	if hflags != flags {
		return s, nil, errAt(foff+8, ErrFormat, "stream footer flags differ from the stream header at %d", hoff)
	}
	s = StreamInfo{Offset: hoff, Size: end - hoff, Check: flags.check()}
	bl := make([]BlockInfo, len(recs))
	off := hoff + streamHeaderSize
	for i, r := range recs {
		if r.unpadded <= int64(flags.check().Size()) {
			return s, nil, errAt(ioff, ErrFormat, "index record %d has an impossible unpadded size", i)
		}
		bl[i] = BlockInfo{Offset: off, UnpaddedSize: r.unpadded, UncompressedSize: r.uncomp}
		off += (r.unpadded + 3) &^ 3
	}
	return s, bl, nil
}

// parseIndex parses a whole index (indicator through CRC32) found at off.
func parseIndex(b []byte, off int64) ([]indexRecord, error) {
	if len(b) < 8 || b[0] != 0 {
		return nil, errAt(off, ErrFormat, "no index where the stream footer points")
	}
	n := len(b)
	if crc32.ChecksumIEEE(b[:n-4]) != binary.LittleEndian.Uint32(b[n-4:]) {
		return nil, errAt(off+int64(n-4), ErrFormat, "index CRC32 mismatch")
	}
	body := b[:n-4]
	p := 1
	vli := func() (int64, error) {
		v, k := getVLI(body[p:])
		if k <= 0 || v > maxVLI {
			return 0, errAt(off+int64(p), ErrFormat, "invalid variable-length integer in index")
		}
		p += k
		return int64(v), nil
	}
	count, err := vli()
	if err != nil {
		return nil, err
	}
	if count > int64(len(body))/2 {
		return nil, errAt(off+1, ErrFormat, "index claims %d records, too many for its size", count)
	}
	recs := make([]indexRecord, 0, count)
	for i := int64(0); i < count; i++ {
		u, err := vli()
		if err != nil {
			return nil, err
		}
		c, err := vli()
		if err != nil {
			return nil, err
		}
		recs = append(recs, indexRecord{u, c})
	}
	if len(body) != (p+3)&^3 {
		return nil, errAt(off+int64(p), ErrFormat, "index size does not match its records")
	}
	for _, c := range body[p:] {
		if c != 0 {
			return nil, errAt(off+int64(p), ErrFormat, "non-zero index padding")
		}
	}
	return recs, nil
}
