//go:build unix

package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/usbflash/usbflash/internal/testtargets"
)

// TestTargetsCommand: the exit code and message of each command for the
// targets that cannot be written or read; which targets open, what opening
// one makes and how it is named are drive's (drive.TestOpenTargets). The
// image as its own target and a target another usbflash holds are
// refusals (exit 3), also for verify; a file: target that can never be
// one is a usage error (exit 2) for write, verify and info; an empty slot
// is described by info, exit 0; the name info gives a slot types back in.
func TestTargetsCommand(t *testing.T) {
	t.Parallel()
	td := testtargets.New(t, testImage(1<<20))
	dir, image, locked, slots, fifo := td.Dir, td.Image, td.Locked, td.Slots, td.Fifo
	want := fileHash(t, image)
	for _, tc := range []struct {
		args []string
		code int
		say  string // in stderr, or with --json in stdout
	}{
		{[]string{"write", "--yes", "--force", image, "sim:" + image}, exitRefused, "target sim:" + image + " is the image"},
		{[]string{"write", "--yes", "--force", image, "file:" + image}, exitRefused, "target file:" + image + " is the image"},
		{[]string{"write", "--yes", image, "sim:" + locked}, exitRefused, "in use by another usbflash"},
		{[]string{"verify", image, "sim:" + locked}, exitRefused, "in use by another usbflash"},
		{[]string{"write", "--yes", image, "file:" + locked}, exitRefused, "in use by another usbflash"},
		{[]string{"write", "--yes", image, "file:" + dir}, exitUsage, "is a directory"},
		{[]string{"verify", image, "file:/dev/null"}, exitUsage, "character device"},
		{[]string{"info", "file:" + fifo}, exitUsage, "FIFO"},
		{[]string{"info", "--json", "sim:" + locked + ".empty?size=1MiB&nomedium=1&vendor=ACME&product=SLOT"}, exitOK, `"error":"no medium"`},
		{[]string{"info", "--json", "sim:" + slots + "?luns=2&lun=1"}, exitOK, `"target":"sim:` + slots + `/1"`},
		{[]string{"info", "--json", "sim:" + slots + "/1"}, exitOK, `"bytes":2097152`},
	} {
		t.Run(strings.Join(tc.args[:1], " ")+" "+tc.args[len(tc.args)-1], func(t *testing.T) {
			r := runCLI(t, tc.args...)
			if r.code != tc.code || !strings.Contains(r.stderr+r.stdout, tc.say) {
				t.Errorf("exit %d, want %d saying %q\nstdout: %s\nstderr: %s", r.code, tc.code, tc.say, r.stdout, r.stderr)
			}
		})
	}
	if fileHash(t, image) != want {
		t.Error("the image changed")
	}
}

// TestRefusedWriteLeavesNoNewTarget: a target created by a run that is
// then refused is removed; one that existed stays.
func TestRefusedWriteLeavesNoNewTarget(t *testing.T) {
	t.Parallel()
	image := writeFile(t, "os.img", testImage(1<<20))
	dir := t.TempDir()
	tests := []struct {
		name, target string
		code         int
	}{
		{"file: too small for the image", "file:" + filepath.Join(dir, "small.img") + "?size=512KiB", exitRefused},
		{"sim: too small for the image", "sim:" + filepath.Join(dir, "small-sim.img") + "?size=512KiB", exitRefused},
		{"sim: write-protected", "sim:" + filepath.Join(dir, "wp.img") + "?size=2MiB&wp=1", exitRefused},
		{"sim: slot not chosen", "sim:" + filepath.Join(dir, "two.img") + "?size=2MiB&luns=2", exitUsage},
		{"sim: empty slot", "sim:" + filepath.Join(dir, "empty.img") + "?size=2MiB&nomedium=1", exitDevice},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			r := runCLI(t, "write", "--yes", image, tc.target)
			if r.code != tc.code {
				t.Errorf("exit %d, want %d: %s", r.code, tc.code, r.stderr)
			}
			path, _, _ := strings.Cut(strings.SplitN(tc.target, ":", 2)[1], "?")
			if _, err := os.Stat(path); err == nil {
				t.Errorf("%s was left behind", path)
			}
		})
	}
	// Not confirmed (no terminal, no --yes): refused, nothing left.
	card := filepath.Join(dir, "unconfirmed.img")
	if r := runCLI(t, "write", image, "file:"+card); r.code != exitRefused {
		t.Errorf("unconfirmed: exit %d: %s", r.code, r.stderr)
	}
	if _, err := os.Stat(card); err == nil {
		t.Error("an unconfirmed write left its new target behind")
	}
	// A target that existed is never removed.
	existing := writeFile(t, "existing.img", make([]byte, 512<<10))
	if r := runCLI(t, "write", "--yes", image, "file:"+existing); r.code != exitRefused {
		t.Errorf("existing too small: exit %d: %s", r.code, r.stderr)
	}
	if _, err := os.Stat(existing); err != nil {
		t.Error("a refused write removed a target that existed before")
	}
}

// TestSimSizeMakesTheCardForEveryCommand: sim:PATH?size= makes a blank
// card for the commands that only read, as for write (docs/usage.md's bench
// example on a fresh checkout), and it stays.
func TestSimSizeMakesTheCardForEveryCommand(t *testing.T) {
	t.Parallel()
	image := writeFile(t, "os.img", testImage(2<<20))
	for _, tt := range []struct {
		args []string // before the target; read's OUT goes after it
		want int
	}{
		{benchArgs("--sizes", "64KiB", "--skip", "align,random"), exitOK},
		{[]string{"info"}, exitOK},
		{[]string{"read"}, exitOK},
		{[]string{"verify", image}, exitVerify}, // blank: it reads, and differs
	} {
		t.Run(tt.args[0], func(t *testing.T) {
			dir := t.TempDir()
			card := filepath.Join(dir, "fresh.img")
			args := append(tt.args, "sim:"+card+"?size=4MiB&speed=400MB/s")
			if tt.args[0] == "read" {
				args = append(args, filepath.Join(dir, "b.img"))
			}
			if r := runCLI(t, args...); r.code != tt.want {
				t.Errorf("exit %d, want %d\n%s", r.code, tt.want, r.stderr)
			}
			if st, err := os.Stat(card); err != nil || st.Size() != 4<<20 {
				t.Errorf("the card: %v, want 4 MiB", err)
			}
		})
	}
}
