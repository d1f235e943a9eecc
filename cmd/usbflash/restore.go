package main

import (
	"context"

	"github.com/spf13/cobra"

	"github.com/usbflash/usbflash/internal/probe/fakecheck"
	"github.com/usbflash/usbflash/internal/ui/sessionview"
	"github.com/usbflash/usbflash/internal/ui/termui"
)

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
			if runF != nil {
				return runF(o)
			}
			return a.reported(false, false, func(rep termui.Reporter) error { return restoreRun(c.Context(), rep, o) })
		},
	}
	c.Flags().BoolVar(&force, "force", false, "write even though the target's disk is mounted")
	return c
}

// restoreRun puts the regions back and says what it did.
func restoreRun(ctx context.Context, rep termui.Reporter, o *restoreOptions) error {
	cfg := o.Config
	cfg.OnNotice = words().Notices(rep)
	r, err := fakecheck.PutBack(ctx, cfg)
	if err != nil {
		return err
	}
	sessionview.PutBack(rep, r)
	return nil
}
