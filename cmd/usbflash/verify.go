package main

import (
	"context"

	"github.com/spf13/cobra"

	"github.com/usbflash/usbflash/internal/drive"
	"github.com/usbflash/usbflash/internal/lib/units"
	"github.com/usbflash/usbflash/internal/session"
	"github.com/usbflash/usbflash/internal/ui/sessionview"
	"github.com/usbflash/usbflash/internal/ui/termui"
	"github.com/usbflash/usbflash/pipeline"
	"github.com/usbflash/usbflash/pipeline/blockdev"
)

// verifyOptions is what a verify command line asks for: its session's
// Config (but its Observer) and the target.
type verifyOptions struct {
	Config      session.VerifyConfig
	Target      drive.Spec
	JSON, Quiet bool
}

func newVerifyCommand(a *app, runF func(*verifyOptions) error) *cobra.Command {
	var (
		transferSize  string
		asJSON, quiet bool
		bmapPath      string
		noBmap        bool
		repair        bool
		catalog       catalogFlags
		trust         trustFlags
	)
	c := &cobra.Command{
		Use:   "verify IMAGE|--os NAME TARGET",
		Short: "Read a card back and compare it with an image",
		Long: `Decode IMAGE and compare it byte for byte with what TARGET reads back,
reporting the first differing LBA. Nothing is written (but with --repair).
With a block map (--bmap, or IMAGE.bmap beside the image, as write finds
it) only the mapped ranges are compared: a write with the map left the
rest of the card as it was. The image is trusted as write trusts it: its
publisher's checksum (--sha256, or beside it), its signature
(--sha256-keyring), a catalog entry's sums and size; a card that matches
an image that fails them does not match it.

The buffers take a few transfer sizes of memory, at most ` + units.FormatSize(blockdev.MaxBufferMemory) + `.`,
		Args: func(c *cobra.Command, args []string) error {
			if catalog.os != "" {
				return exactArgs(1, "TARGET (the IMAGE is --os's)")(c, args)
			}
			return exactArgs(2, "IMAGE and TARGET")(c, args)
		},
		ValidArgsFunction: targetArgs(true),
		RunE: func(c *cobra.Command, args []string) error {
			transfer, err := transferFlag(c, transferSize)
			if err != nil {
				return err
			}
			imagePath, targets := catalog.image(args)
			ref, err := a.imageRef(imagePath, catalog, trust)
			if err != nil {
				return err
			}
			t, readers, err := a.target(targets[0])
			if err != nil {
				return err
			}
			o := &verifyOptions{Target: t, JSON: asJSON, Quiet: quiet, Config: session.VerifyConfig{Image: ref, TransferSize: transfer,
				BlockMap: session.BlockMapChoice{Path: bmapPath, Off: noBmap}, Readers: readers, Repair: repair}}
			return runOr(c.Context(), runF, o, a.verifyRun)
		},
	}
	addTransferFlag(c, &transferSize, pipeline.DefaultReadSize, "bytes per READ command")
	c.Flags().BoolVar(&asJSON, "json", false, "print one JSON object per line on stdout (start, device, phase, progress, note, summary, error)")
	c.Flags().BoolVarP(&quiet, "quiet", "q", false, "print only errors; with --json, only the summary or error event")
	c.Flags().StringVar(&bmapPath, "bmap", "", "compare only the ranges this bmaptool block map lists (default: IMAGE.bmap next to the image, as write finds it)")
	c.Flags().BoolVar(&noBmap, "no-bmap", false, "compare every byte even when a block map lies next to the image")
	catalog.register(c, true)
	trust.register(c.Flags(), "verify", "compared")
	c.Flags().BoolVar(&repair, "repair", false, "when the card differs, write the blocks that differ again (and only those) and compare again, up to 3 times; the card is opened to be written, the image must pass its checksum first, an image at a URL is downloaded first (into --cache, or a temporary directory), and a card still different has its first transfer zeroed")
	return c
}

// verifyRun runs a verify session and presents it.
func (a *app) verifyRun(ctx context.Context, o *verifyOptions) error {
	return a.reported(o.JSON, o.Quiet, func(rep termui.Reporter) error {
		cfg := o.Config
		cfg.Observer = sessionview.Verify(rep, words())
		res, err := session.Verify(ctx, cfg, o.Target)
		if err != nil {
			return &compareError{err}
		}
		sessionview.Verified(rep, res)
		return nil
	})
}

// compareError is a verify command's failure: a difference means the card
// holds something other than this image, which need not be the card's
// fault (it may hold another image, or an older write).
type compareError struct{ err error }

func (e *compareError) Error() string { return e.err.Error() }
func (e *compareError) Unwrap() error { return e.err }
