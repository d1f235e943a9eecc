package main

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"
	"usbflash/target"

	"github.com/spf13/cobra"

	"usbflash/cardbench"
	"usbflash/imagesrc"
	"usbflash/internal/units"
)

// benchFlags are the options of `usbflash bench`.
type benchFlags struct {
	write, preserve, yes, force bool
	region, compare, sizes      string
	skip                        []string
	pointTime, randomTime       time.Duration
	asJSON, quiet               bool
	plot                        string
}

// compareAuto is --compare without a value: the kernel's disk for the
// reader, found in sysfs.
const compareAuto = "auto"

func newBenchCommand(a *app) *cobra.Command {
	var f benchFlags
	c := &cobra.Command{
		Use:   "bench TARGET",
		Short: "Measure a reader and card at every transfer size",
		Long: `Measure TARGET's reader and card through usbflash's direct path:
sequential reads at every transfer size from one block to 32 MiB (powers of
two and 120 KiB, the Linux USB 2 request cap) in the card's start, middle
and end, each point bounded by --time; reads that straddle candidate
boundaries from 4 KiB to 32 MiB (as flashbench -a) and the erase unit they
point to; random 4 KiB reads per second; and the round trip of one TEST
UNIT READY. It ends with the --transfer-size to use for write: the smallest
within 2% of the best.

Reading changes nothing on the card. --write also measures sequential and
random 4 KiB writes inside --region (OFFSET:LENGTH, e.g. 1GiB:64MiB): that
destroys the region's data, so it asks as write does (or takes --yes) and
refuses a write-protected card and a mounted disk. With --preserve the
region is read into memory first and written back and verified after,
also when Ctrl-C cancels the run (press it once: the region is restored
before usbflash exits).

--compare reads through the kernel's block device too, with O_DIRECT and
through the page cache, at the same sizes: --compare alone finds the disk
the kernel made for a usb: reader (before usbflash takes the interface),
--compare=file:/dev/sdX (or --compare file:/dev/sdX) names it.`,
		Args: func(c *cobra.Command, args []string) error {
			if len(args) == 2 && f.compare == compareAuto {
				return nil // --compare file:PATH, written with a space
			}
			return exactArgs(1, "TARGET")(c, args)
		},
		ValidArgsFunction: targetArgs(false),
		RunE: func(c *cobra.Command, args []string) error {
			rep := a.reporterFor(f.asJSON, f.quiet)
			return a.reported(rep, func() error {
				spec, err := compareArg(args, &f)
				if err != nil {
					return err
				}
				t, err := target.Parse(spec)
				if err != nil {
					return err
				}
				return a.bench(c.Context(), rep, t, f)
			})
		},
	}
	fl := c.Flags()
	fl.BoolVar(&f.write, "write", false, "also measure writes inside --region (destroys its data unless --preserve)")
	fl.BoolVar(&f.preserve, "preserve", false, "with --write: save the region first, restore and verify it after (also on Ctrl-C)")
	fl.StringVar(&f.region, "region", "", "OFFSET:LENGTH of the card the write tests use (and the only region read); e.g. 1GiB:64MiB")
	fl.StringVar(&f.compare, "compare", "", "also read through the kernel: alone, the reader's kernel disk; or =file:/dev/sdX")
	fl.Lookup("compare").NoOptDefVal = compareAuto
	fl.StringVar(&f.sizes, "sizes", "", "comma-separated transfer sizes instead of one block to 32 MiB (e.g. 64KiB,120KiB,1MiB)")
	fl.DurationVar(&f.pointTime, "time", 250*time.Millisecond, "time spent on each size in each region")
	fl.DurationVar(&f.randomTime, "random-time", time.Second, "time spent on random 4 KiB reads (and writes)")
	fl.StringSliceVar(&f.skip, "skip", nil, "leave out measurements: align, random, roundtrip (comma-separated)")
	fl.BoolVarP(&f.yes, "yes", "y", false, "with --write: do not ask for confirmation")
	fl.BoolVar(&f.force, "force", false, "use the reader even though its kernel disk is mounted")
	fl.BoolVar(&f.asJSON, "json", false, "print one JSON object per line: every point, then a summary")
	fl.BoolVarP(&f.quiet, "quiet", "q", false, "print nothing but errors")
	fl.StringVar(&f.plot, "plot", "", "draw the curves to FILE.svg or FILE.png")
	return c
}

