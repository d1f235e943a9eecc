//go:build !gendocs

package main

import "github.com/spf13/cobra"

// genDocsCommand is nil: the man page and completion writer is a -tags
// gendocs build's (gendocs_on.go), run by make dist.
func genDocsCommand() *cobra.Command { return nil }
