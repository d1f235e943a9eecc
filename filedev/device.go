// Package filedev is a block device made of a regular file or a kernel
// block device, reached through the kernel (O_DIRECT where it works): the
// file: target, beside usbms.LUN as a pipeline.BlockDevice.
package filedev

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"sync/atomic"
)

// fileBlockSize is the block size of a regular file target: the sector size
// every image format assumes.
const fileBlockSize = 512

// ErrMounted is wrapped by Open's refusal of a block device whose
// partitions are mounted.
var ErrMounted = errors.New("refusing to write a disk in use")

// Options tune Open.
type Options struct {
	// Size, for a regular file, creates it if missing and extends it to at
	// least Size bytes; the device's capacity is then Size. A multiple of
	// 512. 0 means use the existing file's size.
	Size int64
	// Force opens a block device even though some of its partitions are
	// mounted.
	Force bool
	// MountInfo is the mount table to check; "" means /proc/self/mountinfo.
	MountInfo string
	// SysBlock is the sysfs directory of block devices by number; "" means
	// /sys/dev/block. Used to find which mounts are partitions of the target.
	SysBlock string
}

// Device is a regular file or a kernel block device used as a
// BlockDevice, opened with O_DIRECT where the filesystem allows it so the
// page cache does not sit between the pipeline and the medium.
type Device struct {
	f         *os.File
	path      string
	blockSize int
	blocks    int64
	direct    atomic.Bool // cleared if the kernel rejects an O_DIRECT transfer
}

// Open opens path for reading and writing blocks. See Options.
func Open(path string, opts Options) (*Device, error) {
	if opts.Size < 0 || opts.Size%fileBlockSize != 0 {
		return nil, fmt.Errorf("file target %s: size %d is not a multiple of %d bytes", path, opts.Size, fileBlockSize)
	}
	return openFile(path, opts)
}

// statTarget looks at a file target before it is opened: a missing file is
// created only when a size is given.
func statTarget(path string, opts Options) (st fs.FileInfo, exists bool, err error) {
	st, err = os.Stat(path)
	switch {
	case err == nil:
		return st, true, nil
	case !errors.Is(err, fs.ErrNotExist):
		return nil, false, fmt.Errorf("file target %s: %w", path, err)
	case opts.Size == 0:
		return nil, false, fmt.Errorf("file target %s does not exist: give a size to create an image file", path)
	}
	return nil, false, nil
}

// Direct reports whether transfers bypass the page cache (O_DIRECT). It can
// turn false after opening, when the filesystem refuses a direct transfer
// and the device falls back to buffered I/O.
func (d *Device) Direct() bool { return d.direct.Load() }

// String names the device in messages.
func (d *Device) String() string { return "file:" + d.path }

// BlockSize implements BlockDevice.
func (d *Device) BlockSize() int { return d.blockSize }

// BlockCount implements BlockDevice.
func (d *Device) BlockCount() int64 { return d.blocks }

// Close closes the file.
func (d *Device) Close() error { return d.f.Close() }

// ReadBlocks implements BlockDevice.
func (d *Device) ReadBlocks(ctx context.Context, lba int64, p []byte) error {
	if err := d.check(lba, p); err != nil {
		return err
	}
	return d.retryBuffered(func() error {
		_, err := d.f.ReadAt(p, lba*int64(d.blockSize))
		return err
	})
}

// WriteBlocks implements BlockDevice.
func (d *Device) WriteBlocks(ctx context.Context, lba int64, p []byte) error {
	if err := d.check(lba, p); err != nil {
		return err
	}
	return d.retryBuffered(func() error {
		_, err := d.f.WriteAt(p, lba*int64(d.blockSize))
		return err
	})
}

// Sync implements BlockDevice with fsync.
func (d *Device) Sync(ctx context.Context) error { return d.f.Sync() }

func (d *Device) check(lba int64, p []byte) error {
	if len(p)%d.blockSize != 0 {
		return fmt.Errorf("%d bytes is not a whole number of %d-byte blocks", len(p), d.blockSize)
	}
	if n := int64(len(p) / d.blockSize); lba < 0 || lba+n > d.blocks {
		return fmt.Errorf("blocks %d-%d are outside the %d blocks of %s", lba, lba+n-1, d.blocks, d.path)
	}
	return nil
}
