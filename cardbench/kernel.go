package cardbench

import (
	"context"
	"fmt"
	"io"
	"os"
	"strings"
)

// PathKernelBuffered names the points of the kernel's cached path;
// PathKernelDirect (per system) those of its uncached one.
const PathKernelBuffered = "kernel buffered"

// KernelDevice reads a block device (or an image file) through the
// kernel, for comparison with the direct path: with O_DIRECT, or through
// the page cache, which it drops before each point. It only reads.
type KernelDevice struct {
	f         *os.File
	path      string
	direct    bool
	blockSize int
	blocks    int64
}

// OpenKernel opens path read-only, with O_DIRECT when direct is set.
func OpenKernel(path string, direct bool) (*KernelDevice, error) {
	f, err := openKernel(path, direct)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	size, err := f.Seek(0, io.SeekEnd)
	if err != nil {
		f.Close()
		return nil, fmt.Errorf("%s: size: %w", path, err)
	}
	bs := logicalBlockSize(f)
	if size < int64(bs) {
		f.Close()
		return nil, fmt.Errorf("%s: %d bytes, less than one %d-byte block (no medium?)", path, size, bs)
	}
	return &KernelDevice{f: f, path: path, direct: direct, blockSize: bs, blocks: size / int64(bs)}, nil
}

// Path names the kernel path for points.
func (k *KernelDevice) Path() string {
	if k.direct {
		return PathKernelDirect
	}
	return PathKernelBuffered
}

func (k *KernelDevice) String() string { return k.path }
func (k *KernelDevice) Close() error   { return k.f.Close() }

// BlockSize is the device's logical block size.
func (k *KernelDevice) BlockSize() int { return k.blockSize }

// BlockCount is the number of logical blocks.
func (k *KernelDevice) BlockCount() int64 { return k.blocks }

// ReadBlocks reads at lba with one pread; the kernel splits it into
// requests as it would for any program.
func (k *KernelDevice) ReadBlocks(ctx context.Context, lba int64, p []byte) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	if _, err := k.f.ReadAt(p, lba*int64(k.blockSize)); err != nil {
		return fmt.Errorf("%s: read %d bytes at LBA %d: %w", k.path, len(p), lba, err)
	}
	return nil
}

// WriteBlocks refuses: the comparison only reads.
func (k *KernelDevice) WriteBlocks(_ context.Context, lba int64, _ []byte) error {
	return fmt.Errorf("%s: LBA %d: the kernel comparison path only reads", k.path, lba)
}

// Sync has nothing to flush.
func (k *KernelDevice) Sync(context.Context) error { return nil }

// DropCache empties the page cache of the device, so a buffered read goes
// to the card. O_DIRECT bypasses it; there is nothing to drop.
func (k *KernelDevice) DropCache() error {
	if k.direct {
		return nil
	}
	return dropCache(k.f)
}

// diskNodes returns macOS's raw and buffered nodes of the disk path names,
// given either (/dev/rdisk4 or /dev/disk4); any other path is both.
func diskNodes(path string) (raw, buffered string) {
	if n, ok := strings.CutPrefix(path, "/dev/rdisk"); ok {
		return path, "/dev/disk" + n
	}
	if n, ok := strings.CutPrefix(path, "/dev/disk"); ok {
		return "/dev/rdisk" + n, path
	}
	return path, path
}
