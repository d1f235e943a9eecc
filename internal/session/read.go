package session

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"

	"github.com/usbflash/usbflash/internal/drive"
	"github.com/usbflash/usbflash/internal/failure"
	"github.com/usbflash/usbflash/internal/image/imagedst"
	"github.com/usbflash/usbflash/pipeline"
)

// BackupConfig is a backup: a card read to an image file, compressed as
// its name says, with a block map beside it.
type BackupConfig struct {
	Out string // the image file
	// Size is the bytes to read from the card's start; 0: up to the end
	// of its last partition with Used, else the whole card.
	Size int64
	Used bool
	// Force overwrites Out and reads a disk the system uses (with a
	// warning: what is read may change meanwhile).
	Force  bool
	Verify bool // read the card a second time and compare
	// TransferSize is the bytes per READ, lowered to what the card takes;
	// 0: pipeline.DefaultReadSize.
	TransferSize int
	// Buffers cycle between the card and the compressor; 0: the engine's
	// count for the transfer size the card takes.
	Buffers  int
	Readers  *drive.Readers // nil: the backup enumerates
	Observer Observer
}

// SettingOut is the backup's output file, as a setting.
const SettingOut failure.Setting = "out"

// Backup is one backup, from NewBackup (its settings checked, nothing
// opened) to Run. Abort may be called from another goroutine meanwhile.
type Backup struct {
	cfg BackupConfig
	s   *session

	mu   sync.Mutex
	b    *imagedst.Backup // once the .part file exists
	card string
}

// NewBackup checks a backup's settings before any card is opened: the
// output file (a name, that may be created, and replaces nothing without
// Force), where to stop, the sizes.
func NewBackup(cfg BackupConfig) (*Backup, error) {
	switch {
	case cfg.Out == "-" || cfg.Out == "" || strings.HasSuffix(cfg.Out, "/"):
		return nil, &failure.SettingError{Setting: SettingOut, Err: fmt.Errorf("%q is not a file name (its extension picks the compression)", cfg.Out)}
	case cfg.Size < 0:
		return nil, &failure.SettingError{Setting: SettingSize, Err: fmt.Errorf("%d bytes is not a size", cfg.Size)}
	case cfg.Size > 0 && cfg.Used:
		return nil, &failure.SettingError{Setting: SettingSize, Err: errors.New("a size and the partitions' end both say where to stop")}
	}
	cfg.TransferSize = transferSize(cfg.TransferSize).read()
	if err := checkSizes(cfg.TransferSize, cfg.Buffers, 0, 1, 0); err != nil {
		return nil, err
	}
	if err := imagedst.CheckBackup(cfg.Out, cfg.Force); err != nil {
		return nil, err
	}
	return &Backup{cfg: cfg, s: newSession(Config{Output: Output{Observer: cfg.Observer}})}, nil
}

// BackupResult is a complete backup.
type BackupResult struct {
	Card   string
	Extent imagedst.Extent
	*imagedst.BackupResult
}

// Run reads the card spec names into the file: BackupStarted before the
// first command to the card, then Opened, InUse when the system uses its
// disk, ExtentChosen, Progress of the read (and of the second read). A
// failed or cancelled read leaves no file; a second read that differs,
// fails or is interrupted leaves the first as the .part file, named in
// its error (*imagedst.VerifyError).
func (b *Backup) Run(ctx context.Context, spec drive.Spec) (*BackupResult, error) {
	cfg, s := b.cfg, b.s
	// Said before the first command to the target: a reader that does not
	// answer must not leave the user looking at nothing.
	s.emit(BackupStarted{Target: spec.Raw, Out: cfg.Out, Format: imagedst.FormatOf(cfg.Out),
		TransferSize: cfg.TransferSize, Buffers: buffersFor(cfg.TransferSize, cfg.Buffers)})
	d, err := drive.Open(ctx, spec, drive.Options{ReadOnly: true, Force: cfg.Force, Readers: cfg.Readers,
		OnNotice: s.onNotice})
	if err != nil {
		return nil, err
	}
	defer d.Close()
	transfer := s.fitCard(d, cfg.TransferSize)
	if d.InUse != nil {
		s.emit(InUse{Card: d.Name, Err: d.InUse})
	}
	want := cfg.Size
	if want == 0 {
		want = -1
	}
	extent, err := imagedst.ExtentOf(ctx, d.Dev, d.Name, want, cfg.Used)
	if err != nil {
		return nil, err
	}
	s.emit(ExtentChosen{Card: d.Name, Extent: extent})

	ib, err := imagedst.StartBackup(cfg.Out, cfg.Force)
	if err != nil {
		return nil, err
	}
	defer ib.Abort()
	b.mu.Lock()
	b.b, b.card = ib, d.Name
	b.mu.Unlock()
	res, err := ib.Run(ctx, d.Dev, imagedst.BackupOptions{
		// Buffers as given: with none, the engine chooses for the
		// transfer size the reader allows (a capped reader, more).
		Name: d.Name, Size: extent.Size, Verify: cfg.Verify, TransferSize: transfer, Buffers: cfg.Buffers,
		Progress: func(p pipeline.Progress) { s.emit(cardProgress(d.Name, p)) },
	})
	if err != nil {
		return nil, err
	}
	return &BackupResult{Card: d.Name, Extent: extent, BackupResult: res}, nil
}

// Abort is what a second interrupt does: it removes the unfinished .part
// file at once (the card was only read, so that undoes everything) and
// says what is left. A complete first read, whose second read was under
// way, is kept.
func (b *Backup) Abort() error {
	b.mu.Lock()
	ib, card := b.b, b.card
	b.mu.Unlock()
	var what string
	switch {
	case ib == nil:
		what = "nothing was written"
	case ib.Discard():
		what = fmt.Sprintf("%s was removed; %s was only read", ib.PartPath(), card)
	case ib.Kept():
		what = fmt.Sprintf("the first read is complete and kept in %s; %s was only read", ib.PartPath(), card)
	default:
		what = fmt.Sprintf("%s was complete", b.cfg.Out)
	}
	return fmt.Errorf("%w by a second interrupt: %s", context.Canceled, what)
}
