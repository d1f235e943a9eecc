// Package filedev is a block device made of a regular file or a kernel
// block device, reached through the kernel (O_DIRECT where it works): the
// file: target, beside usbms.LUN as a blockdev.Device, and the one way
// usbflash reaches the kernel's disks at all, the reader benchmark's
// cached and uncached comparison paths included (see Cache).
//
// What it promises an importer: a target is locked while open, so two
// opens of one card are refused (ErrLocked); a block device the system
// uses is refused before anything is written (ErrInUse, or
// ErrInUseUnknown when its use cannot be read) unless Options.Force; a
// path that cannot be a target at all is a *TargetError matching
// ErrBadTarget, whose Kind is one of Kinds. A Device is a
// blockdev.Device with the optional interfaces it can honour.
package filedev

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"syscall"

	"github.com/usbflash/usbflash/internal/failure"
	"github.com/usbflash/usbflash/internal/lib/flock"
	"github.com/usbflash/usbflash/internal/lib/linuxdisk"
	"github.com/usbflash/usbflash/pipeline/blockdev"
)

// fileBlockSize is the block size of a regular file target: the sector size
// every image format assumes.
const fileBlockSize = 512

// ErrBadTarget is wrapped by Open's refusal of a path that cannot be a
// file target at all: a directory, a character device, a FIFO, a missing
// directory, a path under /dev that is not a device, a size that does not
// fit the file. It is the user's mistake, not the device's failure. The
// refusal is a *TargetError, whose Kind says which.
var ErrBadTarget = errors.New("not a usable file target")

// TargetError is Open's refusal of a path that cannot be a file target; it
// matches ErrBadTarget. It states facts only: what the path is, and why
// that cannot be a target.
type TargetError struct {
	Path string
	Kind error  // one of Kinds
	What string // the facts, as in "is a directory"
	// Size is the size asked for (Options.Size), FileSize the existing
	// file's, when the refusal is about them.
	Size, FileSize int64
}

func (e *TargetError) Error() string {
	return fmt.Sprintf("file target %s %s: %v", e.Path, e.What, ErrBadTarget)
}

// Class is Usage: the path is the caller's mistake, not the device's
// failure.
func (e *TargetError) Class() failure.Class { return failure.Usage }

func (e *TargetError) Unwrap() []error { return []error{ErrBadTarget, e.Kind} }

// Kinds of TargetError: why a path cannot be a file target, each a
// sentinel of class Usage that errors.Is finds through the refusal.
var (
	// ErrBadSize: the size asked for is negative or not a multiple of 512.
	ErrBadSize = failure.New(failure.Usage, "size not a multiple of 512 bytes")
	// ErrMissing: the path does not exist, and it is only to be read.
	ErrMissing = failure.New(failure.Usage, "does not exist")
	// ErrNeedsSize: the path does not exist, and no size was given to
	// create it with.
	ErrNeedsSize = failure.New(failure.Usage, "no size to create it with")
	// ErrNoDirectory: the path does not exist and cannot be created: its
	// directory does not exist.
	ErrNoDirectory = failure.New(failure.Usage, "no directory to create it in")
	// ErrNotADevice: the path is under /dev but is no device: missing, or a
	// regular file.
	ErrNotADevice = failure.New(failure.Usage, "not a device")
	// ErrWrongType: a directory, a character device, a FIFO or a socket.
	ErrWrongType = failure.New(failure.Usage, "neither a regular file nor a block device")
	// ErrWouldShrink: a regular file larger than the size asked for.
	ErrWouldShrink = failure.New(failure.Usage, "larger than the size asked for")
	// ErrShortReadOnly: a regular file smaller than the size asked for,
	// opened read-only, so it cannot be extended.
	ErrShortReadOnly = failure.New(failure.Usage, "smaller than the size asked for, and read-only")
	// ErrSizedDevice: a block device, whose size is fixed, given a size.
	ErrSizedDevice = failure.New(failure.Usage, "a block device given a size")
	// ErrDeviceUnsupported: not a regular file, on a platform where only
	// regular files are file targets.
	ErrDeviceUnsupported = failure.New(failure.Usage, "not a regular file")
)

// Kinds lists every kind of TargetError, for tables keyed by them.
func Kinds() []error {
	return []error{ErrBadSize, ErrMissing, ErrNeedsSize, ErrNoDirectory, ErrNotADevice, ErrWrongType,
		ErrWouldShrink, ErrShortReadOnly, ErrSizedDevice, ErrDeviceUnsupported}
}

