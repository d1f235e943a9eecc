package main

import (
	"context"
	"encoding/json"

	"github.com/spf13/cobra"

	"github.com/usbflash/usbflash/internal/drive"
	"github.com/usbflash/usbflash/internal/ui/readerinfo"
)

func newInfoCommand(a *app) *cobra.Command {
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
			return a.info(c.Context(), t, readers, asJSON)
		},
	}
	c.Flags().BoolVar(&asJSON, "json", false, "print one JSON object")
	return c
}

func (a *app) info(ctx context.Context, t drive.Spec, readers *drive.Readers, asJSON bool) error {
	d, err := drive.Open(ctx, t, drive.Options{ReadOnly: true, AllowNoMedium: true, Readers: readers})
	if err != nil {
		return err
	}
	defer d.Close()
	rep := readerinfo.DescribeTarget(d, readerWords())
	if asJSON {
		return json.NewEncoder(a.stdout).Encode(rep)
	}
	readerinfo.PrintTarget(a.stdout, rep)
	return nil
}
