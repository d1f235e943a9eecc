//go:build !linux

package filedev

import (
	"fmt"
	"os"
)

// openFile is the portable fallback: regular files through the page cache.
// Raw devices need the platform's own sizing and direct-I/O calls, which
// only the Linux build has.
func openFile(path string, opts Options) (*Device, error) {
	st, exists, err := statTarget(path, opts)
	switch {
	case err != nil:
		return nil, err
	case exists && !st.Mode().IsRegular():
		return nil, fmt.Errorf("file target %s is not a regular file: devices are file targets only on Linux; use a usb: target: %w", path, ErrBadTarget)
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
	d := &Device{f: f, path: path, blockSize: fileBlockSize, wp: wp}
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

func (d *Device) retryBuffered(op func() error) error { return op() }
