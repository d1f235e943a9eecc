//go:build !linux

package filedev

import (
	"fmt"
	"io"
	"os"
)

// openFile is the portable fallback: regular files through the page cache.
// Raw devices need the platform's own sizing and direct-I/O calls, which
// only the Linux build has; a disk node is only read here, for the reader
// benchmark's comparison (diskNode), sized by seeking to its end with
// 512-byte blocks, and not locked.
func openFile(path string, opts Options) (*Device, error) {
	path, raw, err := cacheNode(path, opts.Cache)
	if err != nil {
		return nil, fmt.Errorf("file target %s: %w", path, err)
	}
	st, exists, err := statTarget(path, opts)
	node := exists && !st.Mode().IsRegular()
	switch {
	case err != nil:
		return nil, err
	case node && !diskNode(opts):
		return nil, &TargetError{Path: path, Kind: ErrDeviceUnsupported, Size: opts.Size,
			What: "is not a regular file, and devices are file targets only on Linux"}
	case node:
		return openNode(path, opts, raw)
	}
	flags := os.O_RDWR
	switch {
	case opts.ReadOnly:
		flags = os.O_RDONLY
	case !exists:
		flags |= os.O_CREATE | os.O_EXCL
	}
	open := func(flags int) (*os.File, error) { return os.OpenFile(path, flags, 0o644) }
	f, err := open(flags)
	wp := false
	if err != nil && exists && !opts.ReadOnly {
		f, wp, err = openReadable(err, flags, open)
	}
	if err != nil {
		return nil, fmt.Errorf("file target %s: %w", path, err)
	}
	d := &Device{f: f, path: path, blockSize: fileBlockSize, cache: opts.Cache, wp: wp}
	if err := d.lock(opts.ReadOnly); err != nil {
		f.Close()
		return nil, err
	}
	size := opts.Size
	if size == 0 || wp { // a write-protected file is never extended
		size = st.Size()
	} else if !exists || st.Size() < size {
		if err := f.Truncate(size); err != nil {
			f.Close()
			if !exists {
				os.Remove(path) // this Open created it: leave nothing behind
			}
			return nil, fmt.Errorf("file target %s: extending to %d bytes: %w", path, size, err)
		}
	}
	d.blocks = size / fileBlockSize
	return d, nil
}

// openNode opens a disk node for reading; raw says it bypasses the cache.
func openNode(path string, opts Options, raw bool) (*Device, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, fmt.Errorf("file target %s: %w", path, err)
	}
	size, err := f.Seek(0, io.SeekEnd)
	if err != nil {
		f.Close()
		return nil, fmt.Errorf("file target %s: size: %w", path, err)
	}
	d := &Device{f: f, path: path, blockSize: fileBlockSize, cache: opts.Cache, blocks: size / fileBlockSize}
	d.direct.Store(raw)
	return d, nil
}

func (d *Device) retryBuffered(op func() error) error { return op() }

// dropCache: one file's cache cannot be dropped portably.
func dropCache(*Device) error { return nil }
