package main

import (
	"fmt"
	"io"

	"github.com/spf13/cobra"
)

// app holds what every command shares: the process's streams. Commands get
// it explicitly; there is no package-level state.
type app struct {
	stdin          io.Reader
	stdout, stderr io.Writer
	// interactive says a person can answer on stdin (it is a terminal):
	// only then does write ask for confirmation instead of refusing.
	interactive bool
}

func newRootCommand(a *app) *cobra.Command {
	root := &cobra.Command{
		Use:   "usbflash",
		Short: "Write OS images to SD cards and USB sticks, fast and safely",
		Long: `usbflash writes OS images to SD cards and USB sticks by speaking USB
Bulk-Only Transport and SCSI to the card reader itself: no page cache, no
block-layer request cap, and decompression overlapped with the transfer.

Targets:
  usb:VID:PID[:SERIAL][/LUN]   a reader by USB id (hex), optionally its serial
  usb:BUS.ADDR[/LUN]           a reader by bus and address
  N[/LUN]                      the Nth reader of 'usbflash list'
  file:PATH                    a file or block device, through the kernel
  sim:PATH[?options]           the simulated reader; PATH is the card

Exit codes: 0 ok, 1 internal error, 2 usage, 3 refused by a safety check,
4 image error, 5 device error, 6 verify mismatch, 130 cancelled.`,
		SilenceUsage:  true,
		SilenceErrors: true,
	}
	root.SetFlagErrorFunc(func(c *cobra.Command, err error) error {
		return &usageError{fmt.Sprintf("%v (see 'usbflash %s --help')", err, c.Name())}
	})
	root.AddCommand(
		newListCommand(a),
		newInfoCommand(a),
		newWriteCommand(a),
		newVerifyCommand(a),
		newReadCommand(a),
	)
	return root
}

// exactArgs is cobra.ExactArgs with a usage error, so a missing argument
// exits 2 like any other command-line mistake.
func exactArgs(n int, names string) cobra.PositionalArgs {
	return func(c *cobra.Command, args []string) error {
		if len(args) != n {
			return &usageError{fmt.Sprintf("%s needs %s (got %d argument(s)); see 'usbflash %s --help'", c.Name(), names, len(args), c.Name())}
		}
		return nil
	}
}
