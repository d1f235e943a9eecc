//go:build unix

package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"github.com/usbflash/usbflash/drive"
	"github.com/usbflash/usbflash/internal/flock"
)

// TestWriteRefusesTheImageAsTarget: writing an image onto itself, through
// any name, is refused before anything is opened for writing, and the
// image is left as it was.
func TestWriteRefusesTheImageAsTarget(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	image := filepath.Join(dir, "self.img")
	if err := os.WriteFile(image, testImage(1<<20), 0o644); err != nil {
		t.Fatal(err)
	}
	want := fileHash(t, image)
	link, hard := filepath.Join(dir, "link.img"), filepath.Join(dir, "hard.img")
	if err := os.Symlink(image, link); err != nil {
		t.Fatal(err)
	}
	if err := os.Link(image, hard); err != nil {
		t.Fatal(err)
	}
	for _, target := range []string{
		"sim:" + image,
		"sim:" + image + "?size=2MiB", // would extend the image before any check
		"file:" + image,
		"file:" + link,
		"sim:" + hard,
		"file:" + filepath.Join(dir, ".", "self.img"),
	} {
		t.Run(target, func(t *testing.T) {
			r := runCLI(t, "write", "--yes", "--force", image, target)
			if r.code != exitRefused || !strings.Contains(r.stderr, "target "+target+" is the image") {
				t.Errorf("exit %d, stderr %q; want a refusal naming the image", r.code, r.stderr)
			}
			if got := fileHash(t, image); got != want {
				t.Fatal("the image changed")
			}
		})
	}
}

// TestWriteRefusesALockedTarget: a target another usbflash holds (a flock
// on its file, as every open target has) is refused, exit 3, and the
// holder's card is not touched.
func TestWriteRefusesALockedTarget(t *testing.T) {
	t.Parallel()
	image := writeFile(t, "os.img", testImage(64<<10))
	dir := t.TempDir()
	card := filepath.Join(dir, "card.img")
	if err := os.WriteFile(card, make([]byte, 1<<20), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(card+".lun1", make([]byte, 1<<20), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name, locked, target string
	}{
		{"sim:", card, "sim:" + card},
		{"sim: second LUN's file", card + ".lun1", "sim:" + card + "?luns=2&lun=1"},
		{"file:", card, "file:" + card},
	} {
		t.Run(tc.name, func(t *testing.T) {
			holder, err := os.Open(tc.locked)
			if err != nil {
				t.Fatal(err)
			}
			defer holder.Close()
			if err := flock.Lock(holder, true); err != nil {
				t.Fatal(err)
			}
			before := fileHash(t, tc.locked)
			r := runCLI(t, "write", "--yes", image, tc.target)
			if r.code != exitRefused || !strings.Contains(r.stderr, "in use by another usbflash") {
				t.Errorf("exit %d, stderr %q; want a refusal saying another usbflash holds it", r.code, r.stderr)
			}
			if fileHash(t, tc.locked) != before {
				t.Error("the locked card was written")
			}
			// verify only reads, but must not read a card while it is written.
			if r := runCLI(t, "verify", image, tc.target); r.code != exitRefused {
				t.Errorf("verify: exit %d, stderr %q; want a refusal", r.code, r.stderr)
			}
		})
	}
}

// TestFileTargetsThatCannotBeOne: a file: target that can never be one is
// a usage error (exit 2) as sim: gives, and nothing is created.
func TestFileTargetsThatCannotBeOne(t *testing.T) {
	t.Parallel()
	image := writeFile(t, "os.img", testImage(64<<10))
	dir := t.TempDir()
	fifo := filepath.Join(dir, "fifo")
	if err := syscall.Mkfifo(fifo, 0o644); err != nil {
		t.Fatal(err)
	}
	existing := writeFile(t, "existing.img", make([]byte, 1<<20))
	tests := []struct {
		name, target, want string
		created            string // a path that must not exist afterwards
	}{
		{"directory", "file:" + dir, "is a directory", ""},
		{"character device", "file:/dev/null", "character device", ""},
		{"FIFO", "file:" + fifo, "FIFO", ""},
		{"missing directory", "file:" + filepath.Join(dir, "no", "such.img"), "does not exist", filepath.Join(dir, "no")},
		{"missing device", "file:/dev/usbflash-test-no-such-disk", "no such device", "/dev/usbflash-test-no-such-disk"},
		{"size smaller than the file", "file:" + existing + "?size=512KiB", "refusing to shrink", ""},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			for _, cmd := range [][]string{{"write", "--yes", image, tc.target}, {"verify", image, tc.target}, {"info", tc.target}} {
				r := runCLI(t, cmd...)
				if r.code != exitUsage || !strings.Contains(r.stderr, tc.want) {
					t.Errorf("%s: exit %d, stderr %q; want exit 2 saying %q", cmd[0], r.code, r.stderr, tc.want)
				}
			}
			if tc.created != "" {
				if _, err := os.Stat(tc.created); err == nil {
					t.Errorf("%s was created", tc.created)
				}
			}
		})
	}
	if st, err := os.Stat(existing); err != nil || st.Size() != 1<<20 {
		t.Errorf("the existing file changed size: %v", err)
	}
}

