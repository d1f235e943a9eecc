package bmap

import (
	"bytes"
	"sort"

	"github.com/usbflash/usbflash/pipeline/blockdev"
)

// MinGap is the shortest gap between mapped (or non-zero) bytes that is
// worth leaving out of a write; shorter ones are written through, in the
// same command. A second command costs about 1 ms on a USB 2 reader, the
// time 40 KiB take at 40 MB/s; 128 KiB leaves room for slower readers.
// (Only skipping gaps of a whole transfer leaves 17% of the OS-like test
// image out, gaps of 128 KiB and more 27%, of the 28% that is zero.)
// Callers lower it to their transfer size: a gap as long as a transfer is
// a transfer not sent.
const MinGap = 128 << 10

// ZeroBlock is the granularity at which SparsePieces looks for zeros: the
// block of the maps usbflash makes (and bmaptool's), so that with
// transfers of whole blocks --sparse leaves out what a map made of the
// same image by NewBuilder would.
const ZeroBlock = DefaultBlockSize

// PieceFunc chooses what to write of one transfer of an image: off is the
// transfer's image offset, b its image bytes; it appends the image extents
// to write to into, in order, and returns it (none: the transfer is not
// written). It is the shape of pipeline.WriteOptions.Pieces, which calls
// it on the decoding goroutine for each transfer, so it must not
// allocate beyond growing into.
type PieceFunc func(off int64, b []byte, into []blockdev.Extent) []blockdev.Extent

// Pieces writes the mapped bytes of each transfer, joining two of them
// when the unmapped gap between is shorter than gap, since a second
// command would cost more than writing the gap through. A transfer with no
// mapped byte is not written.
func (m *Map) Pieces(gap int64) PieceFunc {
	return func(off int64, b []byte, into []blockdev.Extent) []blockdev.Extent {
		end := off + int64(len(b))
		for i := m.first(off); i < len(m.Ranges); i++ {
			lo, hi := m.Bytes(m.Ranges[i])
			if lo >= end {
				break
			}
			into = appendPiece(into, max(lo, off), min(hi, end), gap)
		}
		return into
	}
}

// SparsePieces writes what is not zero of each transfer, looking ZeroBlock
// bytes at a time from the transfer's start, for an image without a map
// (write --sparse): the zero blocks keep whatever the card held, which is
// right only where nothing will read them. Non-zero blocks are joined
// across gaps shorter than gap, as Map.Pieces joins mapped ranges; a
// transfer of zeros alone is not written.
func SparsePieces(gap int64) PieceFunc {
	return func(off int64, b []byte, into []blockdev.Extent) []blockdev.Extent {
		for i := 0; i < len(b); i += ZeroBlock {
			if end := min(i+ZeroBlock, len(b)); !allZero(b[i:end]) {
				into = appendPiece(into, off+int64(i), off+int64(end), gap)
			}
		}
		return into
	}
}

// appendPiece adds the bytes [lo, hi) to the pieces of a transfer, joining
// them to the last piece when the gap between is shorter than gap, or
// there is none.
func appendPiece(into []blockdev.Extent, lo, hi, gap int64) []blockdev.Extent {
	if k := len(into); k > 0 && lo-into[k-1].End() < max(gap, 1) {
		into[k-1].Len = hi - into[k-1].Off
		return into
	}
	return append(into, blockdev.Extent{Off: lo, Len: hi - lo})
}

// allZero compares with bytes.Equal, which is vectorised.
func allZero(b []byte) bool {
	var zero [ZeroBlock]byte
	for len(b) > 0 {
		k := min(len(b), len(zero))
		if !bytes.Equal(b[:k], zero[:k]) {
			return false
		}
		b = b[k:]
	}
	return true
}

// first is the index of the first range that ends after byte off.
func (m *Map) first(off int64) int {
	return sort.Search(len(m.Ranges), func(i int) bool {
		_, end := m.Bytes(m.Ranges[i])
		return end > off
	})
}

// Extents are the image bytes the map says hold data, in order: what a
// verify of a card written with the map compares (the rest of the card
// kept its old bytes).
func (m *Map) Extents() []blockdev.Extent {
	out := make([]blockdev.Extent, 0, len(m.Ranges))
	for _, r := range m.Ranges {
		off, end := m.Bytes(r)
		if k := len(out); k > 0 && out[k-1].End() == off {
			out[k-1].Len = end - out[k-1].Off
			continue
		}
		out = append(out, blockdev.Extent{Off: off, Len: end - off})
	}
	return out
}
