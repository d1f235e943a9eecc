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
func versionString() string {
	bi, ok := debug.ReadBuildInfo()
	if !ok {
		bi = &debug.BuildInfo{}
	}
	return describeBuild(withStamp(bi, stampedVersion, stampedRevision, stampedTime, stampedModified))
}

// buildVersion is the module version alone, as metrics label the build.
func buildVersion() string {
	bi, ok := debug.ReadBuildInfo()
	if !ok {
		bi = &debug.BuildInfo{}
	}
	return withStamp(bi, stampedVersion, stampedRevision, stampedTime, stampedModified).Main.Version
}

// withStamp fills what the toolchain did not record (no VCS settings, a
// "(devel)" version) from the linker-stamped values; what it did record
// wins, since it describes exactly the files compiled.
func withStamp(bi *debug.BuildInfo, version, revision, time, modified string) *debug.BuildInfo {
	out := *bi
	if v := out.Main.Version; (v == "" || v == "(devel)") && version != "" {
		out.Main.Version = version
	}
	for _, s := range bi.Settings {
		if s.Key == "vcs.revision" {
			return &out
		}
	}
	if revision == "" {
		return &out
	}
	out.Settings = append(append([]debug.BuildSetting(nil), bi.Settings...),
		debug.BuildSetting{Key: "vcs.revision", Value: revision},
		debug.BuildSetting{Key: "vcs.time", Value: time},
		debug.BuildSetting{Key: "vcs.modified", Value: modified})
	return &out
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
