package jsonevents

import (
	"testing"
	"time"

	"github.com/usbflash/usbflash/pipeline"
)

// TestProgressRateWaitsForTheFirstSecond: no rate before a phase has run
// a second (the first buffers fill from memory), the average after.
func TestProgressRateWaitsForTheFirstSecond(t *testing.T) {
	for _, tt := range []struct {
		done    int64
		elapsed time.Duration
		want    float64 // 0: none
	}{
		{1 << 20, 300 * time.Millisecond, 0},
		{0, 2 * time.Second, 0},
		{40 << 20, 1500 * time.Millisecond, float64(40<<20) / 1.5},
	} {
		p := NewProgress(PhaseWrite, tt.done, -1, tt.elapsed)
		switch {
		case tt.want == 0 && p.Rate != nil:
			t.Errorf("%d bytes in %v: rate %v, want none yet", tt.done, tt.elapsed, *p.Rate)
		case tt.want != 0 && (p.Rate == nil || *p.Rate != tt.want):
			t.Errorf("%d bytes in %v: rate %v, want %v", tt.done, tt.elapsed, p.Rate, tt.want)
		}
	}
}

// TestBoundOf: the side the engine measured as the limit, and none when
// it measured none.
func TestBoundOf(t *testing.T) {
	for in, want := range map[pipeline.Bound]Bound{
		pipeline.BoundDecoder: BoundDecoder, pipeline.BoundDevice: BoundDevice, pipeline.BoundSink: BoundSink, "": BoundNone,
	} {
		if got := BoundOf(in); got != want {
			t.Errorf("BoundOf(%q) = %q, want %q", in, got, want)
		}
	}
}
