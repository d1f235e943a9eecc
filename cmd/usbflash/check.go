package main

import (
	"context"
	"fmt"

	"github.com/spf13/cobra"

	"github.com/usbflash/usbflash/internal/drive"
	"github.com/usbflash/usbflash/internal/lib/units"
	"github.com/usbflash/usbflash/internal/probe/fakecheck"
	"github.com/usbflash/usbflash/internal/ui/sessionview"
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
			return runOr(c.Context(), runF, o, a.checkRun)
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
		_, err := fakecheck.Run(ctx, cfg, sessionview.Check(rep, words()))
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

// newRestoreCommand is `usbflash restore`: the one command that puts back
// the blocks a check could not (region.List). A list rather than dd lines:
// the regions are hundreds, some of them zeros (which dd conv=sparse skips
// and a plain dd of the whole span overwrites everything between), a usb:
// card has no disk path dd could name, and the list records the card so a
// card of another size is refused and the result read back.
// restoreOptions is what a restore command line asks for: its session's
// Config (but its OnNotice, which the run adds).
type restoreOptions struct{ Config fakecheck.PutBackConfig }

func newRestoreCommand(a *app, runF func(*restoreOptions) error) *cobra.Command {
	var force bool
	c := &cobra.Command{
		Use:   "restore LIST TARGET",
		Short: "Put back the blocks a check saved in a file (its message gives the command)",
		Long: `Write back every region LIST names (a file that check leaves beside the
saved blocks when it could not put them back: a second Ctrl-C, a failed
write), onto TARGET at its own offset, sync, and read back the regions the
card holds to compare. A card of another capacity or block size than the
one LIST was saved from is refused before anything is written.`,
		Args:              exactArgs(2, "LIST TARGET"),
		ValidArgsFunction: targetArgs(true),
		RunE: func(c *cobra.Command, args []string) error {
			t, readers, err := a.target(args[1])
			if err != nil {
				return err
			}
			o := &restoreOptions{Config: fakecheck.PutBackConfig{List: args[0], Target: t, Force: force, Readers: readers}}
			return runOr(c.Context(), runF, o, a.restoreRun)
		},
	}
	c.Flags().BoolVar(&force, "force", false, "write even though the target's disk is mounted")
	return c
}

// restoreRun puts the regions back and says what it did.
func (a *app) restoreRun(ctx context.Context, o *restoreOptions) error {
	return a.reported(false, false, func(rep termui.Reporter) error {
		cfg := o.Config
		cfg.OnNotice = words().Notices(rep)
		r, err := fakecheck.PutBack(ctx, cfg)
		if err == nil {
			sessionview.PutBack(rep, r)
		}
		return err
	})
}
