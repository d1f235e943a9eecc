package main

import (
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/usbflash/usbflash/blockdev"
	"github.com/usbflash/usbflash/cardbench"
	"github.com/usbflash/usbflash/drive"
	"github.com/usbflash/usbflash/failure"
	"github.com/usbflash/usbflash/filedev"
	"github.com/usbflash/usbflash/imagesrc"
	"github.com/usbflash/usbflash/internal/outfile"
	"github.com/usbflash/usbflash/internal/units"
	"github.com/usbflash/usbflash/region"
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
region (at most 512 MiB) is read into memory first and written back and
verified after, also when Ctrl-C cancels the run (press it once: the
region is restored before usbflash exits; a second Ctrl-C stops the
restore and saves the region to a file, with the dd line that puts it
back).

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
				t, err := drive.Parse(spec)
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
	fl.BoolVarP(&f.quiet, "quiet", "q", false, "print only the recommended transfer size, and errors; with --json, only the summary or error event")
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
	cardbench.Plan
	skip map[string]bool
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
			p.Sizes = append(p.Sizes, n)
		}
	}
	if f.region != "" {
		off, length, ok := strings.Cut(f.region, ":")
		o, err1 := units.ParseSize(off)
		n, err2 := units.ParseSize(length)
		if !ok || err1 != nil || err2 != nil || o < 0 || n <= 0 {
			return p, &usageError{fmt.Sprintf("--region %q: want OFFSET:LENGTH, like 1GiB:64MiB", f.region)}
		}
		p.Region = &cardbench.Region{Name: "region", Offset: o, Length: n}
	}
	p.Preserve = f.preserve
	switch {
	case f.write && p.Region == nil:
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
	if err := p.Check(); err != nil {
		return p, planFlagError(err)
	}
	// A plot that could not be saved must not be found out after the run.
	if f.plot != "" {
		if err := outfile.Check(f.plot); err != nil {
			return p, fmt.Errorf("--plot: %w", err)
		}
	}
	return p, nil
}