// Options tune Open.
type Options struct {
	// Size, for a regular file, creates it if missing and extends it to at
	// least Size bytes; the device's capacity is then Size. A multiple of
	// 512. 0 means use the existing file's size. An existing file larger
	// than Size is refused, never shrunk.
	Size int64
	// Force opens a block device even though the system uses it (mounted,
	// active swap, held by dm/md).
	Force bool
	// ReadOnly opens the target for reading only (verify, info): nothing
	// is created or extended, the lock is shared, and a block device is
	// neither checked for use nor opened exclusively.
	ReadOnly bool
	// Cache is how transfers meet the page cache; the zero value is
	// CacheAuto. With ReadOnly and CacheBypass or CacheUse, the systems
	// whose disks are character devices (macOS, the BSDs) open a disk
	// node too, to read it as any program would: the reader benchmark's
	// comparison with the kernel.
	Cache Cache

	// sys is where the in-use check reads the kernel's view; the zero
	// value means this machine's. Tests point it at fixtures.
	sys linuxdisk.Sys
}

// Device is a regular file or a kernel block device used as a
// blockdev.Device, opened with O_DIRECT where the filesystem allows it so
// the page cache does not sit between the pipeline and the medium. The
// file is locked (flock) until Close: exclusively unless opened read-only.
//
// A target the kernel lets this process read but not write (a read-only
// file or filesystem, an immutable file, a disk set read-only or whose
// lock switch the kernel saw) opens all the same, for reading, and says
// so as a blockdev.WriteProtector: the check before writing then refuses
// it as it refuses a locked card, with blockdev.ErrWriteProtected.
type Device struct {
	f         *os.File
	path      string
	blockSize int
	blocks    int64
	direct    atomic.Bool // cleared if the kernel rejects an O_DIRECT transfer
	cache     Cache
	wp        bool  // the kernel refuses writes to it
	inUse     error // opened read-only: how the system uses the disk, or nil
}

var (
	_ blockdev.Device                = (*Device)(nil)
	_ blockdev.WriteProtector        = (*Device)(nil)
	_ interface{ DropCache() error } = (*Device)(nil) // cardbench.CacheDropper
)

// Open opens path for reading and writing blocks (only reading with
// opts.ReadOnly). See Options.
func Open(path string, opts Options) (*Device, error) {
	if opts.Size < 0 || opts.Size%fileBlockSize != 0 {
		return nil, &TargetError{Path: path, Kind: ErrBadSize, Size: opts.Size,
			What: fmt.Sprintf("cannot have size %d: not a multiple of %d bytes", opts.Size, fileBlockSize)}
	}
	if opts.Cache < CacheAuto || opts.Cache > CacheUse {
		return nil, fmt.Errorf("file target %s: unknown cache mode %d", path, opts.Cache)
	}
	return openFile(path, opts)
}

// statTarget looks at a file target before it is opened and refuses what
// can never be one. A missing file is created only when a size is given,
// in a directory that exists, and never under /dev.
func statTarget(path string, opts Options) (st fs.FileInfo, exists bool, err error) {
	bad := func(kind error, what string) (fs.FileInfo, bool, error) {
		e := &TargetError{Path: path, Kind: kind, What: what, Size: opts.Size}
		if st != nil {
			e.FileSize = st.Size()
		}
		return nil, false, e
	}
	underDev := isUnderDev(path)
	st, err = os.Stat(path)
	switch {
	case err == nil:
	case !errors.Is(err, fs.ErrNotExist):
		return nil, false, fmt.Errorf("file target %s: %w", path, err)
	case underDev:
		return bad(ErrNotADevice, "does not exist: no such device (a file is never created under /dev)")
	case opts.ReadOnly:
		return bad(ErrMissing, "does not exist")
	case opts.Size == 0:
		return bad(ErrNeedsSize, "does not exist, and no size was given to create it")
	default:
		if dir, derr := os.Stat(filepath.Dir(path)); derr != nil || !dir.IsDir() {
			return bad(ErrNoDirectory, fmt.Sprintf("cannot be created: directory %s does not exist", filepath.Dir(path)))
		}
		return nil, false, nil
	}
	mode := st.Mode()
	switch {
	case mode.IsDir():
		return bad(ErrWrongType, "is a directory")
	case mode&fs.ModeCharDevice != 0 && !diskNode(opts):
		return bad(ErrWrongType, "is a character device, not a block device or a regular file")
	case mode&fs.ModeNamedPipe != 0:
		return bad(ErrWrongType, "is a FIFO, which cannot be read back")
	case mode&fs.ModeSocket != 0:
		return bad(ErrWrongType, "is a socket")
	case mode.IsRegular() && underDev:
		return bad(ErrNotADevice, "is a regular file in /dev, not a device")
	case mode.IsRegular() && opts.Size > 0 && st.Size() > opts.Size:
		return bad(ErrWouldShrink, fmt.Sprintf("is %d bytes, larger than size=%d: refusing to shrink it", st.Size(), opts.Size))
	case mode.IsRegular() && opts.ReadOnly && st.Size() < opts.Size:
		return bad(ErrShortReadOnly, fmt.Sprintf("is %d bytes, smaller than size=%d, and is opened read-only", st.Size(), opts.Size))
	}
	return st, true, nil
}

