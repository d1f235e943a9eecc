//go:build gendocs

package main

import (
	"github.com/spf13/cobra"

	"github.com/usbflash/usbflash/internal/dist/gendocs"
)

// genDocsCommand writes the man pages of every command and the shell
// completions into a directory (gendocs), in a -tags gendocs build only:
// make dist (internal/dist) runs it at build time.
func genDocsCommand() *cobra.Command {
	return &cobra.Command{
		Use:    "gendocs DIR",
		Hidden: true,
		Args:   exactArgs(1, "a directory"),
		RunE: func(c *cobra.Command, args []string) error {
			return gendocs.Write(c.Root(), args[0], "usbflash "+versionString())
		},
	}
}
