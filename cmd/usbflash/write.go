package main

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"os"
	"strings"
	"time"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"github.com/usbflash/usbflash/internal/drive"
	"github.com/usbflash/usbflash/internal/failure"
	"github.com/usbflash/usbflash/internal/image"
	"github.com/usbflash/usbflash/internal/lib/units"
	"github.com/usbflash/usbflash/internal/probe/fakecheck"
	"github.com/usbflash/usbflash/internal/session"
	"github.com/usbflash/usbflash/internal/station"
	"github.com/usbflash/usbflash/internal/station/metrics"
	"github.com/usbflash/usbflash/internal/station/slotlog"
	"github.com/usbflash/usbflash/internal/ui/jsonevents"
	"github.com/usbflash/usbflash/internal/ui/report"
	"github.com/usbflash/usbflash/internal/ui/sessionview"
	"github.com/usbflash/usbflash/internal/ui/termui"
	"github.com/usbflash/usbflash/pipeline"
	"github.com/usbflash/usbflash/pipeline/blockdev"
)

// writeFlags are the options of `usbflash write`.
type writeFlags struct {
	yes, force, noVerify, eject bool
	verifyHash                  string // a pipeline.VerifyMethod's name
	verifyMethod                pipeline.VerifyMethod
	trust                       trustFlags
	transferSize                string
	buffers                     int // as given; 0: the engine's, for the size the cards take
	asJSON, quiet               bool
	// Many cards at once.
	all, watch, skipRefused bool
	lag                     int
	report                  string
	bmap                    blockMapFlags
	check                   bool          // probe each card for a fake capacity first
	maxCache                string        // --check's cache bound
	metrics                 metrics.Setup // --metrics-listen, --metrics-textfile
	custom                  customizeFlags
	repair                  bool
	stopTimeout             time.Duration // --watch: how long a stop request lets cards finish
	catalog                 catalogFlags  // --catalog, --os
	logDir                  string        // --log-dir: one log per slot
	station, operator       string        // labels of every record
}

// writeOptions is what a write command line asks for: its session's
// Config (but its Observer, Confirm and Report file, which the run adds),
// the targets, and what the command does around the session. The flags
// make it, and writeRun runs it.
type writeOptions struct {
	Config  session.Config
	Targets []drive.Spec // the TARGET arguments; none with --all or --watch
	// All and Watch find the readers themselves; Yes asks nobody.
	All, Watch, Yes bool
	Report          string        // --report's file, checked: a .json or .csv in a directory that can be written
	StopTimeout     time.Duration // --stop-timeout: how long a stop request lets --watch's cards finish
	LogDir          string        // --log-dir: one log per slot
	Metrics         metrics.Setup // --metrics-listen, --metrics-textfile
	JSON, Quiet     bool
	// Command names the session in its events: write, or erase and
	// format, which write their own blocks (Config.Blocks) through write's
	// session and presenters; Asks is what their question says is written.
	Command jsonevents.Command
	Asks    string
}

