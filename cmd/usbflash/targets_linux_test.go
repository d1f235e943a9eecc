package main

import (
	"bytes"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/usbflash/usbflash/internal/readonly"
)

// sh runs a command the test needs, failing the test when it fails.
func sh(t *testing.T, name string, args ...string) string {
	t.Helper()
	out, err := exec.Command(name, args...).CombinedOutput()
	if err != nil {
		t.Fatalf("%s %s: %v\n%s", name, strings.Join(args, " "), err, out)
	}
	return strings.TrimSpace(string(out))
}

// loopDevice attaches a new file of size bytes to a free loop device and
// detaches it when the test ends. It skips the test only where loop
// devices cannot be had (no losetup, not root, no loop driver).
func loopDevice(t *testing.T, size int64) string {
	t.Helper()
	backing := filepath.Join(t.TempDir(), "loop.img")
	if err := os.WriteFile(backing, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Truncate(backing, size); err != nil {
		t.Fatal(err)
	}
	out, err := exec.Command("losetup", "--find", "--show", backing).CombinedOutput()
	if err != nil {
		t.Skipf("no loop device on this machine: losetup: %v: %s", err, out)
	}
	dev := strings.TrimSpace(string(out))
	t.Cleanup(func() { exec.Command("losetup", "--detach", dev).Run() })
	return dev
}

// TestWriteRefusesActiveSwap is the reported defect: `usbflash write --yes
// img file:/dev/loopN` with the loop device as active swap got past every
// check. It must be refused before anything is written, naming the use;
// once swap is off, the same write goes through (the exclusive open does
// not stand in the way of a free disk).
func TestWriteRefusesActiveSwap(t *testing.T) {
	t.Parallel()
	dev := loopDevice(t, 8<<20)
	sh(t, "mkswap", dev)
	sh(t, "swapon", dev)
	swapOn := true
	t.Cleanup(func() {
		if swapOn {
			exec.Command("swapoff", dev).Run()
		}
	})
	before, err := os.ReadFile(dev)
	if err != nil {
		t.Fatal(err)
	}
	image := writeFile(t, "os.img", testImage(1<<20))
	r := runCLI(t, "write", "--yes", image, "file:"+dev)
	if r.code != exitRefused || !strings.Contains(r.stderr, dev+" is active swap") {
		t.Fatalf("exit %d, stderr %q; want exit 3 naming the active swap", r.code, r.stderr)
	}
	if after, err := os.ReadFile(dev); err != nil || !bytes.Equal(before, after) {
		t.Fatalf("the swap device was written (%v)", err)
	}
	sh(t, "swapoff", dev)
	swapOn = false
	if r := runCLI(t, "write", "--yes", image, "file:"+dev); r.code != exitOK {
		t.Fatalf("free loop device: exit %d, stderr %q", r.code, r.stderr)
	}
}

// TestWriteRefusesTheDiskTheImageLiesOn: the image is a file on a
// filesystem of the target disk. Even with --force (which skips the
// mounted-disk check) writing the disk would destroy the image as it is
// read.
func TestWriteRefusesTheDiskTheImageLiesOn(t *testing.T) {
	t.Parallel()
	dev := loopDevice(t, 16<<20)
	sh(t, "mkfs.ext4", "-q", dev)
	mnt := t.TempDir()
	sh(t, "mount", dev, mnt)
	t.Cleanup(func() { exec.Command("umount", mnt).Run() })
	image := filepath.Join(mnt, "os.img")
	if err := os.WriteFile(image, testImage(1<<20), 0o644); err != nil {
		t.Fatal(err)
	}
	r := runCLI(t, "write", "--yes", "--force", image, "file:"+dev)
	if r.code != exitRefused || !strings.Contains(r.stderr, "the image "+image+" lies on") {
		t.Fatalf("exit %d, stderr %q; want a refusal saying the image lies on it", r.code, r.stderr)
	}
	// An image from elsewhere is refused too, naming the mount.
	r = runCLI(t, "write", "--yes", writeFile(t, "other.img", testImage(1<<20)), "file:"+dev)
	if r.code != exitRefused || !strings.Contains(r.stderr, "mounted on "+mnt) {
		t.Fatalf("exit %d, stderr %q; want a refusal naming the mount", r.code, r.stderr)
	}
}

// TestReadOnlyCommandsOpenReadOnly: info and verify read a card whose file
// cannot be opened for writing (immutable, which stops root too).
func TestReadOnlyCommandsOpenReadOnly(t *testing.T) {
	t.Parallel()
	img := testImage(256 << 10)
	image := writeFile(t, "os.img", img)
	card := writeFile(t, "card.img", append(img, make([]byte, 1<<20-len(img))...))
	if out, err := exec.Command("chattr", "+i", card).CombinedOutput(); err != nil {
		t.Skipf("cannot make a file immutable here: %v: %s", err, out)
	}
	t.Cleanup(func() { exec.Command("chattr", "-i", card).Run() })
	for _, target := range []string{"file:" + card, "sim:" + card} {
		if r := runCLI(t, "info", target); r.code != exitOK {
			t.Errorf("info %s: exit %d, stderr %q", target, r.code, r.stderr)
		}
		if r := runCLI(t, "verify", image, target); r.code != exitOK {
			t.Errorf("verify %s: exit %d, stderr %q", target, r.code, r.stderr)
		}
	}
}

// TestFileAndSimAgree: the same card file gives the same exit code through
// file: and sim:. One the system will not let usbflash write is a
// write-protected card (3); one that cannot be opened at all failed as a
// device (5); a directory is no card (2).
func TestFileAndSimAgree(t *testing.T) {
	t.Parallel()
	image := writeFile(t, "os.img", testImage(2<<20))
	notDir := writeFile(t, "not-a-dir", []byte("a file"))
	locked := writeFile(t, "card.img", make([]byte, 4<<20))
	readonly.File(t, locked)
	for _, tt := range []struct {
		name, path string
		want       int
		msg        string
	}{
		{"immutable", locked, exitRefused, "write-protected"},
		{"under a file", filepath.Join(notDir, "card.img"), exitDevice, "not a directory"},
		{"a directory", t.TempDir(), exitUsage, "is a directory"},
	} {
		for _, scheme := range []string{"file:", "sim:"} {
			t.Run(tt.name+"/"+scheme, func(t *testing.T) {
				r := runCLI(t, "write", "--yes", image, scheme+tt.path)
				if r.code != tt.want || !strings.Contains(r.stderr, tt.msg) {
					t.Errorf("exit %d, want %d saying %q\n%s", r.code, tt.want, tt.msg, r.stderr)
				}
			})
		}
	}
}

// TestReadWarnsOfAMountedDisk: write refuses a mounted file: disk; read
// takes it (through the kernel, nothing is taken from the system) and
// says what that means for the backup.
func TestReadWarnsOfAMountedDisk(t *testing.T) {
	t.Parallel()
	dev := loopDevice(t, 16<<20)
	sh(t, "mkfs.ext4", "-q", dev)
	mnt := t.TempDir()
	sh(t, "mount", dev, mnt)
	t.Cleanup(func() { exec.Command("umount", mnt).Run() })
	out := filepath.Join(t.TempDir(), "b.img.zst")
	r := runCLI(t, "read", "--json", "file:"+dev, out)
	if r.code != exitOK {
		t.Fatalf("exit %d\n%s", r.code, r.stderr)
	}
	want := dev + " is in use: " + dev + " is mounted on " + mnt + ": what is read may change meanwhile, and the backup be inconsistent; unmount it first for a consistent one"
	if e := lastEvent(t, r.stdout, "note"); e["message"] != want {
		t.Errorf("note %q\nwant %q", e["message"], want)
	}
}
