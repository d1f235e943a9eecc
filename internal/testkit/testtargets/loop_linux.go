package testtargets

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// Run runs a command a test needs (mkfs, mount, swapon), failing the
// test when it fails, and returns its output.
func Run(tb testing.TB, name string, args ...string) string {
	tb.Helper()
	out, err := exec.Command(name, args...).CombinedOutput()
	if err != nil {
		tb.Fatalf("%s %s: %v\n%s", name, strings.Join(args, " "), err, out)
	}
	return strings.TrimSpace(string(out))
}

// LoopDevice attaches a new file of size bytes to a free loop device, a
// disk the kernel holds as it holds a card in a reader it drives, and
// detaches it when the test ends. It skips the test only where loop
// devices cannot be had (no losetup, not root, no loop driver).
func LoopDevice(tb testing.TB, size int64) string {
	tb.Helper()
	backing := filepath.Join(tb.TempDir(), "loop.img")
	if err := os.WriteFile(backing, nil, 0o644); err != nil {
		tb.Fatal(err)
	}
	if err := os.Truncate(backing, size); err != nil {
		tb.Fatal(err)
	}
	out, err := exec.Command("losetup", "--find", "--show", backing).CombinedOutput()
	if err != nil {
		tb.Skipf("no loop device on this machine: losetup: %v: %s", err, out)
	}
	dev := strings.TrimSpace(string(out))
	tb.Cleanup(func() { exec.Command("losetup", "--detach", dev).Run() })
	return dev
}

// MountedLoop is a loop device of size bytes with an ext4 filesystem
// mounted on a new directory until the test ends.
func MountedLoop(tb testing.TB, size int64) (dev, mnt string) {
	tb.Helper()
	dev = LoopDevice(tb, size)
	Run(tb, "mkfs.ext4", "-q", dev)
	mnt = tb.TempDir()
	Run(tb, "mount", dev, mnt)
	tb.Cleanup(func() { exec.Command("umount", mnt).Run() })
	return dev, mnt
}
