package cardbench

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"testing"

	"github.com/usbflash/usbflash/internal/failure"
	"github.com/usbflash/usbflash/internal/testkit/factsonly"
)

// oneMiB is a card of 1 MiB that answers nothing but its size.
type oneMiB struct{}

func (oneMiB) BlockSize() int                                   { return 512 }
func (oneMiB) BlockCount() int64                                { return 2048 }
func (oneMiB) ReadBlocks(context.Context, int64, []byte) error  { return nil }
func (oneMiB) WriteBlocks(context.Context, int64, []byte) error { return nil }
func (oneMiB) Sync(context.Context) error                       { return nil }

// TestErrorTexts: every error a bench gives says its class and states
// facts only, as the calls that refuse make them: the plans no card can
// run or this one cannot, a sweep of sizes that are not whole blocks, the
// kernel's path that only reads, a run that stopped.
func TestErrorTexts(t *testing.T) {
	layout := func(p Plan) error {
		_, err := p.Layout("sim:c.img", 1<<20, 512)
		return err
	}
	_, sweep := Sweep(context.Background(), oneMiB{}, SweepOptions{Op: OpRead, Sizes: []int64{1000}})
	disk := filepath.Join(t.TempDir(), "disk.img")
	if err := os.WriteFile(disk, make([]byte, 1<<20), 0o644); err != nil {
		t.Fatal(err)
	}
	kernel, err := OpenKernel(disk, false)
	if err != nil {
		t.Fatal(err)
	}
	defer kernel.Close()
	wrote := &Region{Name: "end", Offset: 512 << 10, Length: 64 << 10}
	for _, tc := range []struct {
		name string
		err  error
		want failure.Class
	}{
		{"size past memory", Plan{Sizes: []int64{MaxTransferSize + 512}}.Check(), failure.Usage},
		{"preserved region past memory", Plan{Region: &Region{Length: MaxPreserve + 512}, Preserve: true}.Check(), failure.Usage},
		{"size not whole blocks", layout(Plan{Sizes: []int64{1000}}), failure.Usage},
		{"size past the card", layout(Plan{Sizes: []int64{2 << 20}}), failure.Usage},
		{"size past the region", layout(Plan{Sizes: []int64{64 << 10}, Region: &Region{Length: 4096}}), failure.Usage},
		{"region past the card", layout(Plan{Region: &Region{Offset: 1 << 20, Length: 4096}}), failure.Usage},
		{"a card of no block", func() error { _, err := (Plan{}).Layout("sim:c.img", 0, 512); return err }(), failure.Usage},
		{"sweep of parts of blocks", sweep, failure.Unknown},
		{"the kernel's path writes nothing", kernel.WriteBlocks(context.Background(), 8, make([]byte, 512)), failure.Unknown},
		{"stopped, nothing written", &StoppedError{Device: "sim:c.img", Err: errors.New("LBA 8: medium error")}, failure.Unknown},
		{"stopped over the write region", &StoppedError{Device: "sim:c.img", Wrote: wrote, Err: errors.New("LBA 8: medium error")}, failure.Unknown},
		{"cancelled over the write region", &StoppedError{Device: "sim:c.img", Wrote: wrote, Err: context.Canceled}, failure.Interrupted},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if tc.err == nil {
				t.Fatal("no error")
			}
			if got := failure.Of(tc.err); got != tc.want {
				t.Errorf("class %v, want %v", got, tc.want)
			}
			factsonly.Check(t, tc.err.Error())
		})
	}
}
