//go:build linux

package filedev

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"syscall"

	"golang.org/x/sys/unix"

	"github.com/usbflash/usbflash/internal/lib/linuxdisk"
)

// BypassName names how CacheBypass bypasses the page cache here.
const BypassName = "O_DIRECT"

// diskNode: Linux's disks are block devices, which every mode opens.
func diskNode(Options) bool { return false }

func openFile(path string, opts Options) (*Device, error) {
	st, exists, err := statTarget(path, opts)
	if err != nil {
		return nil, err
	}
	isBlock := exists && st.Mode()&fs.ModeDevice != 0
	if isBlock && opts.Size != 0 {
		return nil, &TargetError{Path: path, Kind: ErrSizedDevice, Size: opts.Size,
			What: fmt.Sprintf("is a block device, whose size is fixed: size=%d does not apply", opts.Size)}
	}
	flags := os.O_RDWR
	switch {
	case opts.ReadOnly:
		flags = os.O_RDONLY
	case isBlock && !opts.Force:
		if err := checkNotInUse(path, st, opts); err != nil {
			return nil, err
		}
		// As bmaptool does: the kernel refuses an exclusive open of a
		// disk that is mounted or held (EBUSY), closing the gap between
		// the check above and the first write.
		flags |= os.O_EXCL
	case !exists:
		flags |= os.O_CREATE | os.O_EXCL
	}
	d := &Device{path: path, blockSize: fileBlockSize, cache: opts.Cache}
	d.f, err = d.open(path, flags)
	if err != nil && exists && !opts.ReadOnly {
		d.f, d.wp, err = openReadable(err, flags, func(flags int) (*os.File, error) { return d.open(path, flags) })
	}
	switch {
	case isBlock && errors.Is(err, syscall.EBUSY):
		return nil, fmt.Errorf("file target %s: the kernel refused an exclusive open (%w): %w", path, err, linuxdisk.ErrInUse)
	case err != nil:
		return nil, fmt.Errorf("file target %s: %w", path, err)
	}
	// A file this Open created (O_EXCL) cannot be locked by anyone else yet.
	if err := d.lock(opts.ReadOnly); err != nil {
		d.f.Close()
		return nil, err
	}
	if isBlock && opts.ReadOnly {
		// The check a write refuses with, as a fact to report.
		if err := checkNotInUse(path, st, opts); errors.Is(err, linuxdisk.ErrInUse) {
			d.inUse = err
		}
	}
	if err := d.size(isBlock, opts.Size); err != nil {
		d.f.Close()
		if !exists {
			os.Remove(path) // this Open created it: leave nothing behind
		}
		return nil, fmt.Errorf("file target %s: %w", path, err)
	}
	return d, nil
}

// checkNotInUse refuses a block device that the system uses: it or a
// partition is mounted or active swap, or a dm/md device holds it.
func checkNotInUse(path string, st fs.FileInfo, opts Options) error {
	_, rdev, ok := linuxdisk.FileDevs(st)
	if !ok {
		return nil
	}
	view := opts.sys
	if view == (linuxdisk.Sys{}) {
		view = linuxdisk.Host()
	}
	err := view.CheckBlockDevice(path, rdev)
	if err != nil && !errors.Is(err, linuxdisk.ErrInUse) {
		return fmt.Errorf("file target %s: %w: %w", path, linuxdisk.ErrInUseUnknown, err)
	}
	return err
}

// open opens path as d.cache says: with O_DIRECT (CacheBypass), without
// (CacheUse), or with O_DIRECT where the filesystem has it and through the
// page cache where not (tmpfs, some FUSE).
func (d *Device) open(path string, flags int) (*os.File, error) {
	if d.cache == CacheUse {
		return os.OpenFile(path, flags, 0o644)
	}
	f, err := openDirect(path, flags)
	switch {
	case err == nil:
		d.direct.Store(true)
		return f, nil
	case d.cache == CacheBypass && errors.Is(err, syscall.EINVAL):
		return nil, fmt.Errorf("the filesystem has no O_DIRECT: %w", err)
	case errors.Is(err, syscall.EINVAL) && flags&os.O_CREATE != 0:
		// A filesystem without O_DIRECT (tmpfs) refuses the flag only
		// after Linux has created the file: the exclusive create this
		// call asked for has happened, so open what it created.
		return os.OpenFile(path, flags&^os.O_EXCL, 0o644)
	case errors.Is(err, syscall.EINVAL):
		return os.OpenFile(path, flags, 0o644)
	}
	return nil, err
}