// isUnderDev tells whether path lies in /dev, where files are devices the
// kernel makes: a name there that is not a device is a typo.
func isUnderDev(path string) bool {
	abs, err := filepath.Abs(path)
	if err != nil {
		return false
	}
	if dir, err := filepath.EvalSymlinks(filepath.Dir(abs)); err == nil {
		abs = filepath.Join(dir, filepath.Base(abs))
	}
	return abs == "/dev" || strings.HasPrefix(abs, "/dev/")
}

// lock takes the run's lock on the opened file.
func (d *Device) lock(readOnly bool) error {
	if err := flock.Lock(d.f, !readOnly); err != nil {
		return fmt.Errorf("file target %s: %w", d.path, err)
	}
	return nil
}

// Direct reports whether transfers bypass the page cache (O_DIRECT). It can
// turn false after opening, when the filesystem refuses a direct transfer
// and the device falls back to buffered I/O.
func (d *Device) Direct() bool { return d.direct.Load() }

// InUse is, for a disk opened read-only, how the system uses it (mounted,
// active swap, held: an error wrapping ErrInUse, the one a
// write's open refuses with), or nil. A read-only open does not refuse a
// disk in use; a reader may want to say that what it reads can change
// under it.
func (d *Device) InUse() error { return d.inUse }

// WriteProtected reports whether the kernel refuses writes to the target:
// opening it for writing was refused though reading was not, or the block
// device is set read-only. It is false for a target opened with ReadOnly
// that could not tell.
func (d *Device) WriteProtected() bool { return d.wp }

// String names the device in messages.
func (d *Device) String() string { return "file:" + d.path }

// BlockSize implements blockdev.Device.
func (d *Device) BlockSize() int { return d.blockSize }

// BlockCount implements blockdev.Device.
func (d *Device) BlockCount() int64 { return d.blocks }

// Close closes the file.
func (d *Device) Close() error { return d.f.Close() }

// ReadBlocks implements blockdev.Device. A cancelled ctx stops it before
// the read, as it stops a LUN's next command. The kernel's EIO is marked
// as a bad block (blockdev.ErrBadBlock).
func (d *Device) ReadBlocks(ctx context.Context, lba int64, p []byte) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	if err := d.check(lba, p); err != nil {
		return err
	}
	return badBlock(d.retryBuffered(func() error {
		_, err := d.f.ReadAt(p, lba*int64(d.blockSize))
		return err
	}))
}

// WriteBlocks implements blockdev.Device. A write-protected target
// refuses at once; a write the kernel refuses as read-only is marked as
// write protection (blockdev.ErrWriteProtected).
func (d *Device) WriteBlocks(ctx context.Context, lba int64, p []byte) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	if err := d.check(lba, p); err != nil {
		return err
	}
	if d.wp {
		return fmt.Errorf("%s is %w", d.path, blockdev.ErrWriteProtected)
	}
	return protected(d.retryBuffered(func() error {
		_, err := d.f.WriteAt(p, lba*int64(d.blockSize))
		return err
	}))
}

// Sync implements blockdev.Device with fsync.
func (d *Device) Sync(ctx context.Context) error { return d.f.Sync() }

// refusesWrites says whether err, from opening a target for writing or
// from a write, is the kernel refusing to write it: a read-only filesystem
// or a disk whose lock switch the kernel saw (EROFS), a file without write
// permission, an immutable file, a block device set read-only (EACCES,
// EPERM).
func refusesWrites(err error) bool {
	return errors.Is(err, syscall.EROFS) || errors.Is(err, fs.ErrPermission)
}

// badBlock marks the kernel's EIO for a read as a bad block: what the
// block layer returns when the disk failed the command's blocks (a dead
// disk returns it too, so a caller judging one block reads others).
func badBlock(err error) error {
	if err != nil && errors.Is(err, syscall.EIO) {
		return blockdev.MarkBadBlock(err)
	}
	return err
}

// protected marks a write the kernel refused as read-only as write
// protection.
func protected(err error) error {
	if err != nil && refusesWrites(err) {
		return blockdev.MarkWriteProtected(err)
	}
	return err
}

// openReadable is called when opening an existing target with flags (for
// writing) failed with err: when the kernel refused to write it but lets it
// be read, it opens it for reading instead, with open, and the device is
// write-protected.
func openReadable(err error, flags int, open func(flags int) (*os.File, error)) (*os.File, bool, error) {
	if !refusesWrites(err) {
		return nil, false, err
	}
	f, rerr := open(flags &^ (os.O_RDWR | os.O_WRONLY))
	if rerr != nil {
		return nil, false, err
	}
	return f, true, nil
}

func (d *Device) check(lba int64, p []byte) error {
	if len(p)%d.blockSize != 0 {
		return fmt.Errorf("%d bytes is not a whole number of %d-byte blocks", len(p), d.blockSize)
	}
	if n := int64(len(p) / d.blockSize); lba < 0 || lba+n > d.blocks {
		return fmt.Errorf("blocks %d-%d are outside the %d blocks of %s", lba, lba+n-1, d.blocks, d.path)
	}
	return nil
}
