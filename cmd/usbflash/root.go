package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"strconv"
	"time"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"github.com/usbflash/usbflash/internal/customize"
	"github.com/usbflash/usbflash/internal/drive"
	"github.com/usbflash/usbflash/internal/failure"
	"github.com/usbflash/usbflash/internal/image/httpsrc"
	"github.com/usbflash/usbflash/internal/lib/stopsignal"
	"github.com/usbflash/usbflash/internal/ui/termui"
	"github.com/usbflash/usbflash/usbms"
	"github.com/usbflash/usbflash/usbms/usbdev"
)

// app holds what every command shares: the process's streams. Commands get
// it explicitly; there is no package-level state.
type app struct {
	stdin          io.Reader
	stdout, stderr io.Writer
	// interactive says a person can answer on stdin (it is a terminal):
	// only then does write ask for confirmation instead of refusing.
	interactive bool
	// stderrTerminal says stderr is a terminal: progress is drawn as a bar
	// there, and printed as a line every few seconds elsewhere.
	stderrTerminal bool
	// watchFinder is where write --watch looks for readers; nil: USB.
	// Tests show it simulated readers.
	watchFinder drive.Finder
	// lineEvery is how often progress is printed without a terminal; 0:
	// progressLineInterval. Tests shorten it.
	lineEvery time.Duration
	// aborts is what a second interrupt does before the process exits;
	// nil (run, the tests): nothing.
	aborts *stopsignal.Aborts
	// quirks is --quirks: quirk flags for readers, as the kernel's
	// usb-storage.quirks= takes them.
	quirks string
	// transport is --transport: auto, bot or uas.
	transport string
	// listUSB is how the readers are enumerated; nil: the backend's.
	// Tests show a machine without USB through it.
	listUSB func(context.Context) ([]usbdev.Info, error)
	// listDisks is how list finds the disks of disk: targets; nil:
	// drive.ListDisks, this machine's.
	listDisks func(context.Context) ([]drive.WholeDisk, error)
	// queueDepth is --queue-depth: UAS commands in flight at once.
	queueDepth int
	// caCert is --ca-cert: a PEM file of CAs trusted for HTTPS beside
	// the system's.
	caCert string
	// readers is --readers: the machine's USB readers ("usb"), or a bus
	// of simulated ones (sim:DIR).
	readers string

	// What usbflash serve changes for the commands its page runs
	// (serve.go); the zero values are the terminal's.
	//
	// ask, when set, is asked before cards are overwritten instead of the
	// person at the terminal: the page's question.
	ask func(cards []*drive.Device, what string) error
	// perCard tells every write card by card (the several cards' events,
	// for one card too), as the page shows writes.
	perCard bool
	// customBase are first-boot settings given as a whole (the page's
	// form), which the flags' override as they override --customize's
	// file: values a command line must not carry (passwords) among them.
	customBase *customize.Config
}

// httpOptions are how images, lists and catalogs at URLs are read: the
// system's CAs, and --ca-cert's.
func (a *app) httpOptions() (httpsrc.Options, error) {
	if a.caCert == "" {
		return httpsrc.Options{}, nil
	}
	roots, err := httpsrc.RootCAsWith(a.caCert)
	if err != nil {
		return httpsrc.Options{}, &usageError{"--ca-cert: " + err.Error()}
	}
	return httpsrc.Options{RootCAs: roots}, nil
}

// newReaders is the command's enumeration of readers, with the quirk
// overrides in force (the kernel's, $USBFLASH_QUIRKS, --quirks); a
// malformed override is a usage error.
func (a *app) newReaders() (*drive.Readers, error) {
	o, err := usbms.HostQuirkOverrides(a.quirks)
	if err != nil {
		return nil, err
	}
	if err := usbms.CheckTransportSetting(a.transport); err != nil {
		return nil, err
	}
	if a.queueDepth < 1 {
		return nil, &failure.SettingError{Setting: usbms.SettingQueueDepth, Err: fmt.Errorf("%d is fewer than 1", a.queueDepth)}
	}
	bus, err := drive.ParseReaders(a.readers)
	if err != nil {
		return nil, err
	}
	return &drive.Readers{Quirks: o, Transport: a.transport, QueueDepth: a.queueDepth, List: a.listUSB, Sim: bus}, nil
}

