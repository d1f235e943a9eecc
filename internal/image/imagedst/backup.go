package imagedst

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"time"

	"github.com/usbflash/usbflash/internal/failure"
	"github.com/usbflash/usbflash/internal/image/bmap"
	"github.com/usbflash/usbflash/internal/lib/outfile"
	"github.com/usbflash/usbflash/internal/lib/parttable"
	"github.com/usbflash/usbflash/internal/lib/units"
	"github.com/usbflash/usbflash/pipeline"
	"github.com/usbflash/usbflash/pipeline/blockdev"
)

// A backup copies the start of a card to an image file: as much as Extent
// decides, through a File under its .part name, with a block map beside
// it; with a verify the card is read a second time and must give the same
// bytes. Only a backup that is complete (and verified, when asked) gets
// its real name: nothing that looks finished is left otherwise.

// BMapSuffix is added to a backup's name for its block map.
const BMapSuffix = ".bmap"

// ExistsError is a backup that would replace a file, refused.
type ExistsError struct{ Path string }

func (e *ExistsError) Error() string {
	return fmt.Sprintf("%s already exists; nothing was read", e.Path)
}
func (e *ExistsError) Unwrap() error { return ErrExists }

// Class is Refused: nothing was read.
func (e *ExistsError) Class() failure.Class { return failure.Refused }

// CheckBackup refuses, before the card is opened, a backup to out that
// would replace a file (out or its block map) without overwrite, or that
// cannot be created where it is named.
func CheckBackup(out string, overwrite bool) error {
	if !overwrite {
		for _, p := range []string{out, out + BMapSuffix} {
			if _, err := os.Lstat(p); err == nil {
				return &ExistsError{Path: p}
			}
		}
	}
	return outfile.Check(out)
}

// Extent is how much of a card a backup reads, and why.
type Extent struct {
	Size     int64  // bytes from the card's start
	Capacity int64  // the card's
	Table    string // with used: parttable.MBR, parttable.GPT or "none"; else ""
	// Damaged, with used, is why the card's partition table could not be
	// followed (it names places past the card, or fails its checks): the
	// whole card is read, as for a card with no table, and Table is
	// "none".
	Damaged error
}

// SizeError is a size to read that the card does not have.
type SizeError struct {
	Device         string
	Want, Capacity int64
}

func (e *SizeError) Error() string {
	return fmt.Sprintf("%s is more than %s holds (%s); nothing was read", units.FormatSize(e.Want), e.Device, units.FormatSize(e.Capacity))
}

// Class is Refused: the card holds less than was asked for.
func (e *SizeError) Class() failure.Class { return failure.Refused }

// ExtentOf decides how much of dev (named name in errors) to read: want
// bytes (> 0), the end of the last partition of its MBR or GPT (used; the
// whole card without a table, or with a damaged one: a backup of a card
// whose table is wrong is worth more whole), or the whole card.
func ExtentOf(ctx context.Context, dev blockdev.Device, name string, want int64, used bool) (Extent, error) {
	bs := dev.BlockSize()
	capacity := dev.BlockCount() * int64(bs)
	e := Extent{Size: capacity, Capacity: capacity}
	switch {
	case want > capacity:
		return Extent{}, &SizeError{Device: name, Want: want, Capacity: capacity}
	case want > 0:
		e.Size = want
		return e, nil
	case !used:
		return e, nil
	}
	tab, err := parttable.End(func(off int64, p []byte) error {
		if err := dev.ReadBlocks(ctx, off/int64(bs), p); err != nil {
			return &pipeline.DeviceError{Device: name, Op: pipeline.OpRead, LBA: off / int64(bs), Count: int64(len(p) / bs), BlockSize: bs, Err: err}
		}
		return nil
	}, bs, capacity)
	if errors.Is(err, parttable.ErrDamaged) {
		e.Table, e.Damaged = "none", err
		return e, nil
	}
	if err != nil {
		return Extent{}, fmt.Errorf("reading the partition table of %s: %w", name, err)
	}
	e.Table = tab.Kind
	if tab.Kind == parttable.None {
		e.Table = "none"
		tab.End = capacity
	}
	e.Size = tab.End
	return e, nil
}

// BackupOptions tune Backup.
type BackupOptions struct {
	Name         string // the device, in errors
	Size         int64  // bytes to read (Extent's)
	Verify       bool   // read the card a second time and compare
	TransferSize int
	Buffers      int
	Progress     func(pipeline.Progress) // the read's and the verify's
}

// BackupResult is a finished backup.
type BackupResult struct {
	Read        pipeline.ReadResult
	Verify      *pipeline.VerifyResult // with Verify
	Format      string
	Written     int64 // bytes of the file (compressed)
	BMap        string
	MappedBytes int64 // bytes the block map maps (not all zero)
}

// VerifyError is a backup whose second read did not match the first,
// failed or was interrupted: it did not get its real name. The first read
// is kept, as Part, since a card that reads differently twice may not read
// at all a third time, and a read interrupted only in its check is still
// a complete one.
type VerifyError struct {
	Out  string // the name it would have had
	Part string // the first read, complete
	Err  error  // the second read's error: a *pipeline.VerifyError when it differs
}

