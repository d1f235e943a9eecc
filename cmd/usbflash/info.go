package main

import (
	"context"
	"encoding/json"

	"github.com/spf13/cobra"

	"github.com/usbflash/usbflash/internal/drive"
	"github.com/usbflash/usbflash/internal/ui/readerinfo"
)

// infoOptions is what an info command line asks for: the target, and the
// readers it is opened among.
type infoOptions struct {
	Target  drive.Spec
	Readers *drive.Readers
	JSON    bool
}

func newInfoCommand(a *app, runF func(*infoOptions) error) *cobra.Command {
	var asJSON bool
	c := &cobra.Command{
		Use:   "info TARGET",
		Short: "Show everything known about one target",
		Long: `Show one target's identity (INQUIRY, serial), capacity, block size, write
protection and transfer limits. Nothing is written. For a usb: target the
reader is claimed, which detaches the kernel driver (refused while mounted,
unless --force).`,
		Args: exactArgs(1, "a TARGET"),
		RunE: func(c *cobra.Command, args []string) error {
			t, readers, err := a.target(args[0])
			if err != nil {
				return err
			}
			o := &infoOptions{Target: t, Readers: readers, JSON: asJSON}
			if runF != nil {
				return runF(o)
			}
			return a.infoRun(c.Context(), o)
		},
	}
	c.Flags().BoolVar(&asJSON, "json", false, "print one JSON object")
	return c
}

// infoRun opens the target read-only and describes it.
func (a *app) infoRun(ctx context.Context, o *infoOptions) error {
	d, err := drive.Open(ctx, o.Target, drive.Options{ReadOnly: true, AllowNoMedium: true, Readers: o.Readers})
	if err != nil {
		return err
	}
	defer d.Close()
	rep := readerinfo.DescribeTarget(d, readerWords())
	if o.JSON {
		return json.NewEncoder(a.stdout).Encode(rep)
	}
	readerinfo.PrintTarget(a.stdout, rep)
	return nil
}
