package cardbench

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/usbflash/usbflash/usbms/sim"
)

// TestMeasure: a run reads without writing; with Write it touches only its
// region, which Preserve puts back, also when the run is cancelled in any
// step; the steps come in their order.
func TestMeasure(t *testing.T) {
	const size = 16 << 20
	region := Region{Name: "region", Offset: 4 << 20, Length: 2 << 20}
	tests := []struct {
		name            string
		write, preserve bool
		cancelAt        string // the step in which the run is cancelled
		steps           []string
		regionChanges   bool
	}{
		{"reads only", false, false, "", []string{StepReadSweep, StepAlignment, StepRandomRead}, false},
		{"writes", true, false, "", []string{StepReadSweep, StepAlignment, StepRandomRead, StepWriteSweep, StepRandomWrite}, true},
		{"writes, preserved", true, true, "", []string{StepReadSweep, StepAlignment, StepRandomRead, StepSave, StepWriteSweep, StepRandomWrite, StepRestore}, false},
		{"cancelled in the write sweep, preserved", true, true, StepWriteSweep, []string{StepReadSweep, StepAlignment, StepRandomRead, StepSave, StepWriteSweep, StepRestore}, false},
		{"cancelled in the restore", true, true, StepRestore, []string{StepReadSweep, StepAlignment, StepRandomRead, StepSave, StepWriteSweep, StepRandomWrite, StepRestore}, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c := newSimCard(t, sim.Config{}, size)
			before, whole := c.hash(t, region.Offset, region.Length), c.hash(t, 0, size)
			ctx, cancel := context.WithCancel(context.Background())
			defer cancel()
			var steps []string
			l, err := Plan{Sizes: []int64{64 << 10, 1 << 20}, Region: &region}.Layout("sim", size, 512)
			if err != nil {
				t.Fatal(err)
			}
			_, err = Measure(ctx, c.lun, nil, RunOptions{Device: "sim", Layout: l, Write: tt.write, Region: &region, Preserve: tt.preserve,
				PointTime: time.Millisecond, RandomTime: 5 * time.Millisecond, Skip: Skip{RoundTrip: true},
				Step: func(step string, _ int) {
					steps = append(steps, step)
					if step == tt.cancelAt {
						cancel()
					}
				}})
			switch {
			case tt.cancelAt == "" && err != nil:
				t.Fatalf("Measure: %v", err)
			case tt.cancelAt != "" && !errors.Is(err, context.Canceled):
				t.Fatalf("Measure cancelled in %s: %v, want a cancellation", tt.cancelAt, err)
			}
			if len(steps) != len(tt.steps) {
				t.Fatalf("steps %q, want %q", steps, tt.steps)
			}
			for i := range steps {
				if steps[i] != tt.steps[i] {
					t.Fatalf("steps %q, want %q", steps, tt.steps)
				}
			}
			if changed := c.hash(t, region.Offset, region.Length) != before; changed != tt.regionChanges {
				t.Errorf("region changed %v, want %v", changed, tt.regionChanges)
			}
			if !tt.write && c.hash(t, 0, size) != whole {
				t.Error("a run without Write changed the card")
			}
		})
	}
}
