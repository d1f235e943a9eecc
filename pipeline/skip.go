package pipeline

import (
	"sort"

	"github.com/usbflash/usbflash/pipeline/blockdev"
)

// addExtent appends [off, off+n) to a sorted list, merging it with the last
// extent when they touch: consecutive written transfers make one extent, so
// the list grows with the gaps, not with the transfers.
func addExtent(list []blockdev.Extent, off, n int64) []blockdev.Extent {
	if k := len(list); k > 0 && list[k-1].End() == off {
		list[k-1].Len += n
		return list
	}
	return append(list, blockdev.Extent{Off: off, Len: n})
}

// extentsLen is the bytes in list.
func extentsLen(list []blockdev.Extent) int64 {
	var n int64
	for _, e := range list {
		n += e.Len
	}
	return n
}

// nextInExtents returns the first offset at or after off that lies in one
// of the sorted extents, and how many bytes from there the extent holds;
// (limit, 0) when none does.
func nextInExtents(list []blockdev.Extent, off, limit int64) (int64, int64) {
	i := sort.Search(len(list), func(i int) bool { return list[i].End() > off })
	if i == len(list) || list[i].Off >= limit {
		return limit, 0
	}
	start := max(off, list[i].Off)
	return start, min(list[i].End(), limit) - start
}

// mergeFirst joins the first two extents when they touch.
func mergeFirst(list []blockdev.Extent) []blockdev.Extent {
	if len(list) > 1 && list[0].End() == list[1].Off {
		list[1] = blockdev.Extent{Off: list[0].Off, Len: list[0].Len + list[1].Len}
		return list[1:]
	}
	return list
}

// pick asks WriteOptions.Pieces which parts of buffer idx (p, padded to
// whole blocks, holding n image bytes at image offset off) to write, and
// stores them relative to the buffer, widened to whole blocks and merged
// where they meet. It hashes the bytes that will be written and says
// whether the buffer is written in pieces. The first transfer is always
// written whole: its region was zeroed first.
func (f *filler) pick(idx int, off int64, p []byte, n int) bool {
	if f.pieces == nil {
		return false
	}
	if off == 0 || n == 0 {
		if f.written != nil {
			f.written.Write(p[:n])
		}
		return false
	}
	bs := int64(f.blockSize)
	in := f.pieces(off, p[:n], f.chosen[idx][:0])
	out := in[:0]
	for _, e := range in {
		lo := max(e.Off-off, 0) / bs * bs
		hi := min((e.End()-off+bs-1)/bs*bs, int64(len(p)))
		switch k := len(out); {
		case hi <= lo:
		case k > 0 && lo <= out[k-1].End():
			out[k-1].Len = max(out[k-1].End(), hi) - out[k-1].Off
		default:
			out = append(out, blockdev.Extent{Off: lo, Len: hi - lo})
		}
	}
	if f.written != nil {
		for _, e := range out {
			f.written.Write(p[e.Off:min(e.End(), int64(n))])
		}
	}
	f.chosen[idx] = out
	return true
}

// writePieces writes the pieces pick chose for f, one command each.
func (w *writer) writePieces(f fill) error {
	buf := w.r.bufs[f.idx]
	for _, e := range w.fill.chosen[f.idx] {
		if err := w.write(w.nextLBA+e.Off/int64(w.bs), buf[e.Off:e.End()]); err != nil {
			return err
		}
		w.res.BytesWritten += e.Len
		w.noteWritten(f.off+e.Off, min(e.End(), int64(f.n))-e.Off)
	}
	return nil
}

// noteWritten records written image bytes when some may be left out. The
// first transfer, written last, goes first, where its bytes are.
func (w *writer) noteWritten(off, n int64) {
	switch {
	case w.opts.Pieces == nil:
	case off == 0:
		w.res.Written = mergeFirst(append(addExtent(nil, 0, n), w.res.Written...))
	default:
		w.res.Written = addExtent(w.res.Written, off, n)
	}
}