// compareArg reads `--compare file:PATH` written with a space, which the
// flag parser sees as --compare alone and a second argument: of the two
// arguments, the one that is a file: target is the comparison.
func compareArg(args []string, f *benchFlags) (string, error) {
	if len(args) == 1 {
		return args[0], nil
	}
	a, b := strings.HasPrefix(args[0], "file:"), strings.HasPrefix(args[1], "file:")
	if a == b {
		return "", &usageError{fmt.Sprintf("bench takes one TARGET; with two arguments (%s, %s) write --compare=file:PATH", args[0], args[1])}
	}
	if a {
		f.compare = args[0]
		return args[1], nil
	}
	f.compare = args[1]
	return args[0], nil
}

// benchPlan is what the flags ask for, checked before anything is opened.
type benchPlan struct {
	sizes  []int64 // nil: the default sweep for the device's block size
	region *cardbench.Region
	skip   map[string]bool
}

func parseBenchFlags(f benchFlags) (benchPlan, error) {
	p := benchPlan{skip: map[string]bool{}}
	for _, s := range f.skip {
		switch s {
		case "align", "random", "roundtrip":
			p.skip[s] = true
		default:
			return p, &usageError{fmt.Sprintf("--skip %s: want align, random or roundtrip", s)}
		}
	}
	if f.sizes != "" {
		for _, s := range strings.Split(f.sizes, ",") {
			n, err := units.ParseSize(strings.TrimSpace(s))
			if err != nil || n <= 0 {
				return p, &usageError{fmt.Sprintf("--sizes: %q is not a size (e.g. 64KiB,120KiB,1MiB)", s)}
			}
			p.sizes = append(p.sizes, n)
		}
		slices.Sort(p.sizes)
		p.sizes = slices.Compact(p.sizes)
	}
	if f.region != "" {
		off, length, ok := strings.Cut(f.region, ":")
		o, err1 := units.ParseSize(off)
		n, err2 := units.ParseSize(length)
		if !ok || err1 != nil || err2 != nil || o < 0 || n <= 0 {
			return p, &usageError{fmt.Sprintf("--region %q: want OFFSET:LENGTH, like 1GiB:64MiB", f.region)}
		}
		p.region = &cardbench.Region{Name: "region", Offset: o, Length: n}
	}
	switch {
	case f.write && p.region == nil:
		return p, &usageError{"--write needs --region OFFSET:LENGTH: the part of the card the write tests may destroy (e.g. --region 1GiB:64MiB)"}
	case f.preserve && !f.write:
		return p, &usageError{"--preserve goes with --write: reading alone changes nothing"}
	case f.pointTime <= 0 || f.randomTime <= 0:
		return p, &usageError{"--time and --random-time must be positive"}
	case f.plot != "" && !strings.EqualFold(filepath.Ext(f.plot), ".svg") && !strings.EqualFold(filepath.Ext(f.plot), ".png"):
		return p, &usageError{fmt.Sprintf("--plot %s: the file must end in .svg or .png", f.plot)}
	case f.compare != "" && f.compare != compareAuto && !strings.HasPrefix(f.compare, "file:"):
		return p, &usageError{fmt.Sprintf("--compare=%s: want file:/dev/sdX, or --compare alone for the reader's kernel disk", f.compare)}
	}
	return p, nil
}

// benchRun collects what bench measured.
type benchRun struct {
	target    string
	capacity  int64
	blockSize int
	points    []cardbench.Point
	align     *cardbench.AlignResult
	random    []cardbench.RandomResult
	roundTrip *cardbench.RoundTrip
}

