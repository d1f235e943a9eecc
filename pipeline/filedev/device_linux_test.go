//go:build linux

package filedev

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"

	"github.com/usbflash/usbflash/internal/failure"
	"github.com/usbflash/usbflash/internal/lib/aligned"
	"github.com/usbflash/usbflash/internal/lib/linuxdisk"
	"github.com/usbflash/usbflash/internal/testkit/factsonly"

	"golang.org/x/sys/unix"
)

// checkDirect asserts Direct() agrees with what the kernel has on the open
// file description. F_GETFL, not /proc/self/fdinfo: fdinfo prints the
// kernel's own flag numbering, which differs between architectures
// (O_DIRECT is 040000 on amd64, 0200000 on arm64), and under user-mode
// emulation (qemu-aarch64 running the arm64 tests) it is the host's, while
// F_GETFL's result is translated to the running program's architecture.
func checkDirect(t *testing.T, dev *Device) {
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

// TestDeviceDirectFallback offers the kernel a direct transfer from a
// buffer at an odd address, which it refuses (EINVAL) unless the disk
// accepts byte-aligned DMA, and checks the data lands either way and
// Direct() still tells the truth.
func TestDeviceDirectFallback(t *testing.T) {
	dev, err := Open(filepath.Join(t.TempDir(), "f.img"), Options{Size: 64 * 512})
	if err != nil {
		t.Fatal(err)
	}
	defer dev.Close()
	checkDirect(t, dev)
	mem := aligned.Bytes(512 + 1)
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

// blockDeviceNode finds any block device node to test the checks that run
// before a block device is opened for writing.
func blockDeviceNode(t *testing.T) (string, uint64) {
	t.Helper()
	for _, p := range []string{"/dev/loop0", "/dev/vda", "/dev/sda", "/dev/nvme0n1"} {
		if st, err := os.Stat(p); err == nil && st.Mode()&os.ModeDevice != 0 && st.Mode()&os.ModeCharDevice == 0 {
			return p, uint64(st.Sys().(*syscall.Stat_t).Rdev)
		}
	}
	t.Skip("no block device node to test with")
	return "", 0
}

// TestOpenBlockDeviceRefusesInUse runs the in-use check against fixtures
// that say the device is mounted, active swap or held, and checks Open
// refuses before opening it, naming the use, and that a read-only open
// takes it and reports the use (InUse). A mount table that cannot be read
// refuses too, as ErrInUseUnknown and no use; a read-only open takes it
// with nothing to report.
func TestOpenBlockDeviceRefusesInUse(t *testing.T) {
	dev, rdev := blockDeviceNode(t)
	num := linuxdisk.DevNumber(rdev)
	name := filepath.Base(dev)
	tests := []struct {
		name, mountinfo, swaps, holder string
		want                           string
		wantIs                         error // ErrInUse, or ErrInUseUnknown
	}{
		{"mounted", "36 35 " + num + " / /mnt rw - ext4 " + dev + " rw\n", "", "", "mounted on /mnt", ErrInUse},
		{"active swap", "", dev + " partition 8188 0 -2\n", "", "active swap", ErrInUse},
		{"held", "", "", "dm-7", "held by dm-7", ErrInUse},
		{"no mount table", "-", "", "", "cannot tell whether the disk is in use", ErrInUseUnknown},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			root := t.TempDir()
			sysDir := filepath.Join(root, "sys", "devices", "virtual", "block", name)
			if err := os.MkdirAll(filepath.Join(sysDir, "holders"), 0o755); err != nil {
				t.Fatal(err)
			}
			if err := os.WriteFile(filepath.Join(sysDir, "dev"), []byte(num+"\n"), 0o644); err != nil {
				t.Fatal(err)
			}
			if tc.holder != "" {
				if err := os.Mkdir(filepath.Join(sysDir, "holders", tc.holder), 0o755); err != nil {
					t.Fatal(err)
				}
			}
			if err := os.MkdirAll(filepath.Join(root, "sys", "dev", "block"), 0o755); err != nil {
				t.Fatal(err)
			}
			if err := os.Symlink(sysDir, filepath.Join(root, "sys", "dev", "block", num)); err != nil {
				t.Fatal(err)
			}
			mountinfo, swaps := filepath.Join(root, "mountinfo"), filepath.Join(root, "swaps")
			if err := os.WriteFile(mountinfo, []byte(tc.mountinfo), 0o644); err != nil || tc.mountinfo == "-" && os.Remove(mountinfo) != nil {
				t.Fatal(err)
			}
			if err := os.WriteFile(swaps, []byte("Filename Type Size Used Priority\n"+tc.swaps), 0o644); err != nil {
				t.Fatal(err)
			}
			sys := linuxdisk.NewSys(filepath.Join(root, "sys"), mountinfo, swaps)
			d, err := Open(dev, Options{sys: sys})
			if err == nil {
				d.Close()
			}
			if !errors.Is(err, tc.wantIs) || !strings.Contains(err.Error(), tc.want) || failure.Of(err) != failure.Refused {
				t.Fatalf("err = %v, want %v, a refusal naming %q", err, tc.wantIs, tc.want)
			}
			if tc.wantIs == ErrInUseUnknown && errors.Is(err, ErrInUse) {
				t.Fatalf("err = %v: a check that was not made is no use", err)
			}
			// A read-only open takes the disk and says how it is used.
			d, err = Open(dev, Options{sys: sys, ReadOnly: true})
			if err != nil {
				t.Fatalf("read-only: %v", err)
			}
			defer d.Close()
			if err := d.InUse(); tc.wantIs == ErrInUseUnknown && err != nil {
				t.Errorf("read-only: InUse() = %v, want nil: nothing is known to use it", err)
			} else if tc.wantIs == ErrInUse && (!errors.Is(err, ErrInUse) || !strings.Contains(err.Error(), tc.want)) {
				t.Errorf("read-only: InUse() = %v, want ErrInUse naming %q", err, tc.want)
			}
		})
	}
}