func openDirect(path string, flags int) (*os.File, error) {
	return os.OpenFile(path, flags|syscall.O_DIRECT, 0o644)
}

// size sets the block size and count: from the kernel for a block device,
// from the file (extended to want when given) for a regular file.
func (d *Device) size(isBlock bool, want int64) error {
	rc, err := d.f.SyscallConn()
	if err != nil {
		return err
	}
	if isBlock {
		var bs, ro int
		var bytes uint64
		var ioErr error
		if err := rc.Control(func(fd uintptr) {
			if bs, ioErr = unix.IoctlGetInt(int(fd), unix.BLKSSZGET); ioErr != nil {
				return
			}
			if bytes, ioErr = unix.IoctlGetUint64(int(fd), unix.BLKGETSIZE64); ioErr != nil {
				return
			}
			// Set read-only (blockdev --setro, a read-only loop
			// device): writes would fail with EPERM.
			if r, err := unix.IoctlGetInt(int(fd), unix.BLKROGET); err == nil {
				ro = r
			}
		}); err != nil {
			return err
		}
		if ioErr != nil {
			return fmt.Errorf("asking the kernel for the block size and count: %w", ioErr)
		}
		if bs <= 0 {
			return fmt.Errorf("kernel reports block size %d", bs)
		}
		d.blockSize, d.blocks = bs, int64(bytes)/int64(bs)
		d.wp = d.wp || ro != 0
		return nil
	}
	st, err := d.f.Stat()
	if err != nil {
		return err
	}
	if want == 0 || d.wp {
		// A write-protected file is never extended: it holds what it
		// holds, and the check before writing refuses it.
		d.blocks = st.Size() / fileBlockSize
		return nil
	}
	if st.Size() < want {
		if err := d.f.Truncate(want); err != nil {
			return fmt.Errorf("extending to %d bytes: %w", want, err)
		}
	}
	d.blocks = want / fileBlockSize
	return nil
}

// retryBuffered runs op and, if the kernel rejects it as a direct transfer
// (EINVAL: a buffer or length the filesystem cannot do directly), turns
// O_DIRECT off and runs it once more through the page cache. With
// CacheBypass the error stands: that device is direct or nothing.
func (d *Device) retryBuffered(op func() error) error {
	err := op()
	if err == nil || !d.direct.Load() || d.cache != CacheAuto || !errors.Is(err, syscall.EINVAL) {
		return err
	}
	rc, cerr := d.f.SyscallConn()
	if cerr != nil {
		return err
	}
	var ferr error
	if cerr := rc.Control(func(fd uintptr) {
		var fl int
		if fl, ferr = unix.FcntlInt(fd, unix.F_GETFL, 0); ferr == nil {
			_, ferr = unix.FcntlInt(fd, unix.F_SETFL, fl&^unix.O_DIRECT)
		}
	}); cerr != nil || ferr != nil {
		return err
	}
	d.direct.Store(false)
	return op()
}

// dropCache drops the clean cached pages of the whole file or device. A
// block device's cache goes with BLKFLSBUF as well, which fadvise alone
// does not always empty.
func dropCache(d *Device) error {
	rc, err := d.f.SyscallConn()
	if err != nil {
		return err
	}
	var ferr error
	if err := rc.Control(func(fd uintptr) {
		_ = unix.IoctlSetInt(int(fd), unix.BLKFLSBUF, 0) // only block devices have it
		ferr = unix.Fadvise(int(fd), 0, 0, unix.FADV_DONTNEED)
	}); err != nil {
		return err
	}
	return ferr
}
