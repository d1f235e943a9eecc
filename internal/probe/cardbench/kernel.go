package cardbench

import (
	"context"
	"fmt"

	"github.com/usbflash/usbflash/pipeline/filedev"
)

// PathKernelBuffered names the points of the kernel's cached path;
// PathKernelDirect those of its uncached one, named for how this system
// bypasses the cache (O_DIRECT on Linux, the raw node on macOS).
const (
	PathKernelBuffered = "kernel buffered"
	PathKernelDirect   = "kernel " + filedev.BypassName
)

// KernelDevice reads a block device (or an image file) through the
// kernel, for comparison with the direct path: bypassing the page cache
// (filedev.CacheBypass), or through it (filedev.CacheUse), dropping it
// before each point. It only reads. It is a filedev.Device, so the kernel
// is reached one way only.
type KernelDevice struct {
	*filedev.Device
	direct bool
}

// OpenKernel opens path read-only, bypassing the page cache when direct
// is set.
func OpenKernel(path string, direct bool) (*KernelDevice, error) {
	cache := filedev.CacheUse
	if direct {
		cache = filedev.CacheBypass
	}
	d, err := filedev.Open(path, filedev.Options{ReadOnly: true, Cache: cache})
	if err != nil {
		return nil, err
	}
	if d.BlockCount() == 0 {
		d.Close()
		return nil, fmt.Errorf("%s: less than one %d-byte block (no medium?)", path, d.BlockSize())
	}
	return &KernelDevice{Device: d, direct: direct}, nil
}

// Path names the kernel path for points.
func (k *KernelDevice) Path() string {
	if k.direct {
		return PathKernelDirect
	}
	return PathKernelBuffered
}

// WriteBlocks refuses: the comparison only reads.
func (k *KernelDevice) WriteBlocks(_ context.Context, lba int64, _ []byte) error {
	return fmt.Errorf("%s: LBA %d: the kernel comparison path only reads", k, lba)
}