// TestOpenRejectsNonTargets: what can never be a file target is
// ErrBadTarget (the CLI's usage error), and nothing is created.
func TestOpenRejectsNonTargets(t *testing.T) {
	dir := t.TempDir()
	fifo := filepath.Join(dir, "fifo")
	if err := syscall.Mkfifo(fifo, 0o644); err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name, path string
		opts       Options
		want       string
		kind       error
	}{
		{"character device", "/dev/null", Options{}, "character device", ErrWrongType},
		{"FIFO", fifo, Options{}, "FIFO", ErrWrongType},
		{"missing device", "/dev/usbflash-no-such-disk", Options{Size: 1 << 20}, "never created under /dev", ErrNotADevice},
		{"missing device, read-only", "/dev/usbflash-no-such-disk", Options{ReadOnly: true}, "no such device", ErrNotADevice},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			d, err := Open(tc.path, tc.opts)
			if err == nil {
				d.Close()
			}
			var te *TargetError
			if !errors.Is(err, ErrBadTarget) || !strings.Contains(err.Error(), tc.want) || !errors.As(err, &te) || !errors.Is(err, tc.kind) {
				t.Fatalf("err = %v, want ErrBadTarget of reason %d saying %q", err, tc.kind, tc.want)
			}
			factsonly.Check(t, err.Error())
		})
	}
	if _, err := os.Stat("/dev/usbflash-no-such-disk"); err == nil {
		t.Fatal("a file was created in /dev")
	}
}

// accessMode reads the access mode the kernel has on the open file
// description: the flags line of /proc/self/fdinfo.
func accessMode(t *testing.T, dev *Device) int64 {
	t.Helper()
	b, err := os.ReadFile(fmt.Sprintf("/proc/self/fdinfo/%d", dev.f.Fd()))
	if err != nil {
		t.Fatal(err)
	}
	for _, line := range strings.Split(string(b), "\n") {
		if v, ok := strings.CutPrefix(line, "flags:"); ok {
			flags, err := strconv.ParseInt(strings.TrimSpace(v), 8, 64)
			if err != nil {
				t.Fatal(err)
			}
			return flags & syscall.O_ACCMODE
		}
	}
	t.Fatal("no flags line in fdinfo")
	return 0
}

func TestOpenReadOnly(t *testing.T) {
	path := filepath.Join(t.TempDir(), "card.img")
	if err := os.WriteFile(path, make([]byte, 8*512), 0o444); err != nil {
		t.Fatal(err)
	}
	ro, err := Open(path, Options{ReadOnly: true})
	if err != nil {
		t.Fatal(err)
	}
	defer ro.Close()
	if mode := accessMode(t, ro); mode != syscall.O_RDONLY {
		t.Errorf("access mode %o, want O_RDONLY", mode)
	}
	// Two readers share the file; a writer must wait for them.
	ro2, err := Open(path, Options{ReadOnly: true})
	if err != nil {
		t.Fatalf("second reader: %v", err)
	}
	ro2.Close()
	if w, err := Open(path, Options{}); !errors.Is(err, ErrLocked) {
		if err == nil {
			w.Close()
		}
		t.Fatalf("writer beside a reader: %v, want ErrLocked", err)
	}
}

// TestDeviceFallbackOnEINVAL drives the fallback itself, since whether
// a real filesystem refuses a given direct transfer depends on the kernel.
func TestDeviceFallbackOnEINVAL(t *testing.T) {
	dev, err := Open(filepath.Join(t.TempDir(), "f.img"), Options{Size: 64 * 512})
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
