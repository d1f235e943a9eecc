package dist

import (
	"fmt"
	"regexp"
	"strings"
	"time"
)

// Stamp is what the commit being built says about itself: what `usbflash
// version` reports and every package's version comes from, so two builds
// of one commit stamp the same bytes.
type Stamp struct {
	// Describe is `git describe --tags --always --dirty`.
	Describe string
	// Revision is the full commit hash.
	Revision string
	// Time is the commit's time: the date of the man pages and of every
	// file in the packages and tarballs.
	Time time.Time
	// Modified says the tree had local changes.
	Modified bool
}

// LDFlags are the linker flags that stamp the version into the binary
// (cmd/usbflash/version.go), with no build id.
func (s Stamp) LDFlags() string {
	return strings.Join([]string{
		"-s", "-w", "-buildid=",
		"-X main.stampedVersion=" + s.Describe,
		"-X main.stampedRevision=" + s.Revision,
		"-X main.stampedTime=" + s.Time.UTC().Format(time.RFC3339),
		fmt.Sprintf("-X main.stampedModified=%t", s.Modified),
	}, " ")
}

// Version is a package version as each format spells it.
type Version struct {
	// Base is the release, X.Y.Z: the last v tag, or 0.0.0 before the first.
	Base string
	// Snapshot is set for a commit that is not a tag: "git" and the
	// commit's UTC time (YYYYMMDDhhmmss), which orders snapshots.
	Snapshot string
	// Short is the abbreviated commit hash of a snapshot.
	Short string
	// Dirty says the tree had local changes.
	Dirty bool
}

var describeRE = regexp.MustCompile(`^v?([0-9]+\.[0-9]+\.[0-9]+)(?:-([0-9]+)-g([0-9a-f]+))?(-dirty)?$`)

// ParseVersion derives the package version from the stamp: a commit
// tagged vX.Y.Z is X.Y.Z; any other is a snapshot after the last tag
// (0.0.0 before any), ordered by its commit time.
func ParseVersion(s Stamp) Version {
	v := Version{Base: "0.0.0", Dirty: s.Modified}
	m := describeRE.FindStringSubmatch(s.Describe)
	if m != nil {
		v.Base = m[1]
	}
	if m == nil || m[2] != "" || v.Dirty {
		v.Snapshot = "git" + s.Time.UTC().Format("20060102150405")
		v.Short = s.Revision[:min(len(s.Revision), 7)]
	}
	return v
}

// Metadata is what deb and rpm put after a "+": the snapshot, its commit
// and "dirty" for a tree with local changes; "" for a release.
func (v Version) Metadata() string {
	if v.Snapshot == "" {
		return ""
	}
	meta := v.Snapshot + "." + v.Short
	if v.Dirty {
		meta += ".dirty"
	}
	return meta
}

// String is the version in file names and tarball directories, as deb
// spells it: X.Y.Z or X.Y.Z+gitTIME.HASH.
func (v Version) String() string {
	if m := v.Metadata(); m != "" {
		return v.Base + "+" + m
	}
	return v.Base
}