func newWriteCommand(a *app, runF func(*writeOptions) error) *cobra.Command {
	var f writeFlags
	c := &cobra.Command{
		Use:   "write IMAGE|--os NAME TARGET",
		Short: "Write an OS image to a card, sync, and verify it",
		Long: `Write IMAGE (raw, gzip, xz, zstd, bzip2, lz4, or a zip, 7z or tar holding
one image; the format is read from the file's bytes, not its name; - is
standard input; an http(s) URL streams, resuming dropped connections) to
TARGET, then sync and read the card back to verify it. A disc image that
boots only from a CD or DVD (a Windows installer ISO: El Torito, no MBR or
GPT) is refused: written raw it boots nothing (--force writes it).

Before the first byte is written usbflash shows the target and asks for
confirmation, and refuses a write-protected card, an image larger than the
card, and (for usb: and file: targets) a disk with mounted partitions.

The first transfer is written last, after its region was zeroed first, so
an interrupted write never leaves a card that looks bootable. Ctrl-C,
SIGTERM and SIGHUP stop after the command in flight, sync and report how
far the write got (exit 130). A closed standard output (--json | head)
does not stop a write.

The buffers take (buffers + 2) x transfer size of memory, at most ` + units.FormatSize(blockdev.MaxBufferMemory) + `.`,
		Args:              writeArgs(&f),
		ValidArgsFunction: targetArgs(true),
		RunE: func(c *cobra.Command, args []string) error {
			opts, err := a.writeOptions(c, args, &f)
			if err != nil {
				return err
			}
			return runOr(c.Context(), runF, opts, a.writeRun)
		},
	}
	addCardsFlags(c, &f)
	fl := c.Flags()
	fl.BoolVar(&f.force, "force", false, "write even though the target's disk is mounted, or the image is smaller than one transfer")
	fl.BoolVar(&f.noVerify, "no-verify", false, "skip reading the card back after writing (and hashing the image)")
	fl.StringVar(&f.verifyHash, "verify-hash", pipeline.MethodDigests.String(), "how the read-back is checked: xxh3 (a digest of each write command, about the cost of reading) or sha256 (the decoded image's SHA-256 on both sides, printed, for those who publish or compare it)")
	_ = c.RegisterFlagCompletionFunc("verify-hash", cobra.FixedCompletions(verifyMethodNames(), cobra.ShellCompDirectiveNoFileComp))
	f.trust.register(fl, "write", "written")
	fl.BoolVar(&f.check, "check", false, "first probe each card for a fake capacity (as usbflash check): refuse one the image does not fit in")
	fl.StringVar(&f.maxCache, "max-cache", units.FormatSize(fakecheck.DefaultMaxCache), "with --check: see through a cache up to this size (0: trust the first read-back)")
	addTransferFlag(c, &f.transferSize, pipeline.DefaultTransferSize, "bytes per WRITE command (and READ, when verifying: by default the read-back uses "+units.FormatSize(pipeline.DefaultReadSize)+" READs)")
	fl.IntVar(&f.buffers, "buffers", 0, "buffers cycling between decoder and writer, at least 2 (0: 4, fewer for transfers over 2 MiB)")
	fl.IntVar(&f.lag, "lag", session.DefaultLag, "with several targets: transfers a card may fall behind before it holds the others back (0: lockstep)")
	fl.StringVar(&f.logDir, "log-dir", "", "keep one log per reader slot in this directory: each card's notes and record, one JSON object per line, rotated at 1 MiB (5 kept)")
	fl.StringVar(&f.station, "station", "", "a label for every card's record: this station's name")
	fl.StringVar(&f.operator, "operator", "", "a label for every card's record: who runs the station")
	fl.BoolVar(&f.repair, "repair", false, "when a card reads back different, write the blocks that differ again (and only those) and compare again, up to 3 times, then verify it in full")
	fl.StringVar(&f.metrics.Listen, "metrics-listen", "", "serve Prometheus metrics on this address (e.g. :9123) at /metrics while the write (or --watch) runs")
	fl.StringVar(&f.metrics.Textfile, "metrics-textfile", "", "keep Prometheus metrics in this file (for node_exporter's textfile collector), rewritten atomically after every card")
	f.catalog.register(c, true)
	f.bmap.register(fl)
	f.custom.register(fl)
	return c
}

// addCardsFlags adds the flags of every command that writes cards (write,
// erase, format): which cards (--all, --watch), asked for or not, reported
// how, ejected.
func addCardsFlags(c *cobra.Command, f *writeFlags) {
	fl := c.Flags()
	fl.BoolVarP(&f.yes, "yes", "y", false, "do not ask for confirmation (required without a terminal)")
	fl.BoolVar(&f.eject, "eject", false, "eject the card when done (usb: and sim: targets)")
	fl.BoolVar(&f.asJSON, "json", false, "print one JSON object per line on stdout (start, device, phase, progress, note, summary, error)")
	fl.BoolVarP(&f.quiet, "quiet", "q", false, "print only errors; with --json, only the summary or error event")
	fl.BoolVar(&f.all, "all", false, "write every reader that holds a card and is not in use (listed, then confirmed)")
	fl.BoolVar(&f.watch, "watch", false, "stay running and write every card inserted into any reader (or any reader plugged in), each once, until Ctrl-C; needs --yes")
	fl.BoolVar(&f.skipRefused, "skip-refused", false, "with several targets: write the others when some are refused (write-protected, too small, in use)")
	fl.StringVar(&f.report, "report", "", "with several targets or --watch: save a record of every card to this .json or .csv file")
	fl.DurationVar(&f.stopTimeout, "stop-timeout", 0, "with --watch: on a stop request (SIGTERM, Ctrl-C) take no new card and finish the cards being written for up to this long (e.g. 10m), then stop them safely (0: stop them after the command in flight)")
}