// TestRegularFileInDevIsNoDevice: a regular file where a device should be
// (in /dev/shm, a tmpfs inside /dev) is a mistyped device name.
func TestRegularFileInDevIsNoDevice(t *testing.T) {
	t.Parallel()
	f, err := os.CreateTemp("/dev/shm", "usbflash-test-*.img")
	if err != nil {
		t.Skipf("no /dev/shm to make a regular file in /dev: %v", err)
	}
	f.Close()
	t.Cleanup(func() { os.Remove(f.Name()) })
	image := writeFile(t, "os.img", testImage(64<<10))
	r := runCLI(t, "write", "--yes", image, "file:"+f.Name()+"?size=1MiB")
	if r.code != exitUsage || !strings.Contains(r.stderr, "regular file in /dev") {
		t.Errorf("exit %d, stderr %q; want exit 2 saying it is not a device", r.code, r.stderr)
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

// TestInfoDescribesAnEmptySlot: info shows who the reader is and that the
// slot holds no card, exit 0.
func TestInfoDescribesAnEmptySlot(t *testing.T) {
	t.Parallel()
	card := writeFile(t, "card.img", make([]byte, 1<<20))
	r := runCLI(t, "info", "--json", "sim:"+card+"?nomedium=1&vendor=ACME&product=SLOT")
	if r.code != exitOK {
		t.Fatalf("exit %d: %s", r.code, r.stderr)
	}
	var rep infoReport
	if err := json.Unmarshal([]byte(r.stdout), &rep); err != nil {
		t.Fatal(err)
	}
	if l := rep.LUN; l == nil || l.Vendor != "ACME" || l.Product != "SLOT" || l.Medium || l.Error != "no medium" {
		t.Errorf("info --json = %s", r.stdout)
	}
}

// TestInUseAdvice: one piece of advice for every way a disk is used.
func TestInUseAdvice(t *testing.T) {
	t.Parallel()
	err := &drive.Error{Err: drive.ErrInUse, Uses: []drive.Use{drive.UseMounted, drive.UseHeld}}
	if got, want := hint(err), "unmount it and close the dm-crypt, LVM or RAID device that holds it first, or pass --force if you are sure"; got != want {
		t.Errorf("hint = %q, want %q", got, want)
	}
	if got := hint(&drive.Error{Err: drive.ErrInUse}); !strings.HasPrefix(got, "close what uses it first") {
		t.Errorf("hint without uses = %q", got)
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

// TestSimSlotNameTypesBackIn: the name usbflash gives slot 1 of a
// simulated reader is a target that names it.
func TestSimSlotNameTypesBackIn(t *testing.T) {
	t.Parallel()
	card := writeFile(t, "ml.img", make([]byte, 1<<20))
	if err := os.WriteFile(card+".lun1", make([]byte, 2<<20), 0o644); err != nil { // slot 1's card
		t.Fatal(err)
	}
	r := runCLI(t, "info", "--json", "sim:"+card+"?luns=2&lun=1")
	var first infoReport
	if err := json.Unmarshal([]byte(r.stdout), &first); err != nil || first.Target != "sim:"+card+"/1" {
		t.Fatalf("info: exit %d, target %q (%v)\n%s", r.code, first.Target, err, r.stderr)
	}
	r = runCLI(t, "info", "--json", first.Target)
	var again infoReport
	if err := json.Unmarshal([]byte(r.stdout), &again); err != nil || again.Target != first.Target || again.LUN == nil || again.LUN.Bytes != 2<<20 {
		t.Errorf("info %s: exit %d, %+v (%v)\n%s", first.Target, r.code, again, err, r.stderr)
	}
}