// target is the TARGET argument arg, parsed, and the readers it is opened
// among.
func (a *app) target(arg string) (drive.Spec, *drive.Readers, error) {
	t, err := drive.Parse(arg)
	if err != nil {
		return t, nil, err
	}
	readers, err := a.newReaders()
	return t, readers, err
}

// newRootCommand is usbflash: every command, each made in cli/cli's shape
// (its flags make its Options, which its run function runs).
func newRootCommand(a *app) *cobra.Command {
	return newRoot(a,
		newListCommand(a, nil),
		newInfoCommand(a, nil),
		newWriteCommand(a, nil),
		newVerifyCommand(a, nil),
		newEraseCommand(a, nil),
		newFormatCommand(a, nil),
		newReadCommand(a, nil),
		newVersionCommand(a),
		newBenchCommand(a, nil),
		newCheckCommand(a, nil),
		newRestoreCommand(a, nil),
		newCustomizeCommand(a, nil),
		newImagesCommand(a, nil),
		newServeCommand(a, nil),
	)
}

// newRoot is the root command over cmds: the flags every command shares
// (read into a), help, and completion. Tests make it over one command
// whose run they replace.
func newRoot(a *app, cmds ...*cobra.Command) *cobra.Command {
	root := &cobra.Command{
		Use:   "usbflash",
		Short: "Write OS images to SD cards and USB sticks, fast and safely",
		Long: `usbflash writes OS images to SD cards and USB sticks by speaking USB
mass storage (Bulk-Only Transport, or USB Attached SCSI where the reader
offers it: --transport) and SCSI to the card reader itself: no page cache,
no block-layer request cap, and decompression overlapped with the transfer.

Targets:
  usb:VID:PID[:SERIAL][/LUN]   a reader by USB id (hex), optionally its serial
  usb:BUS.ADDR[/LUN]           a reader by bus and address
  N[/LUN]                      the Nth reader of 'usbflash list'
  disk:DISK                    a whole disk, raw: /dev/sdX, /dev/rdiskN, \\.\PhysicalDriveN
  file:PATH                    an image file (or a block device), through the kernel
  sim:PATH[/LUN][?options]     the simulated reader; PATH is the card

` + exitCodeHelp(),
		Version:       versionString(),
		SilenceUsage:  true,
		SilenceErrors: true,
	}
	root.SetVersionTemplate("usbflash {{.Version}}\n")
	root.PersistentFlags().StringVar(&a.quirks, "quirks", "",
		"quirk flags for readers that need them, as Linux's usb-storage.quirks= takes them: "+usbms.QuirkSyntax+
			" (also $"+usbms.QuirksEnv+" and /sys/module/usb_storage/parameters/quirks)")
	root.PersistentFlags().StringVar(&a.transport, "transport", usbms.TransportAuto,
		"how readers are driven: auto (UAS where the reader offers only UAS, Bulk-Only where it offers both: UAS measured no clear gain), bot (Bulk-Only) or uas (USB Attached SCSI)")
	root.PersistentFlags().IntVar(&a.queueDepth, "queue-depth", usbms.DefaultUASQueueDepth,
		"READs or WRITEs a UAS reader gets in flight at once, a range cut into that many commands (at most its streams less one)")
	root.PersistentFlags().StringVar(&a.caCert, "ca-cert", "",
		"trust the CA certificates in this PEM file for HTTPS, beside the system's (a private CA's server; $SSL_CERT_FILE replaces the system's instead)")
	root.PersistentFlags().StringVar(&a.readers, "readers", "usb",
		"the readers every command sees (list, N targets, --all, --watch): usb, the machine's, or "+drive.SimBusSyntax+
			", simulated readers: each file NAME.img in DIR is a reader plugged in, the file its card (0 bytes: an empty slot)")
	root.SetFlagErrorFunc(flagError)
	root.AddCommand(cmds...)
	if c := genDocsCommand(); c != nil {
		root.AddCommand(c)
	}
	// Set before the completion command is made: it keeps the stream.
	root.SetIn(a.stdin)
	root.SetOut(a.stdout)
	root.SetErr(a.stderr)
	root.InitDefaultCompletionCmd()
	for _, c := range append([]*cobra.Command{root}, root.Commands()...) {
		if c.HasSubCommands() {
			groupCommand(c)
			if c.Name() == "completion" {
				// cobra's shells take no arguments: a stray one is a
				// usage error, where cobra's own check exits 1.
				for _, shell := range c.Commands() {
					shell.Args = exactArgs(0, "no arguments")
				}
			}
		}
	}
	return root
}

