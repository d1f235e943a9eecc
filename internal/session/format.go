package session

import (
	"context"
	"fmt"
	"sync"
	"time"

	"github.com/usbflash/usbflash/internal/cardfs"
	"github.com/usbflash/usbflash/internal/drive"
	"github.com/usbflash/usbflash/internal/failure"
	"github.com/usbflash/usbflash/internal/image"
	"github.com/usbflash/usbflash/internal/lib/units"
	"github.com/usbflash/usbflash/internal/probe/cardbench"
)

// Format is the Blocks of a format: the card laid out as the SD
// Association's SD Formatter lays it out for its capacity (cardfs), an MBR
// and FAT32 up to 32 GiB, exFAT above, on the card's erase unit. Only the
// layout's bytes are written (the partition table, the boot regions, the
// FATs, the first clusters): the rest of the card keeps its old bytes, in
// clusters the file system marks free, as a quick format leaves them.
//
// The erase unit is, in this order: the one given (what bench measured:
// its "erase unit" line); with Measure, the one bench's alignment test
// (cardbench.Alignment, read-only) finds on the card now; the optimal
// transfer the reader reports (VPD page 0xB0, read of the readers whose
// quirks ask for it), when it is a power of two of at least 64 KiB; or
// the SD File System Specification's boundary unit for the capacity.
type Format struct {
	Label     string
	EraseUnit int64
	Measure   bool
	// FS is cardfs.FAT32 or cardfs.ExFAT instead of the capacity's
	// choice; "" for that.
	FS       string
	serial   uint32
	now      time.Time
	measured sync.Map // card name -> int64: the unit measured, 0 for none
}

// NewFormat is a format's Blocks: the label checked for both file
// systems, and one serial number and time for every card of the run (the
// read-back makes the layout again).
func NewFormat(label, fs string, eraseUnit int64) (*Format, error) {
	fs, err := cardfs.ParseFS(fs)
	if err != nil {
		return nil, &failure.SettingError{Setting: SettingFS, Err: failure.Wrap(failure.Usage, err)}
	}
	if err := cardfs.CheckLabel(label); err != nil {
		return nil, &failure.SettingError{Setting: SettingLabel, Err: failure.Wrap(failure.Usage, err)}
	}
	if eraseUnit != 0 && (eraseUnit < 512 || eraseUnit&(eraseUnit-1) != 0 || eraseUnit > 1<<30) {
		return nil, &failure.SettingError{Setting: SettingEraseUnit,
			Err: failure.Errorf(failure.Usage, "%d bytes is not a power of two from 512 bytes to 1 GiB", eraseUnit)}
	}
	now := time.Now()
	return &Format{Label: label, FS: fs, EraseUnit: eraseUnit, serial: uint32(now.UnixNano()>>10) ^ uint32(now.Unix()), now: now}, nil
}

// What says what a format writes.
func (f *Format) What() string {
	if f.FS != "" {
		return "an SD card file system (" + f.FS + ")"
	}
	return "an SD card file system (FAT32 up to 32 GiB, exFAT above)"
}

// layout is the card's layout, and where its erase unit came from.
func (f *Format) layout(ctx context.Context, d *drive.Device) (*cardfs.Layout, string, error) {
	unit, from := f.EraseUnit, "given"
	if unit == 0 && f.Measure {
		m, err := f.measure(ctx, d)
		if err != nil {
			return nil, "", err
		}
		if m != 0 {
			unit, from = m, "measured: reads straddling it take longest"
		}
	}
	if unit == 0 {
		if s, ok := d.Dev.(drive.SCSI); ok {
			ot := s.SCSI().OptimalTransfer() * int64(d.Dev.BlockSize())
			if ot >= 64<<10 && ot <= 1<<30 && ot&(ot-1) == 0 {
				unit, from = ot, "the reader's optimal transfer"
			}
		}
	}
	if unit == 0 {
		from = "the SD Association's boundary unit for its capacity: the reader reports no optimal transfer"
		if f.Measure {
			from = "the SD Association's boundary unit for its capacity: no boundary stood out when measured, and the reader reports no optimal transfer"
		}
	}
	l, err := cardfs.New(cardfs.Options{Capacity: d.Capacity(), BlockSize: d.Dev.BlockSize(), EraseUnit: unit, FS: f.FS,
		Label: f.Label, Serial: f.serial, Now: f.now})
	if err != nil {
		return nil, "", failure.Wrap(failure.Refused, fmt.Errorf("%s: %w", d.Name, err))
	}
	return l, from, nil
}

// For is the card's layout, as a raw image of the bytes it writes.
func (f *Format) For(ctx context.Context, d *drive.Device) (*image.Source, error) {
	l, _, err := f.layout(ctx, d)
	if err != nil {
		return nil, err
	}
	return NewBlocksSource(l)
}

// Prepare says how the card is laid out, and on what erase unit.
func (f *Format) Prepare(ctx context.Context, d *drive.Device, note func(string)) error {
	l, from, err := f.layout(ctx, d)
	if err != nil {
		return err
	}
	label := ""
	if l.Label != "" {
		label = fmt.Sprintf(", labelled %q", l.Label)
	}
	note(fmt.Sprintf("%s: %s%s, %s clusters; the partition at %s and the first cluster at %s, on a %s erase unit (%s); %s to write",
		d.Name, l.FS, label, units.FormatSize(l.ClusterSize), units.FormatSize(l.PartitionStart), units.FormatSize(l.DataStart),
		units.FormatSize(l.EraseUnit), from, units.FormatBytes(l.Size())))
	return nil
}

// measure runs bench's alignment test on the card, once (the read-back
// lays the card out again): its erase unit, when one stands out between
// 64 KiB and 64 MiB, else 0.
func (f *Format) measure(ctx context.Context, d *drive.Device) (int64, error) {
	if v, ok := f.measured.Load(d.Name); ok {
		return v.(int64), nil
	}
	opts := cardbench.AlignOptions{Min: 64 << 10, Max: 64 << 20}
	if s, ok := d.Dev.(drive.Simulated); ok && s.Sim() != nil {
		// A simulated card is timed by its model, not by the host's load.
		sd := s.Sim()
		opts.Clock = func() time.Duration { return sd.Stats().ModelTime }
	}
	res, err := cardbench.Alignment(ctx, d.Dev, opts)
	if err != nil {
		return 0, err
	}
	f.measured.Store(d.Name, res.Unit)
	return res.Unit, nil
}

// The settings a format's errors are about.
const (
	SettingLabel     failure.Setting = "label"
	SettingFS        failure.Setting = "file system"
	SettingEraseUnit failure.Setting = "erase unit"
)
