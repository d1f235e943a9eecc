//go:build unix

// Package testtargets lays out, for the tests of drive and of the CLI, the
// targets that must be refused or described: the image under other names,
// cards another usbflash holds, a FIFO, an existing file, and a reader
// with two slots.
package testtargets

import (
	"os"
	"path/filepath"
	"syscall"
	"testing"

	"github.com/usbflash/usbflash/internal/lib/flock"
)

// Dir is one test's targets, all in Dir.
type Dir struct {
	Dir        string
	Image      string // holds the image's bytes
	Link, Hard string // a symbolic and a hard link to Image
	Fifo       string
	Existing   string // 1 MiB of zeros
	// Locked and Locked.lun1 (1 MiB each) are held, as another usbflash
	// holds a card it writes, until the test ends.
	Locked string
	// Slots is slot 0 (1 MiB) of a two-slot reader; Slots.lun1 (2 MiB)
	// is slot 1's card.
	Slots string
}

// New makes the targets in a new temporary directory.
func New(tb testing.TB, img []byte) Dir {
	tb.Helper()
	dir := tb.TempDir()
	d := Dir{Dir: dir, Image: filepath.Join(dir, "self.img"), Link: filepath.Join(dir, "link.img"), Hard: filepath.Join(dir, "hard.img"),
		Fifo: filepath.Join(dir, "fifo"), Existing: filepath.Join(dir, "existing.img"), Locked: filepath.Join(dir, "locked.img"),
		Slots: filepath.Join(dir, "slots.img")}
	files := map[string][]byte{d.Image: img, d.Existing: make([]byte, 1<<20), d.Locked: make([]byte, 1<<20),
		d.Locked + ".lun1": make([]byte, 1<<20), d.Slots: make([]byte, 1<<20), d.Slots + ".lun1": make([]byte, 2<<20)}
	for p, b := range files {
		if err := os.WriteFile(p, b, 0o644); err != nil {
			tb.Fatal(err)
		}
	}
	if err := os.Symlink(d.Image, d.Link); err != nil {
		tb.Fatal(err)
	}
	if err := os.Link(d.Image, d.Hard); err != nil {
		tb.Fatal(err)
	}
	if err := syscall.Mkfifo(d.Fifo, 0o644); err != nil {
		tb.Fatal(err)
	}
	for _, p := range []string{d.Locked, d.Locked + ".lun1"} {
		f, err := os.Open(p)
		if err != nil {
			tb.Fatal(err)
		}
		tb.Cleanup(func() { f.Close() })
		if err := flock.Lock(f, true); err != nil {
			tb.Fatal(err)
		}
	}
	return d
}