func (a *app) bench(ctx context.Context, rep reporter, t target.Spec, f benchFlags) error {
	plan, err := parseBenchFlags(f)
	if err != nil {
		return err
	}
	run := &benchRun{target: t.Raw}
	usb, err := a.newReaders() // enumerated once, for --compare and the open alike
	if err != nil {
		return err
	}
	// Points are JSON events only: a text event would end the progress
	// bar each time, and the table says it all at the end.
	point := func(p cardbench.Point) {
		if !f.asJSON {
			return
		}
		rep.event(newBenchPointEvent(p), "")
	}

	// The kernel's disk goes away when usbflash claims the interface, so
	// the kernel paths are measured first.
	if f.compare != "" {
		node, err := compareNode(ctx, usb, t, f.compare)
		if err != nil {
			return err
		}
		for _, direct := range []bool{true, false} {
			pts, err := a.kernelSweep(ctx, rep, node, direct, plan, f, point)
			if err != nil {
				return err
			}
			run.points = append(run.points, pts...)
		}
	}

	// Without --write nothing is written: the target is opened read-only.
	d, err := target.Open(ctx, t, target.Options{Force: f.force, ReadOnly: !f.write, OnNotice: noticeNotes(rep), Readers: usb})
	if err != nil {
		return err
	}
	defer d.Close()
	run.target, run.capacity, run.blockSize = d.Name, d.Capacity(), d.Dev.BlockSize()
	sizes, regions, err := benchLayout(d, plan)
	if err != nil {
		return err
	}
	if d.LUN != nil && d.LUN.MaxTransfer() > 0 && sizes[len(sizes)-1] > d.LUN.MaxTransfer()*int64(run.blockSize) {
		note := fmt.Sprintf("%s takes at most %s per command: larger sizes go out as several commands", d.Name, units.FormatSize(d.LUN.MaxTransfer()*int64(run.blockSize)))
		rep.event(newNote(note), note)
	}
	if f.write {
		// The same refusals and question as write, before anything is
		// written. Both take an image source: the region stands in for
		// one (its end for the capacity check, already done above; its
		// length for the question).
		r := plan.region
		if err := target.Check(d, &imagesrc.Source{Format: imagesrc.FormatRaw, Size: r.Offset + r.Length, SizeExact: true}, target.CheckOptions{Force: true}); err != nil {
			return err
		}
		if !f.yes {
			what := fmt.Sprintf("benchmark data over bytes %d to %d", r.Offset, r.Offset+r.Length)
			if f.preserve {
				what += " (saved first and restored after)"
			}
			if err := a.confirm([]*target.Device{d}, what, &imagesrc.Source{Format: imagesrc.FormatRaw, Size: r.Length, SizeExact: true}); err != nil {
				return err
			}
		}
	}
	rep.event(&benchStartEvent{eventHeader: eventHeader{Event: evStart}, Command: cmdBench,
		Target: d.Name, Capacity: run.capacity, BlockSize: run.blockSize, Sizes: sizes, Regions: regions,
		PointTimeS: f.pointTime.Seconds(), Write: f.write, Preserve: f.preserve},
		fmt.Sprintf("Measuring %s (%s, %d-byte blocks): %d sizes from %s to %s, %s per size in each of %s",
			d.Name, units.FormatSize(run.capacity), run.blockSize, len(sizes), units.FormatSize(sizes[0]),
			units.FormatSize(sizes[len(sizes)-1]), f.pointTime, regionNames(regions)))

	if err := a.benchReads(ctx, rep, d, run, sizes, regions, plan, f, point); err != nil {
		return stopped(err, "nothing was written")
	}
	if f.write {
		if err := a.benchWrites(ctx, rep, d, run, sizes, *plan.region, plan, f, point); err != nil {
			if f.preserve {
				return err // says what became of the region
			}
			r := plan.region
			return stopped(err, fmt.Sprintf("bytes %d to %d of %s hold benchmark data now", r.Offset, r.Offset+r.Length, d.Name))
		}
	}
	return a.benchReport(rep, run, f)
}

// stopped says what a failed or cancelled run left on the card.
func stopped(err error, card string) error {
	if errors.Is(err, context.Canceled) {
		return fmt.Errorf("cancelled (%s): %w", card, err)
	}
	return fmt.Errorf("%w (%s)", err, card)
}

