package main

import (
	"context"
	"fmt"
	"time"

	"github.com/spf13/cobra"

	"github.com/usbflash/usbflash/internal/drive"
	"github.com/usbflash/usbflash/internal/lib/units"
	"github.com/usbflash/usbflash/internal/probe/fakecheck"
	"github.com/usbflash/usbflash/internal/ui/jsonevents"
	"github.com/usbflash/usbflash/internal/ui/termui"
)

// checkFlags are the options of `usbflash check`.
type checkFlags struct {
	destructive, yes, force bool
	maxCache                string
	asJSON, quiet           bool
}

// checkOptions is what a check command line asks for: its session's
// Config (but its Abortable and Confirm, which the run adds).
type checkOptions struct {
	Config      fakecheck.Config
	Yes         bool
	JSON, Quiet bool
}

func newCheckCommand(a *app, runF func(*checkOptions) error) *cobra.Command {
	var f checkFlags
	c := &cobra.Command{
		Use:   "check TARGET",
		Short: "Find out whether a card holds what it claims (fake cards)",
		Long: `Probe TARGET for a fake capacity: blocks past the real flash that wrap
around onto earlier ones, lose what is written, or read back garbage, also
behind a cache that reads the last writes back until it is full. It names
the usable size (usable_size in --json, in bytes: partition the card to
at most that) and how the card lies; a fake card exits with code 8.

It writes a few hundred blocks spread over the card and rewrites up to
--max-cache of the card's own content unchanged (to push a cache's copies
out), saving every block it overwrites first and putting it back and
reading it back at the end, also after an error or Ctrl-C (press it once:
the blocks are put back before usbflash exits). --destructive skips that,
for a card whose content does not matter; it asks first, as write does.`,
		Args:              exactArgs(1, "TARGET"),
		ValidArgsFunction: targetArgs(false),
		RunE: func(c *cobra.Command, args []string) error {
			maxCache, err := parseMaxCache(f.maxCache)
			if err != nil {
				return err
			}
			t, readers, err := a.target(args[0])
			if err != nil {
				return err
			}
			o := &checkOptions{Yes: f.yes, JSON: f.asJSON, Quiet: f.quiet,
				Config: fakecheck.Config{Target: t, Readers: readers, Force: f.force, MaxCache: maxCache, Destructive: f.destructive}}
			if runF != nil {
				return runF(o)
			}
			return a.checkRun(c.Context(), o)
		},
	}
	fl := c.Flags()
	fl.BoolVar(&f.destructive, "destructive", false, "do not save and restore the blocks the check overwrites (a blank card)")
	fl.StringVar(&f.maxCache, "max-cache", units.FormatSize(fakecheck.DefaultMaxCache), "see through a cache up to this size (rewrites up to this much of the card unchanged)")
	fl.BoolVarP(&f.yes, "yes", "y", false, "with --destructive: do not ask for confirmation")
	fl.BoolVar(&f.force, "force", false, "check the card even though its kernel disk is mounted")
	fl.BoolVar(&f.asJSON, "json", false, "print one JSON object per line (start, phase, progress, note, summary, error)")
	fl.BoolVarP(&f.quiet, "quiet", "q", false, "print only the verdict and errors; with --json, only the summary or error event")
	return c
}

// checkRun runs a check session and presents it.
func (a *app) checkRun(ctx context.Context, o *checkOptions) error {
	return a.reported(o.JSON, o.Quiet, func(rep termui.Reporter) error {
		cfg := o.Config
		// A second Ctrl-C keeps the saved blocks in a file before the
		// process ends.
		cfg.Abortable = func(abandon func() error) func() {
			return a.aborts.Add(func() { rep.Fail(newErrorEvent(abandon(), exitCancelled)) })
		}
		if !o.Yes {
			cfg.Confirm = func(d *drive.Device) error {
				return a.confirmOverwrite([]*drive.Device{d}, "fake-card probe data (--destructive: nothing is restored)")
			}
		}
		_, err := fakecheck.Run(ctx, cfg, &checkPresenter{rep: rep})
		return err
	})
}

// parseMaxCache reads --max-cache as fakecheck.Options.MaxCache takes it:
// 0 becomes -1, no cache to see through.
func parseMaxCache(s string) (int64, error) {
	n, err := units.ParseSize(s)
	if err != nil || n < 0 {
		return 0, &usageError{fmt.Sprintf("--max-cache: %v; want 0 (trust the first read-back) or a size such as 1GiB, "+
			"any up to 8 EiB (one larger than the card sees through all of it)", err)}
	}
	if n == 0 {
		return -1, nil
	}
	return n, nil
}

