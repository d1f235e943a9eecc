package main

import (
	"fmt"
	"runtime/debug"
	"strings"

	"github.com/spf13/cobra"
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

// versionString is the module version and the VCS revision the binary was
// built from, as the Go toolchain recorded them.
func versionString() string {
	bi, ok := debug.ReadBuildInfo()
	if !ok {
		return "unknown (no build information in the binary)"
	}
	return describeBuild(bi)
}

func describeBuild(bi *debug.BuildInfo) string {
	settings := map[string]string{}
	for _, s := range bi.Settings {
		settings[s.Key] = s.Value
	}
	version := bi.Main.Version
	if version == "" {
		version = "(devel)"
	}
	parts := []string{version}
	if rev := settings["vcs.revision"]; rev != "" {
		r := "revision " + rev[:min(len(rev), 12)]
		if settings["vcs.modified"] == "true" {
			r += " with local changes"
		}
		if t := settings["vcs.time"]; t != "" {
			r += " of " + t
		}
		parts = append(parts, r)
	} else {
		parts = append(parts, "revision unknown (built without VCS stamping)")
	}
	parts = append(parts, bi.GoVersion)
	return strings.Join(parts, ", ")
}