// addTransferFlag adds --transfer-size, with completion of useful values.
func addTransferFlag(c *cobra.Command, v *string, def int64, what string) {
	c.Flags().StringVar(v, "transfer-size", units.FormatSize(def),
		what+", a multiple of the block size (e.g. 512KiB, 4MiB, 32MiB)")
	_ = c.RegisterFlagCompletionFunc("transfer-size", completeTransferSize)
}

// transferFlag is --transfer-size as the user gave it: 0 when they did
// not, for the engine to choose (its default depends on the command and
// on the card).
func transferFlag(c *cobra.Command, value string) (int, error) {
	if !c.Flags().Changed("transfer-size") {
		return 0, nil
	}
	transfer, err := units.ParseSize(value)
	switch {
	case err != nil:
		return 0, &usageError{fmt.Sprintf("--transfer-size: %v", err)}
	case transfer == 0:
		return 0, &usageError{"--transfer-size 0: want at least one block (512 bytes)"}
	case transfer > blockdev.MaxBufferMemory:
		// More than any buffer may be: said as the engine says it.
		transfer = blockdev.MaxBufferMemory + 1
	}
	return int(transfer), nil
}

// reported runs a command's body with the reporter its --json and --quiet
// choose, and reports its error through it, so a JSON run ends with an
// error event and a progress bar is closed first.
func (a *app) reported(asJSON, quiet bool, body func(termui.Reporter) error) error {
	rep := termui.New(a.stdout, a.stderr, termui.Options{JSON: asJSON, Quiet: quiet, Terminal: a.stderrTerminal, LineEvery: a.lineEvery})
	err := inFlagWords(body(rep))
	if err != nil {
		rep.Fail(newErrorEvent(err, exitCode(err)))
		err = &reportedError{err}
	}
	return err
}

// writeOptions reads write's flags and arguments into its Options,
// refusing before anything is opened what no card could be written with.
func (a *app) writeOptions(c *cobra.Command, args []string, f *writeFlags) (*writeOptions, error) {
	transfer, err := transferFlag(c, f.transferSize)
	if err != nil {
		return nil, err
	}
	imagePath, targets := f.catalog.image(args)
	ref, err := a.imageRef(imagePath, f.catalog, f.trust)
	if err != nil {
		return nil, err
	}
	cfg := session.Config{Image: ref, Targets: session.Targets{Eject: f.eject, Force: f.force, SkipRefused: f.skipRefused},
		Engine: session.Engine{TransferSize: transfer, Buffers: f.buffers, Lag: f.lag, Verify: !f.noVerify, VerifyMethod: f.verifyMethod, BlockMap: f.bmap.choice(),
			Repair: f.repair}, Output: session.Output{ExitCodes: classCodes(), Station: f.station, Operator: f.operator}}
	maxCache, err := parseMaxCache(f.maxCache)
	if err != nil {
		return nil, err
	}
	if f.check {
		cfg.Targets.Check = &fakecheck.Options{MaxCache: maxCache}
	}
	if stdin, ok := a.stdin.(*os.File); ok {
		cfg.Image.Stdin = stdin
	}
	if cfg.Customize, err = f.custom.config(a.customBase); err != nil {
		return nil, err
	}
	o := &writeOptions{Config: cfg, LogDir: f.logDir, Metrics: f.metrics, Command: jsonevents.CommandWrite}
	o.Metrics.Version, o.Metrics.Station = buildVersion(), f.station
	return a.cardsOptions(o, f, targets)
}

