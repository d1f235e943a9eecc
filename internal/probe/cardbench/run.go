package cardbench

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/usbflash/usbflash/internal/probe/region"
	"github.com/usbflash/usbflash/pipeline/blockdev"
)

// The steps of a run, in the order Measure takes them; a Progress names
// the one under way.
const (
	StepReadSweep   = "read sweep"
	StepAlignment   = "alignment"
	StepRandomRead  = "random read"
	StepSave        = "save"
	StepWriteSweep  = "write sweep"
	StepRandomWrite = "random write"
	StepRestore     = "restore"
)

// Skip leaves measurements out of a run.
type Skip struct {
	Align, Random, RoundTrip bool
}

// RunOptions say what Measure measures and whom it tells.
type RunOptions struct {
	Device string // names the device in errors
	// Disk is the node the system gives the device, "" when not known;
	// Claimed: the claimed reader's (region.Saved's Disk, Claimed).
	Disk       string
	Claimed    bool
	Layout     Layout // the sizes and the regions read
	Write      bool   // also measure writes, inside Region
	Region     *Region
	Preserve   bool // save Region first and restore it after
	Skip       Skip
	PointTime  time.Duration // each size in each region
	RandomTime time.Duration // each random measurement
	Seed       uint64        // of the random positions
	// Step, when set, is told a measurement began: total is its points
	// (1 for a measurement that is not a sweep).
	Step func(step string, total int)
	// Progress, when set, is told how far a sweep got.
	Progress func(step string, done, total int)
	// Point, when set, receives every point as it is measured.
	Point func(Point)
	// Saved, when set, is told the region was saved (Preserve) and
	// returns what to call once it no longer needs to be (the CLI
	// registers what a second Ctrl-C must do with the saved bytes).
	Saved func(*region.Saved) (done func())
	// Finish is passed to Saved.Finish (what is said while the region is
	// restored).
	Finish region.FinishOptions
}

// Result is what a run measured, also when it stopped early.
type Result struct {
	Points    []Point
	Align     *AlignResult
	Random    []RandomResult
	RoundTrip *RoundTrip
	// Transports is the same pass over Bulk-Only and over UAS, for a
	// reader that offers both; nil otherwise.
	Transports *Transports
}

// StoppedError is a run that failed or was cancelled, and what it left on
// the card: nothing written, or benchmark data over the write region (a
// preserved region is restored before it returns, and says so itself).
type StoppedError struct {
	Device string
	Wrote  *Region // nil: nothing was written
	Err    error
}

func (e *StoppedError) Error() string {
	left := "nothing was written"
	if r := e.Wrote; r != nil {
		left = fmt.Sprintf("bytes %d to %d of %s hold benchmark data now", r.Offset, r.Offset+r.Length, e.Device)
	}
	if errors.Is(e.Err, context.Canceled) {
		return fmt.Sprintf("cancelled (%s): %v", left, e.Err)
	}
	return fmt.Sprintf("%v (%s)", e.Err, left)
}
func (e *StoppedError) Unwrap() error { return e.Err }

// Measure runs the measurements of a bench on dev, in the order that keeps
// the card's data safe and the reads honest: the read sweep, the
// alignment, random reads, the command round trip (rt, a LUN; nil skips
// it), then with Write the write sweep and random writes inside Region,
// which with Preserve is saved first and restored (and verified) after,
// whatever happened in between, Ctrl-C included.
func Measure(ctx context.Context, dev blockdev.Device, rt RoundTripper, o RunOptions) (*Result, error) {
	res := &Result{}
	if err := o.reads(ctx, dev, rt, res); err != nil {
		return res, &StoppedError{Device: o.Device, Err: err}
	}
	if !o.Write {
		return res, nil
	}
	if err := o.writes(ctx, dev, res); err != nil {
		if o.Preserve {
			return res, err // it says what became of the region
		}
		return res, &StoppedError{Device: o.Device, Wrote: o.Region, Err: err}
	}
	return res, nil
}

func (o RunOptions) step(name string, total int) {
	if o.Step != nil {
		o.Step(name, total)
	}
}

func (o RunOptions) sweep(name string, op string, regions []Region) SweepOptions {
	total := len(o.Layout.Sizes) * len(regions)
	o.step(name, total)
	return SweepOptions{Path: PathDirect, Op: op, Sizes: o.Layout.Sizes, Regions: regions, PointTime: o.PointTime, Point: o.Point,
		Progress: func(done, total int) {
			if o.Progress != nil {
				o.Progress(name, done, total)
			}
		}}
}

func (o RunOptions) reads(ctx context.Context, dev blockdev.Device, rt RoundTripper, res *Result) error {
	pts, err := Sweep(ctx, dev, o.sweep(StepReadSweep, OpRead, o.Layout.Regions))
	res.Points = append(res.Points, pts...)
	if err != nil {
		return err
	}
	if !o.Skip.Align {
		o.step(StepAlignment, 1)
		al, err := Alignment(ctx, dev, AlignOptions{})
		if err != nil {
			return err
		}
		res.Align = &al
	}
	if !o.Skip.Random {
		o.step(StepRandomRead, 1)
		whole := Region{Name: "whole card", Length: blockdev.Capacity(dev)}
		rr, err := Random(ctx, dev, OpRead, whole, RandomSize, o.RandomTime, o.Seed)
		if err != nil {
			return err
		}
		res.Random = append(res.Random, rr)
	}
	if rt != nil && !o.Skip.RoundTrip {
		r, err := MeasureRoundTrip(ctx, rt, 200, o.RandomTime)
		if err != nil {
			return err
		}
		res.RoundTrip = &r
	}
	return nil
}

func (o RunOptions) writes(ctx context.Context, dev blockdev.Device, res *Result) (err error) {
	stated := *o.Region
	if o.Preserve {
		o.step(StepSave, 1)
		var saved *region.Saved
		if saved, err = region.Save(ctx, dev, o.Device, stated); err != nil {
			return fmt.Errorf("saving the region: %w; nothing was written", err)
		}
		saved.Disk, saved.Claimed = o.Disk, o.Claimed
		if o.Saved != nil {
			defer o.Saved(saved)()
		}
		restoring := o.Finish.Restoring
		o.Finish.Restoring = func(cancelled bool) {
			o.step(StepRestore, 1)
			if restoring != nil {
				restoring(cancelled)
			}
		}
		defer func() { err = saved.Finish(ctx, dev, err, o.Finish) }()
	}
	pts, err := Sweep(ctx, dev, o.sweep(StepWriteSweep, OpWrite, []Region{stated}))
	res.Points = append(res.Points, pts...)
	if err != nil || o.Skip.Random {
		return err
	}
	o.step(StepRandomWrite, 1)
	rw, err := Random(ctx, dev, OpWrite, stated, RandomSize, o.RandomTime, o.Seed+1)
	if err != nil {
		return err
	}
	res.Random = append(res.Random, rw)
	return nil
}