// benchLayout checks the plan against the opened device: sizes in whole
// blocks, the region inside the card.
func benchLayout(d *target.Device, plan benchPlan) ([]int64, []cardbench.Region, error) {
	bs := int64(d.Dev.BlockSize())
	sizes := plan.sizes
	if sizes == nil {
		sizes = cardbench.Sizes(int(bs), cardbench.MaxSize)
	}
	for _, n := range sizes {
		if n%bs != 0 {
			return nil, nil, &usageError{fmt.Sprintf("--sizes: %s is not a whole number of %s's %d-byte blocks", units.FormatSize(n), d.Name, bs)}
		}
	}
	if r := plan.region; r != nil {
		if r.Offset%bs != 0 || r.Length%bs != 0 || r.Offset+r.Length > d.Capacity() {
			return nil, nil, &usageError{fmt.Sprintf("--region %d:%d: want whole %d-byte blocks inside the card's %d bytes", r.Offset, r.Length, bs, d.Capacity())}
		}
		return sizes, []cardbench.Region{*r}, nil
	}
	return sizes, cardbench.ReadRegions(d.Capacity(), 0, cardbench.RegionAlign), nil
}

func regionNames(rs []cardbench.Region) string {
	var names []string
	for _, r := range rs {
		names = append(names, fmt.Sprintf("%s (%s at %s)", r.Name, units.FormatSize(r.Length), units.FormatSize(r.Offset)))
	}
	return strings.Join(names, ", ")
}

// sweepProgress feeds a sweep's progress to the reporter, in points.
func sweepProgress(rep reporter, ph phase, points int) func(done, total int) {
	start := time.Now()
	report := func(done, total int) {
		rep.progress(progressEvent{Phase: ph, Done: int64(done), Total: int64(total),
			ElapsedS: time.Since(start).Seconds(), unit: benchUnit})
	}
	report(0, points)
	return report
}

// stepProgress says a measurement that is not a sweep has begun.
func stepProgress(rep reporter, ph phase) {
	rep.progress(progressEvent{Phase: ph, Done: 0, Total: 1, unit: benchUnit})
}

func (a *app) benchReads(ctx context.Context, rep reporter, d *target.Device, run *benchRun, sizes []int64, regions []cardbench.Region, plan benchPlan, f benchFlags, point func(cardbench.Point)) error {
	pts, err := cardbench.Sweep(ctx, d.Dev, cardbench.SweepOptions{
		Path: cardbench.PathDirect, Op: cardbench.OpRead, Sizes: sizes, Regions: regions,
		PointTime: f.pointTime, Progress: sweepProgress(rep, phaseReadSweep, len(sizes)*len(regions)), Point: point,
	})
	run.points = append(run.points, pts...)
	if err != nil {
		return err
	}
	if !plan.skip["align"] {
		stepProgress(rep, phaseAlignment)
		al, err := cardbench.Alignment(ctx, d.Dev, cardbench.AlignOptions{})
		if err != nil {
			return err
		}
		run.align = &al
	}
	if !plan.skip["random"] {
		stepProgress(rep, phaseRandomRead)
		whole := cardbench.Region{Name: "whole card", Length: run.capacity}
		rr, err := cardbench.Random(ctx, d.Dev, cardbench.OpRead, whole, cardbench.RandomSize, f.randomTime, uint64(time.Now().UnixNano()))
		if err != nil {
			return err
		}
		run.random = append(run.random, rr)
	}
	if d.LUN != nil && !plan.skip["roundtrip"] {
		rt, err := cardbench.MeasureRoundTrip(ctx, d.LUN, 200, f.randomTime)
		if err != nil {
			return err
		}
		run.roundTrip = &rt
	}
	return nil
}