// cardsOptions completes the Options of a command that writes cards
// (write, erase, format) with what they share: the report checked, the
// readers, the cards named (or --all, or --watch, which asks nobody).
func (a *app) cardsOptions(o *writeOptions, f *writeFlags, targets []string) (*writeOptions, error) {
	if f.report != "" {
		if err := report.Check(f.report); err != nil {
			return nil, err
		}
	}
	// Enumerated once, for --all and the opens alike.
	var err error
	if o.Config.Targets.Readers, err = a.newReaders(); err != nil {
		return nil, err
	}
	o.All, o.Watch, o.Yes, o.Report, o.StopTimeout, o.JSON, o.Quiet = f.all, f.watch, f.yes, f.report, f.stopTimeout, f.asJSON, f.quiet
	switch {
	case f.watch && !f.yes:
		return nil, &usageError{"--watch writes every card that appears without asking: add --yes"}
	case f.all || f.watch:
		return o, nil
	}
	seen := map[string]bool{}
	for _, arg := range targets {
		if seen[arg] {
			return nil, &usageError{fmt.Sprintf("target %s is given twice", arg)}
		}
		seen[arg] = true
		t, err := drive.Parse(arg)
		if err != nil {
			return nil, err
		}
		o.Targets = append(o.Targets, t)
	}
	return o, nil
}

// writeRun runs `usbflash write` (or erase, or format): one card,
// several, --all or --watch, all through one session, with the presenter
// its cards take.
func (a *app) writeRun(ctx context.Context, o *writeOptions) error {
	return a.reported(o.JSON, o.Quiet, func(rep termui.Reporter) (err error) {
		cfg := o.Config
		counted, stopMetrics, err := metrics.Start(o.Metrics)
		if err != nil {
			return err
		}
		logs, closeLogs, err := slotlog.Start(o.LogDir, cfg.Output.ExitCodes)
		if err != nil {
			stopMetrics()
			return err
		}
		defer func() {
			if merr := errors.Join(stopMetrics(), closeLogs()); err == nil {
				err = merr
			}
		}()
		if o.Report != "" {
			newReport := report.New
			if o.Watch {
				newReport = report.NewStation
			}
			file, err := newReport(o.Report)
			if err != nil {
				return err
			}
			defer file.Close()
			cfg.Output.Report = file
		}
		if !o.Yes {
			cfg.Output.Confirm = func(cards []*drive.Device, src *image.Source) error {
				if o.Config.Blocks != nil {
					return a.confirmOverwrite(cards, o.Asks)
				}
				return a.confirm(cards, o.Config.Image, src)
			}
		}
		several := len(o.Targets) > 1 || o.Report != "" || o.All || a.perCard
		p := sessionview.NewWrite(rep, words(), o.Command, several, o.Watch, cfg.Engine.Verify)
		cfg.Output.Observer = session.Tee(p, counted, logs)
		if o.Watch {
			find := a.watchFinder
			if find == nil {
				find = cfg.Targets.Readers.Finder(cfg.Targets.Force)
			}
			res, err := station.Watch(ctx, station.Config{Write: cfg, StopTimeout: o.StopTimeout, SaysStop: a.aborts.Says}, find)
			return p.Finish(res, err)
		}
		specs := o.Targets
		if o.All {
			if specs, err = allTargets(ctx, rep, cfg.Targets.Readers); err != nil {
				return err
			}
		}
		res, err := session.Run(ctx, cfg, specs)
		return p.Finish(res, err)
	})
}

