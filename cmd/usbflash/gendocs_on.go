//go:build gendocs

package main

import (
	"os"
	"path/filepath"

	"github.com/spf13/cobra"
	"github.com/spf13/cobra/doc"
)

// genDocsCommand writes the man pages of every command and the shell
// completions into a directory, in a -tags gendocs build only: make dist
// (internal/dist) runs it at build time, so the pages are never committed
// stale and the shipped binary links no man page generator. The pages'
// date is $SOURCE_DATE_EPOCH (cobra reads it), the commit's, so two builds
// give the same bytes.
func genDocsCommand() *cobra.Command {
	return &cobra.Command{
		Use:    "gendocs DIR",
		Hidden: true,
		Args:   exactArgs(1, "a directory"),
		RunE: func(c *cobra.Command, args []string) error {
			root := c.Root()
			root.DisableAutoGenTag = true
			man := filepath.Join(args[0], "man")
			comp := filepath.Join(args[0], "completions")
			for _, d := range []string{man, comp} {
				if err := os.MkdirAll(d, 0o755); err != nil {
					return err
				}
			}
			header := &doc.GenManHeader{Section: "1", Source: "usbflash " + versionString(), Manual: "usbflash manual"}
			if err := doc.GenManTree(root, header, man); err != nil {
				return err
			}
			if err := root.GenBashCompletionFileV2(filepath.Join(comp, "usbflash.bash"), true); err != nil {
				return err
			}
			if err := root.GenZshCompletionFile(filepath.Join(comp, "_usbflash")); err != nil {
				return err
			}
			return root.GenFishCompletionFile(filepath.Join(comp, "usbflash.fish"), true)
		},
	}
}
