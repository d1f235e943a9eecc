package drive

import (
	"bytes"
	"context"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/usbflash/usbflash/internal/failure"
	"github.com/usbflash/usbflash/internal/testkit/readonly"
	"github.com/usbflash/usbflash/internal/testkit/testtargets"
)

// openFor opens target as write (readOnly false) or the read-only commands
// (verify, info, read) open it.
func openFor(t *testing.T, target string, opts Options) (*Device, error) {
	t.Helper()
	spec, err := Parse(target)
	if err != nil {
		t.Fatal(err)
	}
	d, err := Open(context.Background(), spec, opts)
	if err == nil {
		t.Cleanup(func() { d.Close() })
	}
	return d, err
}

// TestOpenDisksTheSystemUses, on real loop devices: a disk the system uses
// is refused to write before anything is written, naming the use; with
// Force (which takes a mounted disk) the disk the image lies on is still
// refused, as writing it would destroy the image as it is read; a free
// disk opens (the exclusive open does not stand in the way); a disk in use
// opens to read, with the use as a fact to warn of.
//
// Not parallel with the package's other tests (its subtests are parallel
// among themselves): it forks losetup, mount and mkswap, and a forked child
// holds a copy of every descriptor, the exclusively locked cards of other
// tests included, until it execs; a test that closes a card and opens it
// again could find it "in use" (TestOpenTargets, seen once in CI under
// qemu-user, where the window from fork to exec is long).
func TestOpenDisksTheSystemUses(t *testing.T) {
	image := filepath.Join(t.TempDir(), "os.img")
	if err := os.WriteFile(image, bytes.Repeat([]byte("usbflash image  "), 1<<16), 0o644); err != nil {
		t.Fatal(err)
	}
	// The reported defect: `usbflash write --yes img file:/dev/loopN`
	// with the loop device as active swap got past every check.
	t.Run("active swap", func(t *testing.T) {
		t.Parallel()
		dev := testtargets.LoopDevice(t, 8<<20)
		testtargets.Run(t, "mkswap", dev)
		testtargets.Run(t, "swapon", dev)
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
		_, err = openFor(t, "file:"+dev, Options{Image: image})
		if failure.Of(err) != failure.Refused || !errors.Is(err, ErrInUse) || !strings.Contains(err.Error(), dev+" is active swap") {
			t.Fatalf("Open = %v, want a refusal naming the active swap", err)
		}
		if after, err := os.ReadFile(dev); err != nil || !bytes.Equal(before, after) {
			t.Fatalf("the swap device was written (%v)", err)
		}
		testtargets.Run(t, "swapoff", dev)
		swapOn = false
		d, err := openFor(t, "file:"+dev, Options{Image: image})
		if err != nil {
			t.Fatalf("a free loop device: %v", err)
		}
		if err := d.Dev.WriteBlocks(context.Background(), 0, make([]byte, d.Dev.BlockSize())); err != nil {
			t.Errorf("writing the free loop device: %v", err)
		}
	})
	t.Run("mounted", func(t *testing.T) {
		t.Parallel()
		dev, mnt := testtargets.MountedLoop(t, 16<<20)
		onIt := filepath.Join(mnt, "os.img")
		if err := os.WriteFile(onIt, []byte("an image on the disk"), 0o644); err != nil {
			t.Fatal(err)
		}
		for _, tc := range []struct {
			name string
			opts Options
			say  string
		}{
			{"the image lies on it, forced", Options{Image: onIt, Force: true}, "the image " + onIt + " lies on"},
			{"an image from elsewhere", Options{Image: image}, dev + " is mounted on " + mnt},
		} {
			if _, err := openFor(t, "file:"+dev, tc.opts); failure.Of(err) != failure.Refused || !strings.Contains(err.Error(), tc.say) {
				t.Errorf("%s: Open = %v, want a refusal saying %q", tc.name, err, tc.say)
			}
		}
		// Read through the kernel, nothing is taken from the system: the
		// backup is taken, and told what the use means for it.
		d, err := openFor(t, "file:"+dev, Options{ReadOnly: true})
		if err != nil {
			t.Fatalf("opening the mounted disk to read: %v", err)
		}
		var e *Error
		if !errors.As(d.InUse, &e) || e.Error() != dev+" is in use: "+dev+" is mounted on "+mnt || len(e.Uses) != 1 || e.Uses[0] != UseMounted {
			t.Errorf("InUse = %v, want the mount named", d.InUse)
		}
	})
}

// TestFileAndSimAgree: the same card file is the same card through file:
// and sim:. One the system will not let usbflash write (immutable, which
// stops root too) opens to read and is a write-protected card (a refusal)
// to write; one that cannot be opened at all failed as a device; a
// directory is no card (a usage error).
//
// Not parallel: the write opens lock the card exclusively, and a test
// that runs losetup or mount forks; the child holds a copy of the
// descriptor, and with it the lock, until it execs, so the read-only opens
// at the end could find the lock still held after the writer closed
// (seen once in CI). See TestOpenDisksTheSystemUses.
func TestFileAndSimAgree(t *testing.T) {
	dir := t.TempDir()
	notDir := filepath.Join(dir, "not-a-dir")
	locked := filepath.Join(dir, "card.img")
	for p, b := range map[string][]byte{notDir: []byte("a file"), locked: bytes.Repeat([]byte{0xA5}, 4<<20)} {
		if err := os.WriteFile(p, b, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	readonly.File(t, locked)
	for _, tt := range []struct {
		name, path string
		class      failure.Class
		msg        string
	}{
		{"immutable", locked, failure.Refused, "write-protected"},
		{"under a file", filepath.Join(notDir, "card.img"), failure.Device, "not a directory"},
		{"a directory", t.TempDir(), failure.Usage, "is a directory"},
	} {
		for _, scheme := range []string{"file:", "sim:"} {
			t.Run(tt.name+"/"+scheme, func(t *testing.T) {
				d, err := openFor(t, scheme+tt.path, Options{})
				if err == nil {
					err = CheckWritable(d)
				}
				if failure.Of(err) != tt.class || !strings.Contains(err.Error(), tt.msg) {
					t.Errorf("%v (class %v), want %v saying %q", err, failure.Of(err), tt.class, tt.msg)
				}
			})
		}
	}
	for _, scheme := range []string{"file:", "sim:"} {
		d, err := openFor(t, scheme+locked, Options{ReadOnly: true})
		if err != nil {
			t.Fatalf("%s%s opened to read: %v", scheme, locked, err)
		}
		p := make([]byte, 4096)
		if err := d.Dev.ReadBlocks(context.Background(), 0, p[:d.Dev.BlockSize()]); err != nil || p[0] != 0xA5 {
			t.Errorf("%s%s read: %v", scheme, locked, err)
		}
	}
}
