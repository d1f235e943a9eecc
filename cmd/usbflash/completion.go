package main

import (
	"github.com/spf13/cobra"

	"github.com/usbflash/usbflash/internal/drive"
	"github.com/usbflash/usbflash/internal/ui/complete"
	"github.com/usbflash/usbflash/usbms/backend"
)

// completeTarget completes a TARGET argument (complete.Targets): the
// readers attached now, or those of --readers when the line names
// simulated ones.
func completeTarget(c *cobra.Command, toComplete string) ([]string, cobra.ShellCompDirective) {
	list := backend.List
	if setting, err := c.Flags().GetString("readers"); err == nil {
		if bus, err := drive.ParseReaders(setting); err == nil && bus != nil {
			list = bus.List
		}
	}
	return complete.Targets(c.Context(), list, drive.ListDisks, toComplete), cobra.ShellCompDirectiveNoSpace | cobra.ShellCompDirectiveNoFileComp
}

// targetArgs completes the arguments of commands taking IMAGE TARGET or
// TARGET: files for the image, targets for the target.
func targetArgs(imageFirst bool) cobra.CompletionFunc {
	return func(c *cobra.Command, args []string, toComplete string) ([]string, cobra.ShellCompDirective) {
		switch {
		case imageFirst && len(args) == 0:
			return nil, cobra.ShellCompDirectiveDefault
		case imageFirst && len(args) == 1, !imageFirst && len(args) == 0:
			return completeTarget(c, toComplete)
		}
		return nil, cobra.ShellCompDirectiveNoFileComp
	}
}

// readArgs completes the target, then the output file's name.
func readArgs(c *cobra.Command, args []string, toComplete string) ([]string, cobra.ShellCompDirective) {
	if len(args) == 1 {
		return nil, cobra.ShellCompDirectiveDefault
	}
	return targetArgs(false)(c, args, toComplete)
}

// completeTransferSize suggests the transfer sizes worth trying.
func completeTransferSize(*cobra.Command, []string, string) ([]string, cobra.ShellCompDirective) {
	return complete.TransferSizes(), cobra.ShellCompDirectiveNoFileComp
}