// runOr runs a command's Options o by runF, when a test gave one, else by
// run, the command's own.
func runOr[O any](ctx context.Context, runF func(*O) error, o *O, run func(context.Context, *O) error) error {
	if runF != nil {
		return runF(o)
	}
	return run(ctx, o)
}

// groupCommand makes a command that only holds subcommands (usbflash,
// usbflash completion) print its help when called alone and refuse an
// unknown subcommand as a usage error, where cobra would print the help and
// exit 0, or fail with exit 1.
func groupCommand(c *cobra.Command) {
	c.SuggestionsMinimumDistance = 2
	c.Args = func(c *cobra.Command, args []string) error {
		if len(args) == 0 {
			return nil
		}
		msg := fmt.Sprintf("unknown command %q", args[0])
		if s := c.SuggestionsFor(args[0]); len(s) > 0 {
			msg += fmt.Sprintf(" (did you mean %q?)", s[0])
		}
		return &usageError{msg + "; see '" + c.CommandPath() + " --help'"}
	}
	c.RunE = func(c *cobra.Command, _ []string) error { return c.Help() }
}

// flagError words a bad flag as a usage error, in the user's terms: the
// flag, the value given and what it takes, without strconv's internals.
func flagError(c *cobra.Command, err error) error {
	var invalid *pflag.InvalidValueError
	if errors.As(err, &invalid) {
		want := "a valid value"
		var num *strconv.NumError
		switch {
		case invalid.GetFlag().Value.Type() == "bool":
			want = "true or false"
		case errors.As(err, &num) && errors.Is(num.Err, strconv.ErrRange):
			want = "a smaller number"
		case errors.As(err, &num):
			want = "a whole number"
		}
		err = fmt.Errorf("--%s %q: want %s", invalid.GetFlag().Name, invalid.GetValue(), want)
	}
	return &usageError{fmt.Sprintf("%v; see '%s --help'", err, c.CommandPath())}
}

// exactArgs is cobra.ExactArgs with a usage error, so a missing argument
// exits 2 like any other command-line mistake.
func exactArgs(n int, names string) cobra.PositionalArgs {
	return func(c *cobra.Command, args []string) error {
		if len(args) != n {
			return &usageError{fmt.Sprintf("%s needs %s, got %s; see '%s --help'",
				c.Name(), names, termui.Plural(len(args), "argument"), c.CommandPath())}
		}
		return nil
	}
}

// jsonRequested says whether the command line asked for JSON output, also
// when parsing it failed before the --json flag was read.
func jsonRequested(c *cobra.Command, args []string) bool {
	if c != nil {
		if f := c.Flags().Lookup("json"); f != nil && f.Value.String() == "true" {
			return true
		}
	}
	for _, a := range args {
		if a == "--" {
			break
		}
		if a == "--json" || a == "--json=true" {
			return true
		}
	}
	return false
}
