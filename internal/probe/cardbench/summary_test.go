package cardbench

import (
	"slices"
	"testing"
	"time"
)

func TestSizes(t *testing.T) {
	tests := []struct {
		block int
		max   int64
		want  []int64
	}{
		{512, 4 << 10, []int64{512, 1 << 10, 2 << 10, 4 << 10}},
		{512, 256 << 10, []int64{512, 1 << 10, 2 << 10, 4 << 10, 8 << 10, 16 << 10, 32 << 10, 64 << 10, 120 << 10, 128 << 10, 256 << 10}},
		{4096, 128 << 10, []int64{4 << 10, 8 << 10, 16 << 10, 32 << 10, 64 << 10, 120 << 10, 128 << 10}},
		{512, 100 << 10, []int64{512, 1 << 10, 2 << 10, 4 << 10, 8 << 10, 16 << 10, 32 << 10, 64 << 10}},
	}
	for _, tt := range tests {
		if got := Sizes(tt.block, tt.max); !slices.Equal(got, tt.want) {
			t.Errorf("Sizes(%d, %d) = %v, want %v", tt.block, tt.max, got, tt.want)
		}
	}
	if n := len(Sizes(512, MaxSize)); n != 18 {
		t.Errorf("the default sweep of a 512-byte card has %d sizes, want 18 (512 B to 32 MiB and 120 KiB)", n)
	}
}

func TestSummarizeAndRecommend(t *testing.T) {
	pt := func(path, op string, size int64, region string, mb float64) Point {
		return Point{Path: path, Op: op, Size: size, Region: region, Bytes: int64(mb * 1e6), Elapsed: time.Second}
	}
	tests := []struct {
		name     string
		points   []Point
		wantSize int64
		wantBest float64
	}{
		{"the smallest within 2% wins", []Point{
			pt("direct", "read", 1<<20, "start", 30), pt("direct", "read", 2<<20, "start", 39.3),
			pt("direct", "read", 4<<20, "start", 40), pt("direct", "read", 8<<20, "start", 39.9)}, 2 << 20, 40e6},
		{"just outside 2% loses", []Point{
			pt("direct", "read", 1<<20, "start", 39.1), pt("direct", "read", 2<<20, "start", 40)}, 2 << 20, 40e6},
		{"regions are pooled", []Point{
			pt("direct", "read", 1<<20, "start", 40), pt("direct", "read", 1<<20, "end", 20),
			pt("direct", "read", 2<<20, "start", 38), pt("direct", "read", 2<<20, "end", 38)}, 2 << 20, 38e6},
		{"the best may be the largest", []Point{
			pt("direct", "read", 512, "start", 1), pt("direct", "read", 1024, "start", 2)}, 1024, 2e6},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s := Summarize(tt.points)
			if len(s) != 1 {
				t.Fatalf("Summarize gave %d series, want 1", len(s))
			}
			size, best := Recommend(s[0])
			if size != tt.wantSize || best != tt.wantBest {
				t.Errorf("Recommend = %d at best %v, want %d at %v", size, best, tt.wantSize, tt.wantBest)
			}
		})
	}
}

func TestSummarizeSeparatesPathsAndOps(t *testing.T) {
	points := []Point{
		{Path: PathDirect, Op: OpRead, Size: 4096, Bytes: 1, Elapsed: 1},
		{Path: PathKernelDirect, Op: OpRead, Size: 4096, Bytes: 1, Elapsed: 1},
		{Path: PathDirect, Op: OpWrite, Size: 8192, Bytes: 1, Elapsed: 1},
		{Path: PathDirect, Op: OpRead, Size: 512, Bytes: 1, Elapsed: 1},
	}
	var names []string
	for _, s := range Summarize(points) {
		names = append(names, s.Name())
	}
	if want := []string{"direct", "kernel O_DIRECT", "direct write"}; !slices.Equal(names, want) {
		t.Fatalf("series %q, want %q", names, want)
	}
	if got := Summarize(points)[0].Rates; len(got) != 2 || got[0].Size != 512 || got[1].Size != 4096 {
		t.Errorf("direct read sizes %+v, want 512 then 4096", got)
	}
}

