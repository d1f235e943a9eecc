// Package diskdev is a whole disk opened raw, beside filedev: the disk:
// target of macOS (/dev/rdiskN with F_NOCACHE, opened exclusively as root
// or through authopen) and Windows (\\.\PhysicalDriveN with
// FILE_FLAG_NO_BUFFERING and FILE_FLAG_WRITE_THROUGH), as a
// blockdev.Device. Linux's disk: target is filedev's block device, the
// same code as before (O_DIRECT, the in-use checks). What this package
// shares between systems (aligned transfers within the disk's largest
// one, the step before the first write, the flush) is plain Go in this
// file, tested on Linux over an O_DIRECT file and a loop device.
package diskdev

import (
	"context"
	"errors"
	"fmt"
	"os"
	"sync"
	"unsafe"

	"github.com/usbflash/usbflash/internal/failure"
	"github.com/usbflash/usbflash/internal/lib/aligned"
	"github.com/usbflash/usbflash/pipeline/blockdev"
)

// ErrPermission is matched by a disk this process may not open as asked:
// writing a raw disk needs root on macOS (or an administrator's
// authorization through authopen) and an administrator on Windows. The
// error is a *PermissionError, which says which.
var ErrPermission = failure.New(failure.Device, "no permission to open the disk")

// PermissionError is a disk the system refused to open for want of a
// right: Need says which ("root", "an administrator").
type PermissionError struct {
	Path string
	Need string
	Err  error
}

func (e *PermissionError) Error() string {
	return fmt.Sprintf("opening %s needs %s: %v", e.Path, e.Need, e.Err)
}

func (e *PermissionError) Unwrap() []error { return []error{ErrPermission, e.Err} }

// Class is ErrPermission's.
func (e *PermissionError) Class() failure.Class { return failure.Device }

// file is what a Device reads and writes through: the raw node or handle,
// whose Sync makes what was written durable (macOS: the disk's cache
// flushed with DKIOCSYNCHRONIZECACHE; Windows: FlushFileBuffers).
type file interface {
	ReadAt(p []byte, off int64) (int, error)
	WriteAt(p []byte, off int64) (int, error)
	Sync() error
	Close() error
}

// config is what a system's open found out about its disk.
type config struct {
	name      string // "disk:/dev/rdisk4", as messages name it
	blockSize int
	blocks    int64
	// maxBytes is the largest transfer the disk takes (macOS's
	// DKIOCGETMAXBYTECOUNTWRITE); 0: none known.
	maxBytes int64
	// align is the address alignment the uncached path needs of a
	// buffer: at least the block size and the page size.
	align int
	wp    bool
	// prepare runs once, before the first write, and a write fails
	// when it fails (Windows clears the drive's layout, so that it
	// mounts nothing of the image as it is written). nil: nothing.
	prepare func() error
	// eject lets the medium go once the work is done; nil: not
	// ejectable. It is called once the file is closed.
	eject func(ctx context.Context) error
	// release runs when the device closes, after the file (Windows
	// keeps its volume locks until then).
	release func()
}

// Device is a whole disk opened raw, as a blockdev.Device. Buffers the
// engine sends are page-aligned (internal/lib/aligned) and go to the disk
// as they are; any other buffer goes through an aligned copy, so a caller
// never meets the uncached path's alignment rules. A transfer larger than
// the disk takes is cut into ones it takes.
type Device struct {
	f   file
	cfg config

	prepareOnce sync.Once
	prepareErr  error

	mu     sync.Mutex
	closed bool
}

var (
	_ blockdev.Device          = (*Device)(nil)
	_ blockdev.WriteProtector  = (*Device)(nil)
	_ blockdev.TransferLimiter = (*Device)(nil)
	_ blockdev.Ejector         = (*Device)(nil)
)

func newDevice(f file, cfg config) *Device {
	cfg.align = max(cfg.align, cfg.blockSize, aligned.Alignment())
	return &Device{f: f, cfg: cfg}
}

// String names the disk in messages.
func (d *Device) String() string { return d.cfg.name }

// BlockSize implements blockdev.Device.
func (d *Device) BlockSize() int { return d.cfg.blockSize }

// BlockCount implements blockdev.Device.
func (d *Device) BlockCount() int64 { return d.cfg.blocks }

// WriteProtected reports whether the medium refuses writes (a card's lock
// switch, as the system saw it).
func (d *Device) WriteProtected() bool { return d.cfg.wp }

