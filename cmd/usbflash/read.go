package main

import (
	"context"
	"errors"
	"fmt"

	"github.com/spf13/cobra"

	"github.com/usbflash/usbflash/internal/drive"
	"github.com/usbflash/usbflash/internal/image/imagedst"
	"github.com/usbflash/usbflash/internal/lib/units"
	"github.com/usbflash/usbflash/internal/session"
	"github.com/usbflash/usbflash/internal/ui/sessionview"
	"github.com/usbflash/usbflash/internal/ui/termui"
	"github.com/usbflash/usbflash/pipeline"
	"github.com/usbflash/usbflash/pipeline/blockdev"
)

// readFlags are the options of `usbflash read`.
type readFlags struct {
	size                string
	used, force, verify bool
	transferSize        string
	buffers             int // as given: 0 lets the engine choose for the transfer size the reader allows
	asJSON, quiet       bool
}

// readOptions is what a read command line asks for: its session's
// Config (but its Observer) and the target.
type readOptions struct {
	Config      session.BackupConfig
	Target      drive.Spec
	JSON, Quiet bool
}

func newReadCommand(a *app, runF func(*readOptions) error) *cobra.Command {
	var f readFlags
	c := &cobra.Command{
		Use:   "read TARGET OUT",
		Short: "Back a card up to an image file, compressed by its name",
		Long: `Read TARGET through the card reader and write it to OUT, compressed as its
name says: .zst (zstd), .gz (gzip), .xz (xz, in independent blocks), on every
core, or raw for any other name. Beside it goes OUT.bmap, a bmaptool block
map of the blocks that are not all zero (SHA-256 per range), so writing the
backup back can skip the rest.

OUT is written as OUT.part and renamed only when complete (with --verify,
only once the second read matched): an interrupted or failed read leaves
no file that looks finished. When the second read differs, fails or is
interrupted, the first, complete, stays as OUT.part, named in the
message. An existing OUT is not overwritten without --force. --used stops
after the last partition of the MBR or GPT (a card without one, or with a
damaged one, is read whole); --size reads that many bytes; otherwise the
whole card is read.

The buffers take a few transfer sizes of memory, at most ` + units.FormatSize(blockdev.MaxBufferMemory) + `.`,
		Args:              exactArgs(2, "TARGET and OUT"),
		ValidArgsFunction: readArgs,
		RunE: func(c *cobra.Command, args []string) error {
			o, err := a.readOptions(c, args[0], args[1], f)
			if err != nil {
				return err
			}
			return runOr(c.Context(), runF, o, a.readRun)
		},
	}
	fl := c.Flags()
	fl.StringVar(&f.size, "size", "", "read only this many bytes from the start of the card (e.g. 4GiB)")
	fl.BoolVar(&f.used, "used", false, "stop after the last partition of the card's MBR or GPT")
	fl.BoolVar(&f.force, "force", false, "overwrite OUT, and read a card whose disk is mounted")
	fl.BoolVar(&f.verify, "verify", false, "read the card a second time and compare")
	addTransferFlag(c, &f.transferSize, pipeline.DefaultReadSize, "bytes per READ command")
	fl.IntVar(&f.buffers, "buffers", 0, "buffers cycling between the card and the compressor, at least 2 (0: 4, fewer for transfers over 2 MiB)")
	fl.BoolVar(&f.asJSON, "json", false, "print one JSON object per line on stdout (start, device, note, phase, progress, summary, error)")
	fl.BoolVarP(&f.quiet, "quiet", "q", false, "print only errors; with --json, only the summary or error event")
	return c
}

// readOptions reads read's flags and arguments into its Options.
func (a *app) readOptions(c *cobra.Command, target, out string, f readFlags) (*readOptions, error) {
	t, readers, err := a.target(target)
	if err != nil {
		return nil, err
	}
	o := &readOptions{Target: t, JSON: f.asJSON, Quiet: f.quiet,
		Config: session.BackupConfig{Out: out, Readers: readers, Used: f.used, Force: f.force, Verify: f.verify, Buffers: f.buffers}}
	if f.size != "" && f.used {
		return nil, &usageError{"--size and --used both say where to stop: pass one"}
	}
	if o.Config.TransferSize, err = transferFlag(c, f.transferSize); err != nil {
		return nil, err
	}
	if f.size != "" {
		if o.Config.Size, err = units.ParseSize(f.size); err != nil || o.Config.Size <= 0 {
			return nil, &usageError{fmt.Sprintf("--size %q: want a positive size such as 4GiB", f.size)}
		}
	}
	return o, nil
}

// readRun runs a backup session and presents it.
func (a *app) readRun(ctx context.Context, o *readOptions) error {
	return a.reported(o.JSON, o.Quiet, func(rep termui.Reporter) error {
		cfg := o.Config
		cfg.Observer = sessionview.Backup(rep, words())
		b, err := session.NewBackup(cfg)
		if err != nil {
			return err
		}
		// A second Ctrl-C: the session says what it left.
		defer a.aborts.Add(func() {
			err := b.Abort()
			rep.Fail(newErrorEvent(err, exitCode(err)))
		})()
		res, err := b.Run(ctx, o.Target)
		if errors.As(err, new(*imagedst.SizeError)) {
			return fmt.Errorf("--size %w", err)
		} else if err == nil {
			sessionview.BackedUp(rep, res, cfg.Out)
		}
		return err
	})
}
