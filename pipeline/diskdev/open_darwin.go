package diskdev

import (
	"context"
	"errors"
	"fmt"
	"os"
	"strings"

	"golang.org/x/sys/unix"

	"github.com/usbflash/usbflash/internal/lib/diskutil"
	"github.com/usbflash/usbflash/internal/lib/flock"
)

// authopenPath is macOS's helper that opens a file a user may not open,
// once an administrator authorizes it, and hands the open descriptor to
// its caller.
const authopenPath = "/usr/libexec/authopen"

// RawNode is the raw (uncached) node of a macOS disk named any way:
// /dev/rdisk4 of /dev/disk4, disk4 or /dev/rdisk4. The buffered node
// /dev/diskN is 14x slower for a write (docs/DESIGN.md).
func RawNode(node string) string {
	id := strings.TrimPrefix(strings.TrimPrefix(node, "/dev/"), "r")
	return "/dev/r" + id
}

// Open opens a whole disk's raw node for block I/O: as root with
// O_EXLOCK (no other program holds it for writing), without root through
// authopen, which asks for an administrator's authorization and hands
// over the open descriptor (then flock takes the same lock). F_NOCACHE
// keeps the buffer cache out; the block size, count and largest transfer
// are the disk's own (DKIOCGETBLOCKSIZE, DKIOCGETBLOCKCOUNT,
// DKIOCGETMAXBYTECOUNTWRITE); Sync flushes its cache
// (DKIOCSYNCHRONIZECACHE); Eject closes it and runs diskutil eject. The
// volumes on it must be unmounted before (drive does: diskutil
// unmountDisk).
func Open(ctx context.Context, node string, opts Options) (*Device, error) {
	raw := RawNode(node)
	flags := unix.O_RDWR
	if opts.ReadOnly {
		flags = unix.O_RDONLY
	}
	f, err := openRaw(ctx, raw, flags, opts.ReadOnly)
	if err != nil {
		return nil, err
	}
	d, err := describeRaw(f, raw, opts)
	if err != nil {
		f.Close()
		return nil, err
	}
	return d, nil
}

// openRaw opens raw itself as root, through authopen otherwise.
func openRaw(ctx context.Context, raw string, flags int, readOnly bool) (*os.File, error) {
	if os.Geteuid() != 0 {
		f, err := receiveFD(ctx, raw, authopenPath, authopenArgs(raw, flags)...)
		if err != nil {
			return nil, &PermissionError{Path: raw, Need: "root or an administrator's authorization", Err: err}
		}
		if !readOnly {
			if err := flock.Lock(f, true); err != nil {
				f.Close()
				return nil, fmt.Errorf("%s: %w", raw, err)
			}
		}
		return f, nil
	}
	fl := flags | unix.O_CLOEXEC
	if !readOnly {
		// O_EXLOCK takes flock's exclusive lock as it opens; with
		// O_NONBLOCK a disk another program holds fails at once
		// instead of waiting for it.
		fl |= unix.O_EXLOCK | unix.O_NONBLOCK
	}
	fd, err := unix.Open(raw, fl, 0)
	switch {
	case errors.Is(err, unix.EWOULDBLOCK), errors.Is(err, unix.EAGAIN):
		return nil, fmt.Errorf("%s: %w", raw, flock.ErrLocked)
	case errors.Is(err, unix.EACCES), errors.Is(err, unix.EPERM):
		return nil, &PermissionError{Path: raw, Need: "root", Err: err}
	case err != nil:
		return nil, &os.PathError{Op: "open", Path: raw, Err: err}
	}
	if !readOnly {
		if cur, err := unix.FcntlInt(uintptr(fd), unix.F_GETFL, 0); err == nil {
			unix.FcntlInt(uintptr(fd), unix.F_SETFL, cur&^unix.O_NONBLOCK)
		}
	}
	return os.NewFile(uintptr(fd), raw), nil
}

// describeRaw asks the open disk its facts and turns the buffer cache
// off.
func describeRaw(f *os.File, raw string, opts Options) (*Device, error) {
	rc, err := f.SyscallConn()
	if err != nil {
		return nil, err
	}
	var bs, count, maxRead, maxWrite, writable int
	var ioErr, ncErr, wErr error
	if err := rc.Control(func(fd uintptr) {
		_, ncErr = unix.FcntlInt(fd, unix.F_NOCACHE, 1)
		if bs, ioErr = unix.IoctlGetInt(int(fd), dkiocGetBlockSize); ioErr != nil {
			ioErr = fmt.Errorf("DKIOCGETBLOCKSIZE: %w", ioErr)
			return
		}
		if count, ioErr = unix.IoctlGetInt(int(fd), dkiocGetBlockCount); ioErr != nil {
			ioErr = fmt.Errorf("DKIOCGETBLOCKCOUNT: %w", ioErr)
			return
		}
		// Not every driver answers these: no limit known, then.
		maxRead, _ = unix.IoctlGetInt(int(fd), dkiocGetMaxByteCountRead)
		maxWrite, _ = unix.IoctlGetInt(int(fd), dkiocGetMaxByteCountWrite)
		writable, wErr = unix.IoctlGetInt(int(fd), dkiocIsWritable)
	}); err != nil {
		return nil, err
	}
	switch {
	case ncErr != nil:
		return nil, fmt.Errorf("%s: F_NOCACHE: %w", raw, ncErr)
	case ioErr != nil:
		return nil, fmt.Errorf("%s: %w", raw, ioErr)
	case bs <= 0 || count <= 0:
		return nil, fmt.Errorf("%s: the disk reports %d blocks of %d bytes", raw, count, bs)
	}
	maxBytes := int64(maxWrite)
	if maxRead > 0 && (maxBytes == 0 || int64(maxRead) < maxBytes) {
		maxBytes = int64(maxRead) // verify reads with the write's transfers
	}
	rf := &rawFile{File: f}
	cfg := config{
		name: "disk:" + raw, blockSize: bs, blocks: int64(count), maxBytes: maxBytes,
		wp:      wErr == nil && writable == 0 && !opts.ReadOnly,
		release: opts.Release,
		eject: func(ctx context.Context) error {
			// diskutil eject waits for every opener: close first.
			if err := f.Close(); err != nil && !errors.Is(err, os.ErrClosed) {
				return err
			}
			return diskutil.Eject(ctx, diskutil.Exec, diskutil.WholeDiskOf(raw))
		},
	}
	return newDevice(rf, cfg), nil
}

// rawFile is a raw disk node whose Sync flushes the disk's cache: with
// F_NOCACHE nothing waits in the buffer cache, and F_FULLFSYNC (what
// os.File.Sync asks on macOS) is a file system's call, not a disk's.
type rawFile struct{ *os.File }

func (f *rawFile) Sync() error {
	rc, err := f.SyscallConn()
	if err != nil {
		return err
	}
	var ioErr error
	if err := rc.Control(func(fd uintptr) { ioErr = unix.IoctlSetInt(int(fd), dkiocSynchronizeCache, 0) }); err != nil {
		return err
	}
	if ioErr != nil {
		return fmt.Errorf("DKIOCSYNCHRONIZECACHE: %w", ioErr)
	}
	return nil
}
