package cardbench

import (
	"errors"
	"slices"
	"strings"
	"testing"
)

func TestPlanCheck(t *testing.T) {
	const GiB = 1 << 30
	tests := []struct {
		name string
		plan Plan
		want PlanReason // 0: accepted
	}{
		{"default", Plan{}, 0},
		{"the memory bound itself", Plan{Sizes: []int64{MaxTransferSize}}, 0},
		{"64 GiB transfers", Plan{Sizes: []int64{4096, 64 * GiB}}, SizeOverMemory},
		{"one byte past the bound", Plan{Sizes: []int64{MaxTransferSize + 512}}, SizeOverMemory},
		{"preserve at the bound", Plan{Region: &Region{Length: MaxPreserve}, Preserve: true}, 0},
		{"preserve past the bound", Plan{Region: &Region{Length: MaxPreserve + 512}, Preserve: true}, PreserveOverMemory},
		{"a large region not preserved", Plan{Region: &Region{Length: 4 * GiB}}, 0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := tt.plan.Check()
			var pe *PlanError
			switch {
			case tt.want == 0 && err != nil:
				t.Errorf("Check() = %v, want nil", err)
			case tt.want != 0 && (!errors.As(err, &pe) || pe.Reason != tt.want):
				t.Errorf("Check() = %v, want reason %d", err, tt.want)
			}
		})
	}
}

func TestPlanLayout(t *testing.T) {
	const MiB = 1 << 20
	tests := []struct {
		name     string
		plan     Plan
		capacity int64
		want     PlanReason // 0: accepted
		sizes    []int64    // with want 0
		regionLn int64      // with want 0: every region's length
		inError  string     // with want != 0: words the error must hold
	}{
		{"default sizes on a large card", Plan{}, 1 << 30, 0, Sizes(512, MaxSize), 256 * MiB, ""},
		{"default sizes trimmed to a small card", Plan{}, 2 * MiB, 0, Sizes(512, 2*MiB), 2 * MiB, ""},
		{"sizes sorted, repeats dropped", Plan{Sizes: []int64{MiB, 4096, MiB}}, 1 << 30, 0, []int64{4096, MiB}, 256 * MiB, ""},
		{"regions grow to the largest size", Plan{Sizes: []int64{512 * MiB}}, 1 << 30, 0, []int64{512 * MiB}, 512 * MiB, ""},
		{"the whole card as one transfer", Plan{Sizes: []int64{64*MiB + 512}}, 64*MiB + 512, 0, []int64{64*MiB + 512}, 64*MiB + 512, ""},
		{"a size past the card", Plan{Sizes: []int64{512 * MiB}}, 256 * MiB, SizeOverCard, nil, 0, "card.img, which holds 256 MiB"},
		{"a size past the region", Plan{Sizes: []int64{8 * MiB}, Region: &Region{Offset: 0, Length: 4 * MiB}}, 1 << 30, SizeOverRegion, nil, 0, "4 MiB region"},
		{"default sizes inside a region", Plan{Region: &Region{Name: "region", Offset: 4 * MiB, Length: MiB}}, 1 << 30, 0, Sizes(512, MiB), MiB, ""},
		{"a size not in blocks", Plan{Sizes: []int64{1000}}, 1 << 30, SizeNotBlocks, nil, 0, "512-byte blocks"},
		{"a region past the card", Plan{Region: &Region{Offset: 30 * MiB, Length: 4 * MiB}}, 32 * MiB, RegionNotInCard, nil, 0, "inside card.img"},
		{"a region not in blocks", Plan{Region: &Region{Offset: 100, Length: 4 * MiB}}, 32 * MiB, RegionNotInCard, nil, 0, "512-byte blocks"},
		{"memory first", Plan{Sizes: []int64{64 << 30}}, 1 << 40, SizeOverMemory, nil, 0, "in memory"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			l, err := tt.plan.Layout("card.img", tt.capacity, 512)
			var pe *PlanError
			if tt.want != 0 {
				if !errors.As(err, &pe) || pe.Reason != tt.want || !strings.Contains(err.Error(), tt.inError) {
					t.Errorf("Layout = %+v, %v; want reason %d saying %q", l, err, tt.want, tt.inError)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if !slices.Equal(l.Sizes, tt.sizes) {
				t.Errorf("sizes %v, want %v", l.Sizes, tt.sizes)
			}
			for _, r := range l.Regions {
				if r.Length != tt.regionLn || r.Offset < 0 || r.Offset+r.Length > tt.capacity {
					t.Errorf("region %+v: want %d bytes inside the card's %d", r, tt.regionLn, tt.capacity)
				}
			}
		})
	}
}