// benchWrites runs the write sweep and random writes inside region; with
// --preserve the region is saved first and restored (and verified) after,
// whatever happened in between, Ctrl-C included.
func (a *app) benchWrites(ctx context.Context, rep reporter, d *target.Device, run *benchRun, sizes []int64, region cardbench.Region, plan benchPlan, f benchFlags, point func(cardbench.Point)) (err error) {
	var saved *cardbench.Saved
	if f.preserve {
		stepProgress(rep, phaseSave)
		if saved, err = cardbench.Save(ctx, d.Dev, region); err != nil {
			return fmt.Errorf("--preserve: %w; nothing was written", err)
		}
		defer func() { err = a.restore(ctx, rep, d, saved, err) }()
	}
	pts, err := cardbench.Sweep(ctx, d.Dev, cardbench.SweepOptions{
		Path: cardbench.PathDirect, Op: cardbench.OpWrite, Sizes: sizes, Regions: []cardbench.Region{region},
		PointTime: f.pointTime, Progress: sweepProgress(rep, phaseWriteSweep, len(sizes)), Point: point,
	})
	run.points = append(run.points, pts...)
	if err != nil {
		return err
	}
	if plan.skip["random"] {
		return nil
	}
	stepProgress(rep, phaseRandomWrite)
	rw, err := cardbench.Random(ctx, d.Dev, cardbench.OpWrite, region, cardbench.RandomSize, f.randomTime, uint64(time.Now().UnixNano()))
	if err != nil {
		return err
	}
	run.random = append(run.random, rw)
	return nil
}

// restoreTimeout bounds a restore after a cancel: long enough for the
// largest preserved region on a slow card.
const restoreTimeout = 10 * time.Minute

// restore puts the saved region back, after the measurements or their
// failure or cancel, and says so. The user's cancel does not stop it: a
// half-written region is what --preserve exists to prevent.
func (a *app) restore(ctx context.Context, rep reporter, d *target.Device, saved *cardbench.Saved, runErr error) error {
	rctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), restoreTimeout)
	defer cancel()
	r := saved.Region
	if ctx.Err() != nil {
		note := fmt.Sprintf("Restoring bytes %d to %d of %s before exiting (Ctrl-C again would leave them half written)", r.Offset, r.Offset+r.Length, d.Name)
		rep.event(newNote(note), note)
	}
	if err := saved.Restore(rctx, d.Dev); err != nil {
		file, ferr := saveRecovery(saved)
		how := fmt.Sprintf("writing the saved bytes to a file failed too (%v)", ferr)
		if ferr == nil {
			how = fmt.Sprintf("the saved bytes are in %s: put them back with dd if=%s of=DISK bs=%d seek=%d conv=fsync", file, file, d.Dev.BlockSize(), r.Offset/int64(d.Dev.BlockSize()))
		}
		return errors.Join(runErr, &codedError{exitDevice, fmt.Errorf("--preserve: %w; %s", err, how)})
	}
	msg := fmt.Sprintf("Restored and verified bytes %d to %d of %s", r.Offset, r.Offset+r.Length, d.Name)
	rep.event(&benchRestoredEvent{eventHeader{Event: evRestored}, r.Offset, r.Length, true}, msg)
	if runErr != nil {
		return fmt.Errorf("%w (the region was restored and verified)", runErr)
	}
	return nil
}

// saveRecovery writes a region that could not be restored to a file.
func saveRecovery(saved *cardbench.Saved) (string, error) {
	f, err := os.CreateTemp("", fmt.Sprintf("usbflash-bench-region-%d-*.img", saved.Region.Offset))
	if err != nil {
		return "", err
	}
	if _, err := f.Write(saved.Bytes()); err != nil {
		f.Close()
		return "", err
	}
	return f.Name(), f.Close()
}

// kernelSweep reads the kernel's block device at node through one path.
func (a *app) kernelSweep(ctx context.Context, rep reporter, node string, direct bool, plan benchPlan, f benchFlags, point func(cardbench.Point)) ([]cardbench.Point, error) {
	k, err := cardbench.OpenKernel(node, direct)
	if err != nil {
		return nil, &codedError{exitDevice, fmt.Errorf("--compare: %w", err)}
	}
	defer k.Close()
	d := &target.Device{Name: "file:" + node, Dev: k}
	sizes, regions, err := benchLayout(d, plan)
	if err != nil {
		return nil, err
	}
	pts, err := cardbench.Sweep(ctx, k, cardbench.SweepOptions{
		Path: k.Path(), Op: cardbench.OpRead, Sizes: sizes, Regions: regions,
		PointTime: f.pointTime, Progress: sweepProgress(rep, phase(k.Path()), len(sizes)*len(regions)), Point: point,
	})
	return pts, err
}
