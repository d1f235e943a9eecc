//go:build linux

package pipeline

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"golang.org/x/sys/unix"
)

// checkDirect asserts Direct() agrees with what the kernel has on the open
// file description. F_GETFL, not /proc/self/fdinfo: fdinfo prints the
// kernel's own flag numbering, which differs between architectures
// (O_DIRECT is 040000 on amd64, 0200000 on arm64), and under user-mode
// emulation (qemu-aarch64 running the arm64 tests) it is the host's, while
// F_GETFL's result is translated to the running program's architecture.
func checkDirect(t *testing.T, dev *FileDevice) {
	t.Helper()
	flags, err := unix.FcntlInt(dev.f.Fd(), unix.F_GETFL, 0)
	if err != nil {
		t.Fatalf("F_GETFL: %v", err)
	}
	if kernel := flags&unix.O_DIRECT != 0; kernel != dev.Direct() {
		t.Errorf("Direct() = %v but the kernel says O_DIRECT is %v", dev.Direct(), kernel)
	}
	t.Logf("O_DIRECT: %v", dev.Direct())
}

// TestFileDeviceDirectFallback offers the kernel a direct transfer from a
// buffer at an odd address, which it refuses (EINVAL) unless the disk
// accepts byte-aligned DMA, and checks the data lands either way and
// Direct() still tells the truth.
func TestFileDeviceDirectFallback(t *testing.T) {
	dev, err := OpenFileDevice(filepath.Join(t.TempDir(), "f.img"), FileOptions{Size: 64 * 512})
	if err != nil {
		t.Fatal(err)
	}
	defer dev.Close()
	checkDirect(t, dev)
	mem := alignedBytes(512 + 1)
	odd := mem[1 : 1+512] // misaligned for O_DIRECT
	copy(odd, testImage(512, 3))
	ctx := context.Background()
	if err := dev.WriteBlocks(ctx, 5, odd); err != nil {
		t.Fatalf("misaligned write: %v", err)
	}
	checkDirect(t, dev)
	back := make([]byte, 512)
	if err := dev.ReadBlocks(ctx, 5, back); err != nil || string(back) != string(odd) {
		t.Fatalf("read back: %v", err)
	}
}

func TestMountedOn(t *testing.T) {
	// A fake sysfs: 8:0 is sda, 8:1 and 8:2 its partitions, 8:16 is sdb.
	sys := t.TempDir()
	for _, d := range []struct{ num, path string }{
		{"8:0", "devices/sda"}, {"8:1", "devices/sda/sda1"}, {"8:2", "devices/sda/sda2"}, {"8:16", "devices/sdb"},
	} {
		full := filepath.Join(sys, d.path)
		if err := os.MkdirAll(full, 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(full, "dev"), []byte(d.num+"\n"), 0o644); err != nil {
			t.Fatal(err)
		}
		if strings.Count(d.path, "/") == 2 {
			if err := os.WriteFile(filepath.Join(full, "partition"), []byte("1\n"), 0o644); err != nil {
				t.Fatal(err)
			}
		}
		if err := os.Symlink(full, filepath.Join(sys, d.num)); err != nil {
			t.Fatal(err)
		}
	}
	line := func(num, point, source string) string {
		return "36 35 " + num + " / " + point + " rw,noatime shared:1 - ext4 " + source + " rw\n"
	}
	for _, tc := range []struct {
		name, info, dev, devNum string
		want                    int
	}{
		{"nothing mounted", line("0:22", "/", "/dev/vda"), "/dev/sda", "8:0", 0},
		{"partition by sysfs", line("8:1", "/media/boot", "/dev/sda1"), "/dev/sda", "8:0", 1},
		{"two partitions", line("8:1", "/a", "/dev/sda1") + line("8:2", "/b", "/dev/sda2"), "/dev/sda", "8:0", 2},
		{"whole disk", line("8:16", "/mnt", "/dev/sdb"), "/dev/sdb", "8:16", 1},
		{"other disk's partition", line("8:1", "/a", "/dev/sda1"), "/dev/sdb", "8:16", 0},
		{"partition by name only", line("179:1", "/boot", "/dev/mmcblk0p1"), "/dev/mmcblk0", "179:0", 1},
		{"similar name is not a partition", line("179:9", "/x", "/dev/mmcblk01"), "/dev/mmcblk0", "179:0", 0},
		{"nvme", line("259:1", "/", "/dev/nvme0n1p2"), "/dev/nvme0n1", "259:0", 1},
		{"malformed line", "garbage\n", "/dev/sda", "8:0", 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := mountedOn(strings.NewReader(tc.info), tc.dev, tc.devNum, sys)
			if err != nil || len(got) != tc.want {
				t.Errorf("mountedOn = %q, %v; want %d mounts", got, err, tc.want)
			}
		})
	}
}

func TestOpenBlockDeviceRefusesMounted(t *testing.T) {
	// Any block device will do: the check runs before opening it for writing,
	// against a mount table that claims the device is mounted.
	var dev string
	for _, p := range []string{"/dev/loop0", "/dev/vda", "/dev/sda", "/dev/nvme0n1"} {
		if st, err := os.Stat(p); err == nil && st.Mode()&os.ModeDevice != 0 && st.Mode()&os.ModeCharDevice == 0 {
			dev = p
			break
		}
	}
	if dev == "" {
		t.Skip("no block device node to test with")
	}
	st, _ := os.Stat(dev)
	rdev := st.Sys().(*syscall.Stat_t).Rdev
	info := filepath.Join(t.TempDir(), "mountinfo")
	num := fmt.Sprintf("%d:%d", unix.Major(uint64(rdev)), unix.Minor(uint64(rdev)))
	if err := os.WriteFile(info, []byte("36 35 "+num+" / /mnt rw - ext4 "+dev+" rw\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	d, err := OpenFileDevice(dev, FileOptions{MountInfo: info})
	if err == nil {
		d.Close()
	}
	if err == nil || !strings.Contains(err.Error(), "mounted") {
		t.Fatalf("err = %v, want a refusal naming the mount", err)
	}
}

// TestFileDeviceFallbackOnEINVAL drives the fallback itself, since whether
// a real filesystem refuses a given direct transfer depends on the kernel.
func TestFileDeviceFallbackOnEINVAL(t *testing.T) {
	dev, err := OpenFileDevice(filepath.Join(t.TempDir(), "f.img"), FileOptions{Size: 64 * 512})
	if err != nil {
		t.Fatal(err)
	}
	defer dev.Close()
	if !dev.Direct() {
		t.Skip("this filesystem has no O_DIRECT")
	}
	calls := 0
	err = dev.retryBuffered(func() error {
		if calls++; calls == 1 {
			return &os.PathError{Op: "write", Path: "f.img", Err: syscall.EINVAL}
		}
		return nil
	})
	if err != nil || calls != 2 || dev.Direct() {
		t.Fatalf("err = %v after %d calls, Direct() = %v; want a buffered retry", err, calls, dev.Direct())
	}
	checkDirect(t, dev)
	// Other errors are not retried.
	calls = 0
	if err := dev.retryBuffered(func() error { calls++; return syscall.EIO }); err != syscall.EIO || calls != 1 {
		t.Errorf("EIO: err = %v after %d calls", err, calls)
	}
}