// allTargets is --all's targets: every reader slot that holds a card and
// is not in use.
func allTargets(ctx context.Context, rep termui.Reporter, usb *drive.Readers) ([]drive.Spec, error) {
	readers, err := usb.ListReaders(ctx)
	if err != nil {
		return nil, failure.Wrap(failure.Device, fmt.Errorf("listing USB readers: %w", err))
	}
	ts, skipped := drive.AllWithCards(readers)
	for _, s := range skipped {
		msg := "leaving " + s + " alone: in use"
		rep.Event(jsonevents.NewNote(msg), "usbflash: "+msg)
	}
	if len(ts) == 0 {
		return nil, &refusedError{fmt.Sprintf("--all: none of the %d readers holds a card that is not in use; run 'usbflash list'", len(readers))}
	}
	return ts, nil
}

// verifyMethodNames are the names --verify-hash takes.
func verifyMethodNames() []string {
	var names []string
	for _, m := range pipeline.WriteMethods() {
		names = append(names, m.String())
	}
	return names
}

// writeArgs is IMAGE and at least one TARGET, or IMAGE alone with --all;
// it parses --verify-hash, once.
func writeArgs(f *writeFlags) cobra.PositionalArgs {
	return func(c *cobra.Command, args []string) error {
		m, methodErr := pipeline.ParseVerifyMethod(f.verifyHash)
		f.verifyMethod = m
		n := len(args) // with --os, the IMAGE is its entry's
		if f.catalog.os != "" {
			n++
		}
		switch {
		case (f.all || f.watch) && n != 1:
			return &usageError{fmt.Sprintf("write --all and --watch take only the IMAGE (got %d arguments): they find the readers themselves", len(args))}
		case f.all && f.watch:
			return &usageError{"--all and --watch are two ways to choose the readers: give one"}
		case !f.all && !f.watch && n < 2:
			return &usageError{fmt.Sprintf("write needs IMAGE and at least one TARGET (got %d argument(s)); see 'usbflash write --help'", len(args))}
		case methodErr != nil:
			return &usageError{fmt.Sprintf("--verify-hash %s: want %s", f.verifyHash, strings.Join(verifyMethodNames(), " or "))}
		case f.noVerify && c.Flags().Changed("verify-hash"):
			return &usageError{"--no-verify reads nothing back: --verify-hash has nothing to check"}
		case f.stopTimeout != 0 && !f.watch:
			return &usageError{"--stop-timeout is how long a stop lets --watch's cards finish: add --watch"}
		case f.noVerify && f.repair:
			return &usageError{"--no-verify reads nothing back: --repair has nothing to repair"}
		}
		return nil
	}
}

// confirm asks the person at the terminal, once for every card; without
// one it refuses, so a script never writes to a card it did not name with
// --yes.
func (a *app) confirm(cards []*drive.Device, ref image.Ref, src *image.Source) error {
	named := cmp.Or(ref.Path, ref.OS) // as the command line names it: a path or URL, or a catalog entry
	return a.confirmOverwrite(cards, fmt.Sprintf("%s (%s, %s)", named, src.Format, termui.ImageSize(src)))
}

// confirmOverwrite asks the person at the terminal (or the page, under
// usbflash serve) whether to write what (in words) over cards.
func (a *app) confirmOverwrite(cards []*drive.Device, what string) error {
	if a.ask != nil {
		return a.ask(cards, what)
	}
	return termui.Prompt{In: a.stdin, Out: a.stderr, Interactive: a.interactive}.ConfirmOverwrite(cards, what)
}

// blockMapFlags are write's options for writing less than the whole image.
type blockMapFlags struct {
	path           string
	noBmap, sparse bool
}

func (f *blockMapFlags) register(fl *pflag.FlagSet) {
	fl.StringVar(&f.path, "bmap", "", "write only the ranges this bmaptool block map lists (default: IMAGE.bmap next to the image, compression suffixes removed, when there is one)")
	fl.BoolVar(&f.noBmap, "no-bmap", false, "write every byte even when a block map lies next to the image")
	fl.BoolVar(&f.sparse, "sparse", false, "without a block map, skip what is zero in the image, 4 KiB at a time (those regions keep the card's old bytes)")
}

func (f blockMapFlags) choice() session.BlockMapChoice {
	return session.BlockMapChoice{Path: f.path, Off: f.noBmap, Sparse: f.sparse}
}