func (e *VerifyError) Error() string {
	var ve *pipeline.VerifyError
	what := fmt.Sprintf("the second read failed: %v", e.Err)
	switch {
	case errors.As(e.Err, &ve):
		what = fmt.Sprintf("the second read of %s differs from the first (SHA-256 %x, then %x)", ve.Device, ve.WantHash, ve.GotHash)
	case errors.Is(e.Err, context.Canceled):
		what = fmt.Sprintf("the second read, which checks the first, was interrupted (%v)", e.Err)
	}
	return fmt.Sprintf("%s was not written: %s; the first read is complete and kept in %s", e.Out, what, e.Part)
}

// Class is the second read's failure's: Verify when the reads differ,
// Device when the second read failed.
func (e *VerifyError) Class() failure.Class { return failure.Within(failure.Verify, e.Err) }

func (e *VerifyError) Unwrap() error { return e.Err }

// Backup is one backup under way, from StartBackup to Run.
type Backup struct {
	out  string
	file *File
}

// StartBackup creates out's .part file (replacing out only with
// overwrite).
func StartBackup(out string, overwrite bool) (*Backup, error) {
	f, err := Create(out, overwrite)
	if errors.Is(err, ErrExists) {
		return nil, &ExistsError{Path: out}
	}
	if err != nil {
		return nil, err
	}
	return &Backup{out: out, file: f}, nil
}

// Format is the backup's format.
func (b *Backup) Format() string { return b.file.Format() }

// PartPath is where the backup is written until it is complete.
func (b *Backup) PartPath() string { return b.file.PartPath() }

// Abort removes the .part file of a backup that did not complete (not one
// kept after a failed verify). Deferred after StartBackup.
func (b *Backup) Abort() { b.file.Abort() }

// Discard removes the .part file at once, from any goroutine, while Run
// may still be under way: what a second interrupt does. The card is
// never written, so nothing else needs undoing. It says whether it
// removed the file: not when the backup was complete, nor once the first
// read was (Kept).
func (b *Backup) Discard() bool { return b.file.Discard() }

// Kept says the first read is complete and its .part file stays, whatever
// becomes of the second read: the backup has its name, or the .part file
// is named in Run's error.
func (b *Backup) Kept() bool { return b.file.Kept() }

// Run reads o.Size bytes of dev into the file and its block map; with
// o.Verify it reads them again and compares. Only then does the file get
// its real name, and its block map is written beside it. A failed or
// cancelled read leaves nothing after Abort; a verify that fails or is
// interrupted leaves the first read, complete, as the .part file
// (*VerifyError): a user who stops the check of a backup that took an
// hour does not want the backup thrown away.
func (b *Backup) Run(ctx context.Context, dev blockdev.Device, o BackupOptions) (*BackupResult, error) {
	builder := bmap.NewBuilder(0)
	read, err := pipeline.Read(ctx, dev, io.MultiWriter(b.file, builder), o.Size, pipeline.ReadOptions{
		Name: o.Name, TransferSize: o.TransferSize, Buffers: o.Buffers, Progress: o.Progress,
	})
	if err != nil {
		return nil, err
	}
	// A parallel compressor (xz, zstd) still holds the last blocks: its
	// flush is the sink's time, or a slow compressor looks like a slow card.
	flush := time.Now()
	if err := b.file.Finish(); err != nil {
		return nil, err
	}
	read.AddSinkTime(time.Since(flush))
	res := &BackupResult{Read: read, Format: b.file.Format(), Written: b.file.Written(), BMap: b.out + BMapSuffix}
	if o.Verify {
		// From here on the .part file is a complete read: kept, by a
		// second interrupt too, unless it gets its name.
		if !b.file.Keep() {
			return nil, &outfile.Error{Path: b.file.PartPath(), Op: outfile.OpWrite, Err: errors.New("removed before it was complete")}
		}
		v, err := pipeline.VerifyHash(ctx, dev, o.Size, read.SHA256, pipeline.VerifyOptions{
			Name: o.Name, TransferSize: o.TransferSize, Progress: o.Progress,
		})
		if err != nil {
			return nil, &VerifyError{Out: b.out, Part: b.file.PartPath(), Err: err}
		}
		res.Verify = &v
	}
	if err := b.file.Rename(); err != nil {
		return nil, err
	}
	m := builder.Map()
	res.MappedBytes = m.MappedBytes()
	data, err := bmap.Marshal(m)
	if err == nil {
		err = WriteFile(res.BMap, data)
	}
	if err != nil {
		return res, &BlockMapError{Out: b.out, Err: err}
	}
	return res, nil
}

// BlockMapError is a backup that is complete but whose block map could
// not be written.
type BlockMapError struct {
	Out string
	Err error
}

func (e *BlockMapError) Error() string {
	var oe *outfile.Error
	if errors.As(e.Err, &oe) {
		return fmt.Sprintf("%v (the backup %s itself is complete)", e.Err, e.Out)
	}
	return fmt.Sprintf("the block map %s%s: %v (the backup %s itself is complete)", e.Out, BMapSuffix, e.Err, e.Out)
}

// Class is the cause's (an output disk's failure is Device), else Device.
func (e *BlockMapError) Class() failure.Class { return failure.Within(failure.Device, e.Err) }

func (e *BlockMapError) Unwrap() error { return e.Err }
