package main

import (
	"context"
	"fmt"
	"path/filepath"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/usbflash/usbflash/internal/drive"
	"github.com/usbflash/usbflash/internal/lib/outfile"
	"github.com/usbflash/usbflash/internal/lib/units"
	"github.com/usbflash/usbflash/internal/probe/cardbench"
	"github.com/usbflash/usbflash/internal/probe/region"
	"github.com/usbflash/usbflash/internal/ui/benchview"
	"github.com/usbflash/usbflash/internal/ui/termui"
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

// benchOptions is what a bench command line asks for: its session's
// Config (but its Confirm and Saved, which the run adds) and what is
// shown of it.
type benchOptions struct {
	Config      cardbench.Config
	Yes         bool
	Plot        string // --plot's file, checked
	JSON, Quiet bool
}

func newBenchCommand(a *app, runF func(*benchOptions) error) *cobra.Command {
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
			spec, err := compareArg(args, &f)
			if err != nil {
				return err
			}
			t, err := drive.Parse(spec)
			if err != nil {
				return err
			}
			o := &benchOptions{Yes: f.yes, Plot: f.plot, JSON: f.asJSON, Quiet: f.quiet}
			if o.Config, err = benchConfig(t, f); err != nil {
				return err
			}
			if o.Config.Readers, err = a.newReaders(); err != nil {
				return err
			}
			return runOr(c.Context(), runF, o, a.benchRun)
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

// benchConfig reads bench's flags into a session's Config, checking
// before anything is opened what no card could run.
func benchConfig(t drive.Spec, f benchFlags) (cardbench.Config, error) {
	c := cardbench.Config{Target: t, Write: f.write, Force: f.force, PointTime: f.pointTime, RandomTime: f.randomTime,
		Seed: uint64(time.Now().UnixNano())}
	for _, s := range f.skip {
		switch s {
		case "align":
			c.Skip.Align = true
		case "random":
			c.Skip.Random = true
		case "roundtrip":
			c.Skip.RoundTrip = true
		default:
			return c, &usageError{fmt.Sprintf("--skip %s: want align, random or roundtrip", s)}
		}
	}
	if f.sizes != "" {
		for _, s := range strings.Split(f.sizes, ",") {
			n, err := units.ParseSize(strings.TrimSpace(s))
			if err != nil || n <= 0 {
				return c, &usageError{fmt.Sprintf("--sizes: %q is not a size (e.g. 64KiB,120KiB,1MiB)", s)}
			}
			c.Plan.Sizes = append(c.Plan.Sizes, n)
		}
	}
	if f.region != "" {
		off, length, ok := strings.Cut(f.region, ":")
		o, err1 := units.ParseSize(off)
		n, err2 := units.ParseSize(length)
		if !ok || err1 != nil || err2 != nil || o < 0 || n <= 0 {
			return c, &usageError{fmt.Sprintf("--region %q: want OFFSET:LENGTH, like 1GiB:64MiB", f.region)}
		}
		c.Plan.Region = &cardbench.Region{Name: "region", Offset: o, Length: n}
	}
	c.Plan.Preserve = f.preserve
	switch path, file := strings.CutPrefix(f.compare, "file:"); {
	case f.compare == compareAuto:
		c.Compare = cardbench.CompareReaderDisk
	case file && path == "":
		return c, &usageError{"--compare=file: needs a path, like --compare=file:/dev/sdb"}
	case file:
		c.Compare = path
	case f.compare != "":
		return c, &usageError{fmt.Sprintf("--compare=%s: want file:/dev/sdX, or --compare alone for the reader's kernel disk", f.compare)}
	}
	switch {
	case f.write && c.Plan.Region == nil:
		return c, &usageError{"--write needs --region OFFSET:LENGTH: the part of the card the write tests may destroy (e.g. --region 1GiB:64MiB)"}
	case f.preserve && !f.write:
		return c, &usageError{"--preserve goes with --write: reading alone changes nothing"}
	case f.pointTime <= 0 || f.randomTime <= 0:
		return c, &usageError{"--time and --random-time must be positive"}
	case f.plot != "" && !strings.EqualFold(filepath.Ext(f.plot), ".svg") && !strings.EqualFold(filepath.Ext(f.plot), ".png"):
		return c, &usageError{fmt.Sprintf("--plot %s: the file must end in .svg or .png", f.plot)}
	}
	if err := c.Plan.Check(); err != nil {
		return c, err
	}
	// A plot that could not be saved must not be found out after the run.
	if f.plot != "" {
		if err := outfile.Check(f.plot); err != nil {
			return c, fmt.Errorf("--plot: %w", err)
		}
	}
	return c, nil
}

// benchRun runs a bench session and presents it.
func (a *app) benchRun(ctx context.Context, o *benchOptions) error {
	return a.reported(o.JSON, o.Quiet, func(rep termui.Reporter) error {
		cfg := o.Config
		if cfg.Write && !o.Yes {
			cfg.Confirm = func(d *drive.Device, r cardbench.Region) error {
				what := fmt.Sprintf("benchmark data over bytes %d to %d", r.Offset, r.End())
				if cfg.Plan.Preserve {
					what += " (saved first and restored after)"
				}
				return a.confirmOverwrite([]*drive.Device{d}, fmt.Sprintf("%s (%s)", what, units.FormatBytes(r.Length)))
			}
		}
		// A second Ctrl-C keeps the saved bytes in a file before the process
		// ends.
		cfg.Saved = func(saved *region.Saved) func() {
			return a.aborts.Add(func() {
				// nil: the region was restored and verified first, and the
				// run says so itself.
				if err := saved.Abandon(""); err != nil {
					rep.Fail(newErrorEvent(err, exitCancelled))
				}
			})
		}
		run, err := cardbench.Run(ctx, cfg, benchview.NewPresenter(rep, words(), cfg, o.JSON).Observe)
		if err != nil {
			return err
		}
		if err := benchview.Report(rep, words(), run, o.Plot); err != nil {
			return fmt.Errorf("--plot: %w", err)
		}
		return nil
	})
}
