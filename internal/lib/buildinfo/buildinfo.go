// Package buildinfo says which build a binary is: its module version and
// the VCS revision it was built from, as the Go toolchain recorded them
// or, where it could not (-buildvcs=false: CI images, distribution
// builds), as the build stamped them with -ldflags -X.
package buildinfo

import (
	"runtime/debug"
	"strings"
)

// Stamp is what a build stamped: git describe (e.g. v0.3.0-12-gf1d77b4),
// the full commit hash, the commit's time (RFC 3339), and "true" when the
// tree had local changes.
type Stamp struct{ Version, Revision, Time, Modified string }

// Read is this binary's build, filled from s (Fill).
func Read(s Stamp) *debug.BuildInfo {
	bi, ok := debug.ReadBuildInfo()
	if !ok {
		bi = &debug.BuildInfo{}
	}
	return s.Fill(bi)
}

// Fill is bi with what the toolchain did not record (no VCS settings, a
// "(devel)" version) taken from s; what it did record wins, since it
// describes exactly the files compiled.
func (s Stamp) Fill(bi *debug.BuildInfo) *debug.BuildInfo {
	version, revision, time, modified := s.Version, s.Revision, s.Time, s.Modified
	out := *bi
	if v := out.Main.Version; (v == "" || v == "(devel)") && version != "" {
		out.Main.Version = version
	}
	for _, set := range bi.Settings {
		if set.Key == "vcs.revision" {
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

// Describe is the version line of bi: the version, the revision (and
// whether the tree had local changes, and the commit's time), the Go
// version.
func Describe(bi *debug.BuildInfo) string {
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
