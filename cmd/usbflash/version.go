package main

import (
	"fmt"
	"runtime/debug"

	"github.com/spf13/cobra"

	"github.com/usbflash/usbflash/internal/lib/buildinfo"
)

func newVersionCommand(a *app) *cobra.Command {
	return &cobra.Command{
		Use:   "version",
		Short: "Print usbflash's version and the source revision it was built from",
		Args:  exactArgs(0, "no arguments"),
		RunE: func(*cobra.Command, []string) error {
			_, err := fmt.Fprintf(a.stdout, "usbflash %s\n", versionString())
			return err
		},
	}
}

// Set by the Makefile with -ldflags -X: the Go toolchain records the VCS
// revision itself only when it may run git at build time, and GOFLAGS
// often says -buildvcs=false (CI images, distribution builds). Written by
// the linker only; nothing assigns them at run time.
var (
	stampedVersion  string // git describe, e.g. v0.3.0-12-gf1d77b4
	stampedRevision string // the full commit hash
	stampedTime     string // the commit's time, RFC 3339
	stampedModified string // "true" when the tree had local changes
)

// versionString is the module version and the VCS revision the binary was
// built from, as the Go toolchain recorded them or the Makefile stamped
// them.
func versionString() string { return buildinfo.Describe(build()) }

// buildVersion is the module version alone, as metrics label the build.
func buildVersion() string { return build().Main.Version }

// build is this binary's build, with what the Makefile stamped.
func build() *debug.BuildInfo {
	return buildinfo.Read(buildinfo.Stamp{Version: stampedVersion, Revision: stampedRevision, Time: stampedTime, Modified: stampedModified})
}
