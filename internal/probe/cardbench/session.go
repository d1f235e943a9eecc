package cardbench

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/usbflash/usbflash/internal/drive"
	"github.com/usbflash/usbflash/internal/failure"
	"github.com/usbflash/usbflash/internal/lib/units"
	"github.com/usbflash/usbflash/internal/observe"
	"github.com/usbflash/usbflash/internal/probe/region"
	"github.com/usbflash/usbflash/pipeline/blockdev"
	"github.com/usbflash/usbflash/pipeline/filedev"
)

// SettingCompare is the setting an error about the compared kernel disk
// is about (*failure.SettingError): the caller names it in its words.
const SettingCompare failure.Setting = "compare"

// CompareReaderDisk is Config.Compare asking for the disk the kernel made
// for a usb: reader, found before the reader is claimed.
const CompareReaderDisk = "reader's disk"

// Config is one bench's choices, as Run takes them.
type Config struct {
	Target drive.Spec
	Plan   Plan // checked before anything is opened
	Write  bool // also measure writes, inside Plan.Region
	Skip   Skip
	// PointTime bounds each size in each region; RandomTime each random
	// measurement and the round trip.
	PointTime, RandomTime time.Duration
	Seed                  uint64 // of the random positions
	// Compare, when set, is the kernel block device read first through
	// the kernel (bypassing its cache, then through it): a path, or
	// CompareReaderDisk.
	Compare string
	Force   bool // use a reader whose kernel disk is mounted
	// Readers is the command's enumeration of readers; nil: Run enumerates.
	Readers *drive.Readers
	// Confirm is asked before anything is written, once the checks
	// passed, naming the device and the region the write tests overwrite;
	// nil writes without asking.
	Confirm func(d *drive.Device, r Region) error
	// Saved, when set, is told a preserved region was saved and returns
	// what to call once it no longer matters (the CLI registers what a
	// second interrupt does with the saved bytes).
	Saved func(*region.Saved) (done func())
}

// Event is one of the types below. Run tells them, in order, to the
// function it is given, from several goroutines (a reader's notices come
// from its own) but never at once.
type Event = observe.Event

// Started comes before the first measurement: the layout of the device
// read first, which with Compare is the kernel's disk (Compare names it).
type Started struct {
	Target    string // the target, as later events name it once open
	Capacity  int64
	BlockSize int
	Layout    Layout
	Compare   string // the kernel's disk measured first; "" without Compare
}

// Note is something worth knowing that changes nothing, as every session
// passes one on. Notice is the reader's own notice the note passes on (a
// recovery step, commands made smaller), nil for the run's own notes.
type Note = observe.Note

// StepStarted says a measurement began: a step (StepReadSweep, ...) or a
// kernel path's sweep (PathKernelDirect, PathKernelBuffered). Total is its
// points, 1 for a measurement that is not a sweep.
type StepStarted struct {
	Step  string
	Total int
}

// Progress says how far a sweep got, in points, as every session's step
// progress.
type Progress = observe.Progress

// Measured is one point of a sweep, as it is measured.
type Measured struct{ Point Point }

// Restoring says a preserved region is being put back; Cancelled: the run
// was cancelled, the restore still runs.
type Restoring struct {
	Device    string
	Region    Region
	Cancelled bool
}

// Restored says a preserved region was put back and read back the same.
type Restored struct {
	Device string
	Region Region
}

func (Started) SessionEvent()     {}
func (StepStarted) SessionEvent() {}
func (Measured) SessionEvent()    {}
func (Restoring) SessionEvent()   {}
func (Restored) SessionEvent()    {}

// Report is a whole run: what was measured, on which device.
type Report struct {
	Target    string // the target's name once open
	Capacity  int64
	BlockSize int
	*Result
}