// MaxTransfer is the largest transfer the disk takes, in blocks (0: none
// known), so the engine sends transfers it takes whole.
func (d *Device) MaxTransfer() int64 {
	if d.cfg.maxBytes <= 0 {
		return 0
	}
	return max(d.cfg.maxBytes/int64(d.cfg.blockSize), 1)
}

// Direct reports that transfers bypass the system's cache: they always do.
func (d *Device) Direct() bool { return true }

// ReadBlocks implements blockdev.Device.
func (d *Device) ReadBlocks(ctx context.Context, lba int64, p []byte) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	if err := d.check(lba, p); err != nil {
		return err
	}
	return d.transfer(lba, p, false)
}

// WriteBlocks implements blockdev.Device. The first write runs the
// system's step before writing (prepare) first; a write-protected medium
// refuses at once.
func (d *Device) WriteBlocks(ctx context.Context, lba int64, p []byte) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	if err := d.check(lba, p); err != nil {
		return err
	}
	if d.cfg.wp {
		return fmt.Errorf("%s is %w", d.cfg.name, blockdev.ErrWriteProtected)
	}
	if d.cfg.prepare != nil {
		d.prepareOnce.Do(func() { d.prepareErr = d.cfg.prepare() })
		if d.prepareErr != nil {
			return fmt.Errorf("%s: before the first write: %w", d.cfg.name, d.prepareErr)
		}
	}
	return d.transfer(lba, p, true)
}

// transfer moves p at lba in pieces the disk takes, each from memory the
// uncached path accepts: p itself where it is aligned, else a copy.
func (d *Device) transfer(lba int64, p []byte, write bool) error {
	bs := int64(d.cfg.blockSize)
	chunk := len(p)
	if n := d.MaxTransfer(); n > 0 && int64(chunk) > n*bs {
		chunk = int(n * bs)
	}
	var bounce []byte
	for off := 0; off < len(p); off += chunk {
		piece := p[off:min(off+chunk, len(p))]
		buf, bounced := piece, !d.aligned(piece)
		if bounced {
			if bounce == nil {
				bounce = aligned.Bytes(chunk)
			}
			buf = bounce[:len(piece)]
			if write {
				copy(buf, piece)
			}
		}
		pos := (lba + int64(off)/bs) * bs
		var err error
		if write {
			_, err = d.f.WriteAt(buf, pos)
		} else {
			_, err = d.f.ReadAt(buf, pos)
		}
		if err != nil {
			return classify(err, write)
		}
		if bounced && !write {
			copy(piece, buf)
		}
	}
	return nil
}

// aligned says whether p starts where the uncached path needs a buffer to.
func (d *Device) aligned(p []byte) bool {
	return uintptr(unsafe.Pointer(unsafe.SliceData(p)))%uintptr(d.cfg.align) == 0
}

// Sync implements blockdev.Device: what was written is made durable,
// the disk's own cache included.
func (d *Device) Sync(ctx context.Context) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	return d.f.Sync()
}

// ErrNotEjectable: the system has no way to eject this disk.
var ErrNotEjectable = errors.New("the disk cannot be ejected")

// Eject closes the disk and lets its medium go (macOS: diskutil eject;
// Windows: IOCTL_STORAGE_EJECT_MEDIA), so that it can be pulled out. No
// block can be read or written after it; Close is still to be called.
func (d *Device) Eject(ctx context.Context) error {
	if d.cfg.eject == nil {
		return ErrNotEjectable
	}
	return d.cfg.eject(ctx)
}

// Close closes the disk and lets go of what its open held (Windows's
// volume locks). It may be called more than once.
func (d *Device) Close() error {
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.closed {
		return nil
	}
	d.closed = true
	err := d.f.Close()
	if d.cfg.release != nil {
		d.cfg.release()
	}
	if errors.Is(err, os.ErrClosed) {
		err = nil // Eject closed it already
	}
	return err
}

func (d *Device) check(lba int64, p []byte) error {
	if len(p)%d.cfg.blockSize != 0 {
		return fmt.Errorf("%d bytes is not a whole number of %d-byte blocks", len(p), d.cfg.blockSize)
	}
	if n := int64(len(p) / d.cfg.blockSize); lba < 0 || lba+n > d.cfg.blocks {
		return fmt.Errorf("blocks %d-%d are outside the %d blocks of %s", lba, lba+n-1, d.cfg.blocks, d.cfg.name)
	}
	return nil
}
