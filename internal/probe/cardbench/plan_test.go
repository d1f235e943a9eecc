package cardbench

import (
	"errors"
	"slices"
	"strings"
	"testing"

	"github.com/usbflash/usbflash/internal/failure"
)

// planWant is the usage error a plan gets: the setting at fault, and
// whether its sizes are not whole blocks (else a bound is passed); the
// zero value: accepted.
type planWant struct {
	setting failure.Setting
	blocks  bool
}

var (
	wantSizes       = planWant{setting: SettingSizes}
	wantSizesBlocks = planWant{setting: SettingSizes, blocks: true}
	wantRegion      = planWant{setting: SettingRegion}
	wantPreserve    = planWant{setting: SettingPreserve}
)

// isPlanError says whether err is the usage error want says.
func isPlanError(err error, want planWant) bool {
	var pe *PlanError
	return errors.As(err, &pe) && failure.SettingOf(err) == want.setting && failure.Of(err) == failure.Usage &&
		errors.Is(err, ErrNotWholeBlocks) == want.blocks
}

func TestPlanCheck(t *testing.T) {
	const GiB = 1 << 30
	tests := []struct {
		name string
		plan Plan
		want planWant
	}{
		{"default", Plan{}, planWant{}},
		{"the memory bound itself", Plan{Sizes: []int64{MaxTransferSize}}, planWant{}},
		{"64 GiB transfers", Plan{Sizes: []int64{4096, 64 * GiB}}, wantSizes},
		{"one byte past the bound", Plan{Sizes: []int64{MaxTransferSize + 512}}, wantSizes},
		{"preserve at the bound", Plan{Region: &Region{Length: MaxPreserve}, Preserve: true}, planWant{}},
		{"preserve past the bound", Plan{Region: &Region{Length: MaxPreserve + 512}, Preserve: true}, wantPreserve},
		{"a large region not preserved", Plan{Region: &Region{Length: 4 * GiB}}, planWant{}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := tt.plan.Check()
			switch {
			case tt.want == (planWant{}) && err != nil:
				t.Errorf("Check() = %v, want nil", err)
			case tt.want != (planWant{}) && !isPlanError(err, tt.want):
				t.Errorf("Check() = %v, want %+v", err, tt.want)
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
		want     planWant
		sizes    []int64 // accepted
		regionLn int64   // accepted: every region's length
		inError  string  // refused: words the error must hold
	}{
		{"default sizes on a large card", Plan{}, 1 << 30, planWant{}, Sizes(512, MaxSize), 256 * MiB, ""},
		{"default sizes trimmed to a small card", Plan{}, 2 * MiB, planWant{}, Sizes(512, 2*MiB), 2 * MiB, ""},
		{"sizes sorted, repeats dropped", Plan{Sizes: []int64{MiB, 4096, MiB}}, 1 << 30, planWant{}, []int64{4096, MiB}, 256 * MiB, ""},
		{"regions grow to the largest size", Plan{Sizes: []int64{512 * MiB}}, 1 << 30, planWant{}, []int64{512 * MiB}, 512 * MiB, ""},
		{"the whole card as one transfer", Plan{Sizes: []int64{64*MiB + 512}}, 64*MiB + 512, planWant{}, []int64{64*MiB + 512}, 64*MiB + 512, ""},
		{"a size past the card", Plan{Sizes: []int64{512 * MiB}}, 256 * MiB, wantSizes, nil, 0, "card.img, which holds 256 MiB"},
		{"a size past the region", Plan{Sizes: []int64{8 * MiB}, Region: &Region{Offset: 0, Length: 4 * MiB}}, 1 << 30, wantSizes, nil, 0, "4 MiB region"},
		{"default sizes inside a region", Plan{Region: &Region{Name: "region", Offset: 4 * MiB, Length: MiB}}, 1 << 30, planWant{}, Sizes(512, MiB), MiB, ""},
		{"a size not in blocks", Plan{Sizes: []int64{1000}}, 1 << 30, wantSizesBlocks, nil, 0, "512-byte blocks"},
		{"a region past the card", Plan{Region: &Region{Offset: 30 * MiB, Length: 4 * MiB}}, 32 * MiB, wantRegion, nil, 0, "inside card.img"},
		{"a region not in blocks", Plan{Region: &Region{Offset: 100, Length: 4 * MiB}}, 32 * MiB, wantRegion, nil, 0, "512-byte blocks"},
		{"memory first", Plan{Sizes: []int64{64 << 30}}, 1 << 40, wantSizes, nil, 0, "in memory"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			l, err := tt.plan.Layout("card.img", tt.capacity, 512)
			if tt.want != (planWant{}) {
				if !isPlanError(err, tt.want) || !strings.Contains(err.Error(), tt.inError) {
					t.Errorf("Layout = %+v, %v; want %+v saying %q", l, err, tt.want, tt.inError)
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
