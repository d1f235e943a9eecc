package cardbench

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/usbflash/usbflash/internal/testkit/testpattern"
)

// The buffered kernel path drops its cache before each point: Sweep finds
// DropCache on the device itself.
var _ CacheDropper = (*KernelDevice)(nil)

// TestKernelPaths reads an image file through both kernel paths, as
// --compare reads the reader's disk: the points are named for the path,
// every region is read, and nothing is ever written.
func TestKernelPaths(t *testing.T) {
	path := filepath.Join(t.TempDir(), "disk.img")
	img := testpattern.Bytes(4<<20, 9)
	if err := os.WriteFile(path, img, 0o644); err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	for _, direct := range []bool{true, false} {
		k, err := OpenKernel(path, direct)
		if err != nil {
			if direct && strings.Contains(err.Error(), "uncached") {
				t.Logf("no uncached path here: %v", err)
				continue
			}
			t.Fatal(err)
		}
		want := PathKernelBuffered
		if direct {
			want = PathKernelDirect
		}
		if k.Path() != want || k.BlockSize() != 512 || k.BlockCount() != int64(len(img))/512 {
			t.Errorf("direct %v: Path %q, %d blocks of %d; want %q, %d of 512", direct, k.Path(), k.BlockCount(), k.BlockSize(), want, len(img)/512)
		}
		if err := k.WriteBlocks(ctx, 0, make([]byte, 512)); err == nil || !strings.Contains(err.Error(), "only reads") {
			t.Errorf("WriteBlocks = %v, want a refusal", err)
		}
		regions := ReadRegions(int64(len(img)), 1<<20, 64<<10)
		points, err := Sweep(ctx, k, SweepOptions{Path: k.Path(), Op: OpRead, Sizes: []int64{64 << 10, 256 << 10},
			Regions: regions, PointTime: time.Millisecond})
		if err != nil {
			t.Fatal(err)
		}
		if len(points) != 2*len(regions) {
			t.Errorf("%d points, want %d", len(points), 2*len(regions))
		}
		for _, p := range points {
			if p.Path != want || p.Bytes == 0 {
				t.Errorf("point %+v: want path %q and bytes read", p, want)
			}
		}
		k.Close()
	}
	after, err := os.ReadFile(path)
	if err != nil || string(after) != string(img) {
		t.Errorf("the image changed (%v)", err)
	}
}

func TestOpenKernelRefuses(t *testing.T) {
	dir := t.TempDir()
	tiny := filepath.Join(dir, "tiny.img")
	if err := os.WriteFile(tiny, make([]byte, 100), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, path := range []string{tiny, filepath.Join(dir, "missing.img")} {
		if k, err := OpenKernel(path, false); err == nil {
			k.Close()
			t.Errorf("OpenKernel(%s) opened", path)
		} else if !strings.Contains(err.Error(), path) {
			t.Errorf("OpenKernel(%s) = %v, want the path named", path, err)
		}
	}
}
