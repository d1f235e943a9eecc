package xzdec

import (
	"bytes"
	"encoding/binary"
	"hash"
	"io"
)

// blockDec decodes one block: header already parsed, LZMA2 data, optional
// filters, padding and check. Expected sizes from the index (parallel mode)
// are cross-checked against the header and the data.
type blockDec struct {
	in        *inReader
	start     int64 // compressed offset of the block header
	hdr       blockHeader
	check     CheckType
	h         hash.Hash
	lz        *lzma2Dec
	chain     *filterChain
	compStart int64
	out       int64 // uncompressed bytes produced
	uncompMax int64 // bound from header or index, or maxVLI
	unpadded  int64 // set by finish
	// expectations from the index; -1 when streaming
	wantUnpadded int64
	wantUncomp   int64
}

// init prepares b for a block whose header hdr was read at start. lz is
// reused across blocks; its window must already be set up by the caller
// (streaming or fixed).
func (b *blockDec) init(in *inReader, start int64, hdr blockHeader, check CheckType, lz *lzma2Dec, wantUnpadded, wantUncomp int64) error {
	*b = blockDec{
		in: in, start: start, hdr: hdr, check: check, lz: lz,
		compStart: start + int64(hdr.size), uncompMax: maxVLI,
		wantUnpadded: wantUnpadded, wantUncomp: wantUncomp,
	}
	if wantUnpadded >= 0 {
		comp := wantUnpadded - int64(hdr.size) - int64(check.Size())
		if comp <= 0 {
			return errAt(start, ErrFormat, "index unpadded size %d leaves no room for block data", wantUnpadded)
		}
		if hdr.compSize >= 0 && hdr.compSize != comp {
			return errAt(start, ErrFormat, "block header compressed size %d disagrees with the index (%d)", hdr.compSize, comp)
		}
		if hdr.uncompSize >= 0 && hdr.uncompSize != wantUncomp {
			return errAt(start, ErrFormat, "block header uncompressed size %d disagrees with the index (%d)", hdr.uncompSize, wantUncomp)
		}
		b.hdr.compSize = comp
		b.uncompMax = wantUncomp
	}
	if b.hdr.uncompSize >= 0 {
		b.uncompMax = b.hdr.uncompSize
	}
	compEnd := int64(maxVLI)
	if b.hdr.compSize >= 0 {
		compEnd = b.compStart + b.hdr.compSize
	}
	lz.reset(in, compEnd)
	lz.lz.dictSize = int(hdr.dictSize)
	b.h = check.newHash()
	b.chain = newFilterChain(hdr.filters)
	return nil
}

// next returns the next piece of decoded output, valid until the next
// call, or io.EOF once the block's padding and check have been verified.
func (b *blockDec) next() ([]byte, error) {
	for {
		span, err := b.lz.fill()
		final := err == io.EOF
		if err != nil && !final {
			return nil, err
		}
		if b.chain != nil {
			span = b.chain.process(span, final)
		}
		if len(span) > 0 {
			b.out += int64(len(span))
			if b.out > b.uncompMax {
				return nil, errAt(b.in.offset(), ErrFormat, "block decodes to more than its recorded uncompressed size %d", b.uncompMax)
			}
			if b.h != nil {
				b.h.Write(span)
			}
			return span, nil
		}
		if final {
			return nil, b.finish()
		}
	}
}

// finish verifies sizes, block padding and the check, and returns io.EOF.
func (b *blockDec) finish() error {
	in := b.in
	comp := in.offset() - b.compStart
	if b.hdr.compSize >= 0 && comp != b.hdr.compSize {
		return errAt(in.offset(), ErrFormat, "block compressed size %d, header or index says %d", comp, b.hdr.compSize)
	}
	if b.hdr.uncompSize >= 0 && b.out != b.hdr.uncompSize {
		return errAt(in.offset(), ErrFormat, "block uncompressed size %d, header says %d", b.out, b.hdr.uncompSize)
	}
	if b.wantUncomp >= 0 && b.out != b.wantUncomp {
		return errAt(in.offset(), ErrFormat, "block uncompressed size %d, index says %d", b.out, b.wantUncomp)
	}
	if pad := int(-comp & 3); pad > 0 {
		off := in.offset()
		p, err := in.next(pad)
		if err != nil {
			return err
		}
		for _, c := range p {
			if c != 0 {
				return errAt(off, ErrFormat, "non-zero block padding")
			}
		}
	}
	off := in.offset()
	sum, err := in.next(b.check.Size())
	if err != nil {
		return err
	}
	if !b.checkMatches(sum) {
		return errAt(off, ErrChecksum, "%v of block at offset %d does not match its data", b.check, b.start)
	}
	b.unpadded = int64(b.hdr.size) + comp + int64(b.check.Size())
	return io.EOF
}

func (b *blockDec) checkMatches(sum []byte) bool {
	switch b.check {
	case CheckCRC32:
		return b.h.(hash.Hash32).Sum32() == binary.LittleEndian.Uint32(sum)
	case CheckCRC64:
		return b.h.(hash.Hash64).Sum64() == binary.LittleEndian.Uint64(sum)
	case CheckSHA256:
		var buf [32]byte
		return bytes.Equal(b.h.Sum(buf[:0]), sum)
	}
	return true
}

// readBlockHeader reads and parses the block header starting at the
// current input position; the caller has checked the first byte is not 0.
func readBlockHeader(in *inReader) (blockHeader, int64, error) {
	start := in.offset()
	p, err := in.peek(1)
	if err != nil {
		return blockHeader{}, start, err
	}
	size := (int(p[0]) + 1) * 4
	hb, err := in.next(size)
	if err != nil {
		return blockHeader{}, start, err
	}
	h, err := parseBlockHeader(hb, start)
	if err == nil {
		// Filter properties point into the input buffer; keep our own copy.
		for i := range h.filters {
			h.filters[i].props = bytes.Clone(h.filters[i].props)
		}
	}
	return h, start, err
}

// windowMax is the streaming window size for a block: its dictionary, or
// the block's uncompressed size if known and smaller.
func windowMax(h blockHeader) int {
	m := int64(h.dictSize)
	if h.uncompSize >= 0 && h.uncompSize < m {
		m = max(h.uncompSize, 1)
	}
	return int(m)
}