func TestUnit(t *testing.T) {
	ms := time.Millisecond
	pts := func(read time.Duration, diffs ...time.Duration) []AlignPoint {
		var out []AlignPoint
		for i, d := range diffs {
			out = append(out, AlignPoint{Boundary: 4096 << i, Before: read, After: read, On: read + d, Diff: d})
		}
		return out
	}
	tests := []struct {
		name   string
		points []AlignPoint
		want   int64
	}{
		{"plateau from the unit", pts(ms, 0, 0, ms/4, ms/2, 2*ms, 2*ms, 2*ms), 4096 << 4},
		{"3/4 of the peak counts", pts(ms, 0, ms/2, 3*ms/2, 2*ms, 2*ms), 4096 << 2},
		{"no extra time", pts(ms, 0, 0, 0, 0), 0},
		{"noise below a tenth of a read", pts(ms, 0, 50*time.Microsecond, 90*time.Microsecond, 90*time.Microsecond), 0},
		{"no rise from the smallest", pts(ms, 2*ms, 2*ms, 2*ms), 0},
		{"a spike without a plateau", pts(ms, 0, 2*ms, 0, 0), 0},
		{"a larger boundary a little low still counts", pts(ms, 0, 0, 2*ms, 2*ms, 6*ms/5, 2*ms), 4096 << 2},
		{"one point says nothing", pts(ms, 2*ms), 0},
	}
	for _, tt := range tests {
		if got := Unit(tt.points); got != tt.want {
			t.Errorf("%s: Unit = %d, want %d", tt.name, got, tt.want)
		}
	}
}

func TestMedian(t *testing.T) {
	ms := time.Millisecond
	tests := []struct {
		in   []time.Duration
		want time.Duration
	}{
		{[]time.Duration{3 * ms}, 3 * ms},
		{[]time.Duration{30 * ms, 1 * ms, 2 * ms}, 2 * ms},
		// Half the samples straddle the unit: half its cost.
		{[]time.Duration{0, 2 * ms, 0, 2 * ms}, ms},
	}
	for _, tt := range tests {
		if got := median(slices.Clone(tt.in)); got != tt.want {
			t.Errorf("median(%v) = %v, want %v", tt.in, got, tt.want)
		}
	}
}

// TestRecommendation: the direct path's writes when measured, else its
// reads; the kernel's paths never.
func TestRecommendation(t *testing.T) {
	pt := func(path, op string, size int64, mb float64) Point {
		return Point{Path: path, Op: op, Size: size, Region: "region", Bytes: int64(mb * 1e6), Elapsed: time.Second}
	}
	tests := []struct {
		name   string
		points []Point
		want   Recommended
	}{
		{"reads only", []Point{pt(PathDirect, OpRead, 1<<20, 40), pt(PathDirect, OpRead, 4<<20, 40)},
			Recommended{Size: 1 << 20, From: "direct", Best: 40e6, BestSize: 4 << 20}},
		{"writes win", []Point{pt(PathDirect, OpRead, 1<<20, 40), pt(PathDirect, OpWrite, 1<<20, 10), pt(PathDirect, OpWrite, 4<<20, 20)},
			Recommended{Size: 4 << 20, From: "direct write", Best: 20e6, BestSize: 4 << 20}},
		{"not the kernel", []Point{pt(PathKernelBuffered, OpRead, 1<<20, 400), pt(PathDirect, OpRead, 4<<20, 40)},
			Recommended{Size: 4 << 20, From: "direct", Best: 40e6, BestSize: 4 << 20}},
		{"nothing direct", []Point{pt(PathKernelBuffered, OpRead, 1<<20, 400)}, Recommended{}},
	}
	for _, tt := range tests {
		if got := Recommendation(Summarize(tt.points)); got != tt.want {
			t.Errorf("%s: %+v, want %+v", tt.name, got, tt.want)
		}
	}
}