// planFlagError names the flag behind a plan the bench package refused.
func planFlagError(err error) error {
	var pe *cardbench.PlanError
	if !errors.As(err, &pe) {
		return err
	}
	flag := "--sizes"
	switch pe.Reason {
	case cardbench.PreserveOverMemory:
		flag = "--preserve --region"
	case cardbench.RegionNotInCard:
		flag = "--region"
	}
	return fmt.Errorf("%s: %w", flag, err)
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

func (a *app) bench(ctx context.Context, rep reporter, t drive.Spec, f benchFlags) error {
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
	// the kernel paths are measured first, and the run's start describes
	// the disk they read: the target cannot be opened yet.
	var compared *cardbench.KernelDevice
	if f.compare != "" {
		node, err := compareNode(ctx, usb, t, f.compare)
		if err != nil {
			return err
		}
		if compared, err = openKernel(node, true); err != nil {
			return err
		}
		l, err := benchLayout("file:"+node, compared, plan)
		if err != nil {
			compared.Close()
			return err
		}
		benchStart(rep, t.Raw, compared, l, f)
		pts, err := a.kernelSweep(ctx, rep, compared, plan, f, point)
		compared.Close()
		run.points = append(run.points, pts...)
		if err != nil {
			return err
		}
		buffered, err := openKernel(node, false)
		if err != nil {
			return err
		}
		pts, err = a.kernelSweep(ctx, rep, buffered, plan, f, point)
		buffered.Close()
		run.points = append(run.points, pts...)
		if err != nil {
			return err
		}
	}

	// Without --write nothing is written: the target is opened read-only.
	d, err := drive.Open(ctx, t, drive.Options{Force: f.force, ReadOnly: !f.write, OnNotice: noticeNotes(rep), Readers: usb})
	if err != nil {
		return err
	}
	defer d.Close()
	run.target, run.capacity, run.blockSize = d.Name, d.Capacity(), d.Dev.BlockSize()
	l, err := benchLayout(d.Name, d.Dev, plan)
	if err != nil {
		return err
	}
	sizes, regions := l.Sizes, l.Regions
	if compared != nil && (compared.BlockCount() != d.Dev.BlockCount() || compared.BlockSize() != d.Dev.BlockSize()) {
		note := fmt.Sprintf("%s holds %s in %d-byte blocks, the compared %s %s in %d-byte blocks: the kernel paths read another medium; the direct path reads %s",
			d.Name, units.FormatSize(d.Capacity()), d.Dev.BlockSize(), compared.String(), units.FormatSize(compared.BlockCount()*int64(compared.BlockSize())), compared.BlockSize(),
			regionNames(regions))
		rep.event(newNote(note), note)
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
		r := plan.Region
		if err := drive.Check(d, &imagesrc.Source{Format: imagesrc.FormatRaw, Size: r.Offset + r.Length, SizeExact: true}, drive.CheckOptions{Force: true}); err != nil {
			return err
		}
		if !f.yes {
			what := fmt.Sprintf("benchmark data over bytes %d to %d", r.Offset, r.Offset+r.Length)
			if f.preserve {
				what += " (saved first and restored after)"
			}
			if err := a.confirm([]*drive.Device{d}, what, &imagesrc.Source{Format: imagesrc.FormatRaw, Size: r.Length, SizeExact: true}); err != nil {
				return err
			}
		}
	}
	if compared == nil {
		benchStart(rep, d.Name, d.Dev, l, f)
	}

	var rt cardbench.RoundTripper
	if d.LUN != nil {
		rt = d.LUN
	}
	var since time.Time // the step under way began
	res, err := cardbench.Measure(ctx, d.Dev, rt, cardbench.RunOptions{
		Device: d.Name, Layout: l, Write: f.write, Region: plan.Region, Preserve: f.preserve,
		Skip:      cardbench.Skip{Align: plan.skip["align"], Random: plan.skip["random"], RoundTrip: plan.skip["roundtrip"]},
		PointTime: f.pointTime, RandomTime: f.randomTime, Seed: uint64(time.Now().UnixNano()),
		Step: func(step string, total int) {
			since = time.Now()
			rep.progress(progressEvent{Phase: phase(step), Total: int64(total), unit: benchUnit})
		},
		Progress: func(step string, done, total int) {
			rep.progress(progressEvent{Phase: phase(step), Done: int64(done), Total: int64(total),
				ElapsedS: time.Since(since).Seconds(), unit: benchUnit})
		},
		Point: point,
		// A second Ctrl-C keeps the saved bytes in a file before the
		// process ends.
		Saved: func(saved *region.Saved) func() {
			return a.aborts.add(func() {
				// nil: the region was restored and verified first, and
				// the run says so itself.
				if err := saved.Abandon(""); err != nil {
					rep.fail(err, exitCancelled)
				}
			})
		},
		Finish: restoreEvents(rep, plan.Region, d.Name),
	})
	run.points = append(run.points, res.Points...)
	run.align, run.random, run.roundTrip = res.Align, res.Random, res.RoundTrip
	if err != nil {
		return err
	}
	return a.benchReport(rep, run, f)
}

// benchLayout fits the plan to an opened device.
func benchLayout(name string, dev blockdev.Device, plan benchPlan) (cardbench.Layout, error) {
	l, err := plan.Layout(name, dev.BlockCount()*int64(dev.BlockSize()), dev.BlockSize())
	return l, planFlagError(err)
}

// benchStart says what the run measures, before its first measurement:
// the target's layout, or with --compare that of the kernel's disk, the
// first one read.
func benchStart(rep reporter, name string, dev blockdev.Device, l cardbench.Layout, f benchFlags) {
	capacity, bs := dev.BlockCount()*int64(dev.BlockSize()), dev.BlockSize()
	e := &benchStartEvent{eventHeader: eventHeader{Event: evStart}, Command: cmdBench,
		Target: name, Capacity: capacity, BlockSize: bs, Sizes: l.Sizes, Regions: l.Regions,
		PointTimeS: f.pointTime.Seconds(), Write: f.write, Preserve: f.preserve}
	what := fmt.Sprintf("%s (%s, %d-byte blocks)", name, units.FormatSize(capacity), bs)
	if k, ok := dev.(*cardbench.KernelDevice); ok {
		e.Compare = k.String()
		what = fmt.Sprintf("%s, and first the kernel's %s (%s, %d-byte blocks)", name, k.String(), units.FormatSize(capacity), bs)
	}
	rep.event(e, fmt.Sprintf("Measuring %s: %d sizes from %s to %s, %s per size in each of %s",
		what, len(l.Sizes), units.FormatSize(l.Sizes[0]), units.FormatSize(l.Sizes[len(l.Sizes)-1]), f.pointTime, regionNames(l.Regions)))
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

// restoreEvents says when a preserved region is being restored, and that
// it was.
func restoreEvents(rep reporter, stated *cardbench.Region, device string) region.FinishOptions {
	if stated == nil {
		return region.FinishOptions{}
	}
	r := *stated
	return region.FinishOptions{
		Restoring: func(cancelled bool) {
			if cancelled {
				note := fmt.Sprintf("Restoring bytes %d to %d of %s before exiting (Ctrl-C again stops the restore and saves them to a file)", r.Offset, r.Offset+r.Length, device)
				rep.event(newNote(note), note)
			}
		},
		Restored: func() {
			msg := fmt.Sprintf("Restored and verified bytes %d to %d of %s", r.Offset, r.Offset+r.Length, device)
			rep.event(&benchRestoredEvent{eventHeader{Event: evRestored}, r.Offset, r.Length, true}, msg)
		},
	}
}

// openKernel opens the kernel's block device at node for one path.
func openKernel(node string, direct bool) (*cardbench.KernelDevice, error) {
	k, err := cardbench.OpenKernel(node, direct)
	switch {
	case errors.Is(err, filedev.ErrBadTarget):
		// A path that cannot be a disk (missing, a directory): as for
		// a file: target, the command line's to fix.
		return nil, failure.Wrap(failure.Usage, fmt.Errorf("--compare: %w", err))
	case err != nil:
		return nil, failure.Wrap(failure.Device, fmt.Errorf("--compare: %w", err))
	}
	return k, nil
}

// kernelSweep reads the kernel's block device through one path.
func (a *app) kernelSweep(ctx context.Context, rep reporter, k *cardbench.KernelDevice, plan benchPlan, f benchFlags, point func(cardbench.Point)) ([]cardbench.Point, error) {
	l, err := benchLayout(k.String(), k, plan)
	if err != nil {
		return nil, err
	}
	return cardbench.Sweep(ctx, k, cardbench.SweepOptions{
		Path: k.Path(), Op: cardbench.OpRead, Sizes: l.Sizes, Regions: l.Regions,
		PointTime: f.pointTime, Progress: sweepProgress(rep, phase(k.Path()), len(l.Sizes)*len(l.Regions)), Point: point,
	})
}