// Run is one bench: with Compare, the kernel's disk read first (the disk
// goes away when the reader is claimed); then the target opened (read-only
// without Write), its layout fitted, with Write the checks every write
// passes and Confirm; then Measure. It returns what was measured also when
// it stopped early.
func Run(ctx context.Context, cfg Config, obs func(Event)) (*Report, error) {
	s := &session{cfg: cfg, observe: obs, start: time.Now()}
	rep := &Report{Target: cfg.Target.Raw, Result: &Result{}}
	if err := cfg.Plan.Check(); err != nil {
		return rep, err
	}
	if cfg.Readers == nil {
		// Enumerated once, for Compare and the open alike.
		cfg.Readers = &drive.Readers{}
		s.cfg.Readers = cfg.Readers
	}
	var compared *KernelDevice
	if cfg.Compare != "" {
		var err error
		if compared, err = s.compare(ctx, rep); err != nil {
			return rep, err
		}
	}
	d, err := drive.Open(ctx, cfg.Target, drive.Options{Force: cfg.Force, ReadOnly: !cfg.Write, Readers: cfg.Readers,
		OnNotice: func(_ string, n observe.Notice) { s.emit(Note{Message: n.Text, Notice: &n}) }})
	if err != nil {
		return rep, err
	}
	closed := false
	defer func() {
		if !closed {
			d.Close()
		}
	}()
	rep.Target, rep.Capacity, rep.BlockSize = d.Name, d.Capacity(), d.Dev.BlockSize()
	l, err := cfg.Plan.Layout(d.Name, d.Capacity(), d.Dev.BlockSize())
	if err != nil {
		return rep, err
	}
	s.deviceNotes(d, compared, l)
	if cfg.Write {
		// The refusals and the question of a write, before anything is
		// written: the region's end is what must fit.
		r := *cfg.Plan.Region
		if err := drive.CheckData(d, r.End()); err != nil {
			return rep, err
		}
		if cfg.Confirm != nil {
			if err := cfg.Confirm(d, r); err != nil {
				return rep, err
			}
		}
	}
	if compared == nil {
		s.emit(Started{Target: d.Name, Capacity: d.Capacity(), BlockSize: d.Dev.BlockSize(), Layout: l})
	}
	rt, _ := d.Dev.(RoundTripper) // a LUN: the command round trip is measured
	o := s.runOptions(d.Name, l)
	o.Disk, o.Claimed = d.Node()
	res, err := Measure(ctx, d.Dev, rt, o)
	rep.Points = append(rep.Points, res.Points...)
	rep.Align, rep.Random, rep.RoundTrip = res.Align, res.Random, res.RoundTrip
	if err != nil || !offersBoth(d) {
		return rep, err
	}
	// A reader that offers both transports is measured on each, so that
	// which is faster on this reader is known, not assumed.
	closed = true
	if err := d.Close(); err != nil {
		return rep, err
	}
	rep.Transports, err = s.compareTransports(ctx, l)
	return rep, err
}

// session is the state of one Run.
type session struct {
	cfg     Config
	observe func(Event) // nil: nobody is told
	mu      sync.Mutex  // one event at a time
	start   time.Time   // of the run: Progress's Elapsed
}

func (s *session) emit(e Event) {
	if s.observe != nil {
		s.mu.Lock()
		s.observe(e)
		s.mu.Unlock()
	}
}

// compare reads the kernel's disk through both of its paths, before the
// target is opened, and returns it (closed: its size is what is kept).
func (s *session) compare(ctx context.Context, rep *Report) (*KernelDevice, error) {
	node := s.cfg.Compare
	if node == CompareReaderDisk {
		var err error
		if node, err = s.cfg.Readers.KernelDiskNode(ctx, s.cfg.Target); err != nil {
			return nil, err
		}
	}
	var first *KernelDevice
	for _, direct := range []bool{true, false} {
		k, err := openKernel(node, direct)
		if err != nil {
			return nil, err
		}
		l, err := s.cfg.Plan.Layout(k.String(), blockdev.Capacity(k), k.BlockSize())
		if err != nil {
			k.Close()
			return nil, err
		}
		if first == nil {
			first = k
			// The run's start describes the disk read first: the target
			// cannot be opened yet.
			s.emit(Started{Target: s.cfg.Target.Raw, Capacity: blockdev.Capacity(k), BlockSize: k.BlockSize(), Layout: l, Compare: k.String()})
		}
		path := k.Path()
		s.emit(StepStarted{Step: path, Total: len(l.Sizes) * len(l.Regions)})
		pts, err := Sweep(ctx, k, SweepOptions{Path: path, Op: OpRead, Sizes: l.Sizes, Regions: l.Regions, PointTime: s.cfg.PointTime,
			Progress: func(done, total int) {
				s.emit(Progress{Step: path, Done: int64(done), Total: int64(total), Elapsed: time.Since(s.start)})
			},
			Point: func(p Point) { s.emit(Measured{Point: p}) }})
		k.Close()
		rep.Points = append(rep.Points, pts...)
		if err != nil {
			return nil, err
		}
	}
	return first, nil
}

