package buildinfo

import (
	"runtime/debug"
	"testing"
)

// TestDescribe: the version line from what the toolchain recorded, from
// a stamp where it recorded nothing, and the toolchain's over a stamp.
func TestDescribe(t *testing.T) {
	bi := &debug.BuildInfo{GoVersion: "go1.26.0", Main: debug.Module{Path: "usbflash", Version: "v1.2.3"},
		Settings: []debug.BuildSetting{{Key: "vcs.revision", Value: "0123456789abcdef0123"}, {Key: "vcs.modified", Value: "true"},
			{Key: "vcs.time", Value: "2026-11-30T20:00:00Z"}}}
	if got, want := Describe(bi), "v1.2.3, revision 0123456789ab with local changes of 2026-11-30T20:00:00Z, go1.26.0"; got != want {
		t.Errorf("Describe = %q, want %q", got, want)
	}
	// Built with -buildvcs=false: the Makefile's stamp names the commit.
	bare := &debug.BuildInfo{GoVersion: "go1.26.0", Main: debug.Module{Path: "usbflash", Version: "(devel)"},
		Settings: []debug.BuildSetting{{Key: "-buildvcs", Value: "false"}}}
	stamped := Stamp{"f1d77b4-dirty", "f1d77b4e0123456789abcdef", "2026-12-01T15:00:00Z", "true"}.Fill(bare)
	if got, want := Describe(stamped), "f1d77b4-dirty, revision f1d77b4e0123 with local changes of 2026-12-01T15:00:00Z, go1.26.0"; got != want {
		t.Errorf("stamped: Describe = %q, want %q", got, want)
	}
	// What the toolchain recorded describes the compiled files: it wins.
	if got, want := Describe(Stamp{"x", "fedcba", "", "false"}.Fill(bi)), "v1.2.3, revision 0123456789ab with local changes of 2026-11-30T20:00:00Z, go1.26.0"; got != want {
		t.Errorf("toolchain and stamp: Describe = %q, want %q", got, want)
	}
}
