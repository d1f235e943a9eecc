//go:build unix

package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/usbflash/usbflash/internal/testkit/testtargets"
)

// TestTargetsCommand: the exit code and message of each command for the
// targets that cannot be written or read; which targets open, what opening
// one makes and how it is named are drive's (drive.TestOpenTargets). The
// image as its own target and a target another usbflash holds are
// refusals (exit 3), also for verify; a file: target that can never be
// one is a usage error (exit 2) for write, verify and info; an empty slot
// is described by info, exit 0; the name info gives a slot types back in;
// sim:PATH?size= makes a blank card for the commands that only read, as
// for write (docs/usage.md's bench example on a fresh checkout), and it
// stays.
func TestTargetsCommand(t *testing.T) {
	t.Parallel()
	td := testtargets.New(t, testImage(1<<20))
	dir, image, locked, slots, fifo := td.Dir, td.Image, td.Locked, td.Slots, td.Fifo
	want := fileHash(t, image)
	fresh := func(name string) string { return filepath.Join(dir, name+".img") }
	const blank = "?size=4MiB&speed=400MB/s"
	for _, tc := range []struct {
		args []string
		code int
		say  string // in stderr, or with --json in stdout
		made string // a card of 4 MiB the command made
	}{
		{[]string{"write", "--yes", "--force", image, "sim:" + image}, exitRefused, "target sim:" + image + " is the image", ""},
		{[]string{"write", "--yes", "--force", image, "file:" + image}, exitRefused, "target file:" + image + " is the image", ""},
		{[]string{"write", "--yes", image, "sim:" + locked}, exitRefused, "in use by another usbflash", ""},
		{[]string{"verify", image, "sim:" + locked}, exitRefused, "in use by another usbflash", ""},
		{[]string{"write", "--yes", image, "file:" + locked}, exitRefused, "in use by another usbflash", ""},
		{[]string{"write", "--yes", image, "file:" + dir}, exitUsage, "is a directory", ""},
		{[]string{"verify", image, "file:/dev/null"}, exitUsage, "character device", ""},
		{[]string{"info", "file:" + fifo}, exitUsage, "FIFO", ""},
		{[]string{"info", "--json", "sim:" + locked + ".empty?size=1MiB&nomedium=1&vendor=ACME&product=SLOT"}, exitOK, `"error":"no medium"`, ""},
		{[]string{"info", "--json", "sim:" + slots + "?luns=2&lun=1"}, exitOK, `"target":"sim:` + slots + `/1"`, ""},
		{[]string{"info", "--json", "sim:" + slots + "/1"}, exitOK, `"bytes":2097152`, ""},
		{append(benchArgs("--sizes", "64KiB", "--skip", "align,random"), "sim:"+fresh("bench")+blank), exitOK, "", fresh("bench")},
		{[]string{"info", "sim:" + fresh("info") + blank}, exitOK, "", fresh("info")},
		{[]string{"read", "sim:" + fresh("read") + blank, filepath.Join(dir, "b.img")}, exitOK, "", fresh("read")},
		{[]string{"verify", image, "sim:" + fresh("verify") + blank}, exitVerify, "", fresh("verify")}, // blank: it reads, and differs
	} {
		t.Run(strings.Join(tc.args[:1], " ")+" "+tc.args[len(tc.args)-1], func(t *testing.T) {
			r := runCLI(t, tc.args...)
			if r.code != tc.code || !strings.Contains(r.stderr+r.stdout, tc.say) {
				t.Errorf("exit %d, want %d saying %q\nstdout: %s\nstderr: %s", r.code, tc.code, tc.say, r.stdout, r.stderr)
			}
			if st, err := os.Stat(tc.made); tc.made != "" && (err != nil || st.Size() != 4<<20) {
				t.Errorf("the card %s: %v, want 4 MiB", tc.made, err)
			}
		})
	}
	if fileHash(t, image) != want {
		t.Error("the image changed")
	}
}