// openKernel opens the kernel's block device at node for one path: a
// path that cannot be a disk is the caller's setting to fix.
func openKernel(node string, direct bool) (*KernelDevice, error) {
	k, err := OpenKernel(node, direct)
	switch {
	case errors.Is(err, filedev.ErrBadTarget):
		return nil, &failure.SettingError{Setting: SettingCompare, Err: err}
	case err != nil:
		return nil, failure.Wrap(failure.Device, fmt.Errorf("the compared disk: %w", err))
	}
	return k, nil
}

// deviceNotes says what makes the points read otherwise than they look:
// a compared disk that is another medium, sizes past what the reader
// takes in one command.
func (s *session) deviceNotes(d *drive.Device, compared *KernelDevice, l Layout) {
	bs := d.Dev.BlockSize()
	if compared != nil && (compared.BlockCount() != d.Dev.BlockCount() || compared.BlockSize() != bs) {
		s.emit(Note{Message: fmt.Sprintf("%s holds %s in %d-byte blocks, the compared %s %s in %d-byte blocks: the kernel paths read another medium; the direct path reads %s",
			d.Name, units.FormatSize(d.Capacity()), bs, compared.String(), units.FormatSize(blockdev.Capacity(compared)), compared.BlockSize(),
			RegionNames(l.Regions))})
	}
	if fit := blockdev.FitTransfer(d.Dev, int(last(l.Sizes))); fit.Capped() {
		s.emit(Note{Message: fmt.Sprintf("%s takes at most %s per command: larger sizes go out as several commands", d.Name, units.FormatSize(fit.Limit))})
	}
}

// RegionNames lists regions as people read them: name (length at offset).
func RegionNames(rs []Region) string {
	var b []byte
	for i, r := range rs {
		if i > 0 {
			b = append(b, ", "...)
		}
		b = fmt.Appendf(b, "%s (%s at %s)", r.Name, units.FormatSize(r.Length), units.FormatSize(r.Offset))
	}
	return string(b)
}

// runOptions are Measure's options for the opened device, telling the
// observer.
func (s *session) runOptions(device string, l Layout) RunOptions {
	c := s.cfg
	o := RunOptions{
		Device: device, Layout: l, Write: c.Write, Region: c.Plan.Region, Preserve: c.Plan.Preserve,
		Skip: c.Skip, PointTime: c.PointTime, RandomTime: c.RandomTime, Seed: c.Seed,
		Step: func(step string, total int) { s.emit(StepStarted{Step: step, Total: total}) },
		Progress: func(step string, done, total int) {
			s.emit(Progress{Step: step, Done: int64(done), Total: int64(total), Elapsed: time.Since(s.start)})
		},
		Point: func(p Point) { s.emit(Measured{Point: p}) },
		Saved: c.Saved,
	}
	if r := c.Plan.Region; r != nil {
		o.Finish = region.FinishOptions{
			Restoring: func(cancelled bool) { s.emit(Restoring{Device: device, Region: *r, Cancelled: cancelled}) },
			Restored:  func() { s.emit(Restored{Device: device, Region: *r}) },
		}
	}
	return o
}
