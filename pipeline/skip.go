package pipeline

import "sort"

// Extent is the image bytes [Off, Off+Len).
type Extent struct {
	Off, Len int64
}

// End is the first byte after e.
func (e Extent) End() int64 { return e.Off + e.Len }

// addExtent appends [off, off+n) to a sorted list, merging it with the last
// extent when they touch: consecutive written transfers make one extent, so
// the list grows with the gaps, not with the transfers.
func addExtent(list []Extent, off, n int64) []Extent {
	if k := len(list); k > 0 && list[k-1].End() == off {
		list[k-1].Len += n
		return list
	}
	return append(list, Extent{Off: off, Len: n})
}

// extentsLen is the bytes in list.
func extentsLen(list []Extent) int64 {
	var n int64
	for _, e := range list {
		n += e.Len
	}
	return n
}

// nextInExtents returns the first offset at or after off that lies in one
// of the sorted extents, and how many bytes from there the extent holds;
// (limit, 0) when none does.
func nextInExtents(list []Extent, off, limit int64) (int64, int64) {
	i := sort.Search(len(list), func(i int) bool { return list[i].End() > off })
	if i == len(list) || list[i].Off >= limit {
		return limit, 0
	}
	start := max(off, list[i].Off)
	return start, min(list[i].End(), limit) - start
}

// mergeFirst joins the first two extents when they touch.
func mergeFirst(list []Extent) []Extent {
	if len(list) > 1 && list[0].End() == list[1].Off {
		list[1] = Extent{Off: list[0].Off, Len: list[0].Len + list[1].Len}
		return list[1:]
	}
	return list
}
