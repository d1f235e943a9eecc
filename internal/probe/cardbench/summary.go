package cardbench

import (
	"slices"
	"time"
)

// Rate is the throughput of one path and operation at one size, over every
// region measured: all bytes over all time.
type Rate struct {
	Path    string
	Op      string
	Size    int64
	Rate    float64 // bytes per second
	Bytes   int64
	Elapsed float64
}

// Series is the curve of one path and operation, in increasing size.
type Series struct {
	Path  string
	Op    string
	Rates []Rate
}

// Name is how tables, charts and plots label the series.
func (s Series) Name() string {
	if s.Op == OpRead {
		return s.Path
	}
	return s.Path + " " + s.Op
}

// Summarize folds points into one curve per path and operation, in the
// order the paths first appear.
func Summarize(points []Point) []Series {
	type key struct {
		path, op string
		size     int64
	}
	type acc struct {
		bytes   int64
		elapsed time.Duration
	}
	sums := map[key]*acc{}
	var order []Series
	for _, p := range points {
		k := key{p.Path, p.Op, p.Size}
		a := sums[k]
		if a == nil {
			a = &acc{}
			sums[k] = a
			i := slices.IndexFunc(order, func(s Series) bool { return s.Path == p.Path && s.Op == p.Op })
			if i < 0 {
				order = append(order, Series{Path: p.Path, Op: p.Op})
				i = len(order) - 1
			}
			order[i].Rates = append(order[i].Rates, Rate{Path: p.Path, Op: p.Op, Size: p.Size})
		}
		a.bytes += p.Bytes
		a.elapsed += p.Elapsed
	}
	for i := range order {
		s := &order[i]
		for j := range s.Rates {
			r := &s.Rates[j]
			a := sums[key{r.Path, r.Op, r.Size}]
			r.Bytes, r.Elapsed, r.Rate = a.bytes, a.elapsed.Seconds(), rate(a.bytes, a.elapsed)
		}
		slices.SortFunc(s.Rates, func(a, b Rate) int { return int(a.Size - b.Size) })
	}
	return order
}

// Tolerance is how far below the best rate a size may be and still be
// recommended: the smallest size within it wins, since a smaller transfer
// costs less memory and less time before the first byte lands.
const Tolerance = 0.02

// Recommend returns the smallest size whose rate is within Tolerance of the
// series' best, and that best rate. A series without points gives 0, 0.
func Recommend(s Series) (size int64, best float64) {
	for _, r := range s.Rates {
		best = max(best, r.Rate)
	}
	for _, r := range s.Rates {
		if best > 0 && r.Rate >= (1-Tolerance)*best {
			return r.Size, best
		}
	}
	return 0, 0
}

// Recommended is the transfer size a run recommends for write, and why.
type Recommended struct {
	Size     int64   // 0: nothing to recommend from
	From     string  // the series it comes from (its Name)
	Best     float64 // that series' best rate
	BestSize int64   // the size it was reached at
}

// Recommendation picks the series the recommendation comes from, the
// direct path's writes when they were measured (writing is what the size
// is for), else its reads, and recommends from it (Recommend).
func Recommendation(series []Series) Recommended {
	var pick *Series
	for i, s := range series {
		if s.Path != PathDirect {
			continue
		}
		if s.Op == OpWrite || pick == nil {
			pick = &series[i]
		}
	}
	if pick == nil {
		return Recommended{}
	}
	size, best := Recommend(*pick)
	r := Recommended{Size: size, Best: best, From: pick.Name()}
	for _, x := range pick.Rates {
		if x.Rate == best {
			r.BestSize = x.Size
		}
	}
	return r
}
