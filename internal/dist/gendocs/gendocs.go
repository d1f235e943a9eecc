// Package gendocs writes a cobra command tree's man pages and shell
// completions, as make dist ships them with usbflash (its -tags gendocs
// build's hidden command runs it at build time, so the pages are never
// committed stale and the shipped binary links no man page generator).
package gendocs

import (
	"os"
	"path/filepath"

	"github.com/spf13/cobra"
	"github.com/spf13/cobra/doc"
)

// Write writes root's man pages to DIR/man and its bash, zsh and fish
// completions to DIR/completions; source is the pages' source line
// ("usbflash VERSION"). The pages' date is $SOURCE_DATE_EPOCH (cobra
// reads it), the commit's, so two builds give the same bytes.
func Write(root *cobra.Command, dir, source string) error {
	root.DisableAutoGenTag = true
	man := filepath.Join(dir, "man")
	comp := filepath.Join(dir, "completions")
	for _, d := range []string{man, comp} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			return err
		}
	}
	header := &doc.GenManHeader{Section: "1", Source: source, Manual: root.Name() + " manual"}
	if err := doc.GenManTree(root, header, man); err != nil {
		return err
	}
	if err := root.GenBashCompletionFileV2(filepath.Join(comp, root.Name()+".bash"), true); err != nil {
		return err
	}
	if err := root.GenZshCompletionFile(filepath.Join(comp, "_"+root.Name())); err != nil {
		return err
	}
	return root.GenFishCompletionFile(filepath.Join(comp, root.Name()+".fish"), true)
}