// checkPresenter shows a check: the start line, the steps as progress
// (the cache flush in bytes), the verdict.
type checkPresenter struct {
	rep      termui.Reporter
	last     time.Time
	lastStep string
}

func (p *checkPresenter) Observe(e fakecheck.Event) {
	switch e := e.(type) {
	case fakecheck.Note:
		p.rep.Event(noteWithAdvice(e.Message, e.Notice))
	case fakecheck.Started:
		how := "each block saved first and put back after"
		if e.Destructive {
			how = "nothing saved (--destructive)"
		}
		p.rep.Event(&jsonevents.CheckStart{Command: jsonevents.CommandCheck, Target: e.Card,
			Capacity: e.Capacity, BlockSize: e.BlockSize, MaxCache: e.MaxCache, Destructive: e.Destructive},
			fmt.Sprintf("Checking %s (%s, %d-byte blocks) for a fake capacity, %s", e.Card, units.FormatBytes(e.Capacity), e.BlockSize, how))
	case fakecheck.PuttingBack:
		note := fmt.Sprintf("Putting back the blocks the check wrote on %s before exiting (Ctrl-C again stops that and keeps them in a file)", e.Card)
		p.rep.Event(jsonevents.NewNote(note), note)
	case fakecheck.Stepped:
		p.progress(e)
	case fakecheck.Finished:
		res := e.Result
		summary := &jsonevents.CheckSummary{Command: jsonevents.CommandCheck, Target: e.Card,
			Capacity: res.Claimed, UsableSize: res.Usable, Fake: res.Fake(), Kind: string(res.Kind),
			Cache: res.Cache, CacheChecked: res.CacheChecked, Written: res.Written, Read: res.Read,
			Commands: res.Commands, ElapsedS: res.Elapsed.Seconds(), Restored: res.Restored && res.Verified}
		if res.Kind == fakecheck.Wrap {
			summary.WrapsTo = &res.WrapsTo
		}
		p.rep.Event(summary, checkText(e.Card, res))
	}
}

// progress shows the probe's steps, and the cache flush in bytes.
func (p *checkPresenter) progress(e fakecheck.Stepped) {
	// The flush reports every command: a few times a second is enough.
	if e.Step == p.lastStep && e.Done < e.Total && time.Since(p.last) < 200*time.Millisecond {
		return
	}
	p.last, p.lastStep = time.Now(), e.Step
	ph := jsonevents.PhaseProbe
	switch fakecheck.Step(e.Step) {
	case fakecheck.StepCache:
		ph = jsonevents.PhaseCache
	case fakecheck.StepRestore:
		ph = jsonevents.PhasePutBack
	}
	total := e.Total
	if total == 0 {
		total = -1
	}
	p.rep.Progress(jsonevents.Progress{Phase: ph, Done: e.Done, Total: total, ElapsedS: e.Elapsed.Seconds()})
}

// checkText is the verdict as a person reads it.
func checkText(name string, res *fakecheck.Result) string {
	var verdict string
	if res.Fake() {
		verdict = fmt.Sprintf("%s is FAKE: %s.\nUsable size: %d bytes (%s)", name, res.Describe(), res.Usable, units.FormatBytes(res.Usable))
	} else {
		verdict = fmt.Sprintf("%s shows no fake capacity: %s", name, res.Describe())
	}
	did := fmt.Sprintf("Probe: %d commands, %s written, %s read in %s", res.Commands, units.FormatBytes(res.Written),
		units.FormatBytes(res.Read), res.Elapsed.Round(time.Millisecond))
	if res.Saved > 0 {
		did += "; every block it wrote was put back and read back the same"
		if res.Fake() {
			did += " (up to the usable size: past it the card keeps nothing)"
		}
		if res.Kind == fakecheck.Wrap && res.PastRegions > 0 {
			did += fmt.Sprintf("; the %d saved regions past it (%s) alias blocks below it: they went back onto those blocks "+
				"in the order that leaves each block what it held first", res.PastRegions, units.FormatBytes(res.PastBytes))
		}
	}
	return verdict + "\n" + did
}
