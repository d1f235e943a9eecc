package drive

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"golang.org/x/sys/unix"

	"github.com/usbflash/usbflash/internal/failure"
	"github.com/usbflash/usbflash/internal/testkit/testtargets"
)

// partitionedLoop is a loop device of size bytes holding an MBR with one
// partition, attached with its partitions scanned: /dev/loopN and
// /dev/loopNp1.
func partitionedLoop(t *testing.T, size int64) string {
	t.Helper()
	backing := filepath.Join(t.TempDir(), "disk.img")
	if err := os.WriteFile(backing, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Truncate(backing, size); err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command("sfdisk", "--quiet", backing)
	cmd.Stdin = strings.NewReader("label: dos\nstart=2048, type=c\n")
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("sfdisk: %v: %s", err, out)
	}
	out, err := exec.Command("losetup", "--find", "--show", "--partscan", backing).CombinedOutput()
	if err != nil {
		t.Skipf("no loop device on this machine: losetup: %v: %s", err, out)
	}
	dev := strings.TrimSpace(string(out))
	t.Cleanup(func() { exec.Command("losetup", "--detach", dev).Run() })
	return dev
}

// TestOpenDiskTargets opens disk: targets on loop devices as a write and
// the read-only commands do: a whole free disk opens uncached and is
// written; a partition, a file, a character device and a missing node are
// no disk: targets; a mounted disk is refused as file: refuses it, and is
// read with the use told. Not parallel with the package's other tests
// (forks: see TestOpenDisksTheSystemUses).
func TestOpenDiskTargets(t *testing.T) {
	t.Run("a free disk", func(t *testing.T) {
		t.Parallel()
		dev := partitionedLoop(t, 8<<20)
		d, err := openFor(t, "disk:"+dev, Options{})
		if err != nil {
			t.Fatal(err)
		}
		if d.Name != "disk:"+dev || blockName(d) != "disk:"+dev {
			t.Errorf("named %q, %q", d.Name, blockName(d))
		}
		rd, ok := d.Dev.(RawDisk)
		if !ok || rd.RawDisk().Node != dev || !rd.RawDisk().Whole || rd.RawDisk().System {
			t.Fatalf("RawDisk fact = %+v (%v)", rd, ok)
		}
		if dio, ok := d.Dev.(DirectIO); !ok || !dio.Direct() {
			t.Error("a disk: target is not opened uncached")
		}
		block := bytes.Repeat([]byte{0x5a}, d.Dev.BlockSize())
		if err := d.Dev.WriteBlocks(context.Background(), 4096, block); err != nil {
			t.Fatalf("writing the disk: %v", err)
		}
		d.Close()
		got, err := os.ReadFile(dev)
		if err != nil || !bytes.Equal(got[4096*len(block):4097*len(block)], block) {
			t.Errorf("the block is not on the disk (%v)", err)
		}
		// Its partition is no disk: target, even to read.
		part := partitionNode(t, dev, 1)
		for _, ro := range []bool{false, true} {
			if _, err := openFor(t, "disk:"+part, Options{ReadOnly: ro}); failure.Of(err) != failure.Usage || !errors.Is(err, ErrNotWholeDisk) ||
				!strings.Contains(err.Error(), part+" is a partition of "+dev) {
				t.Errorf("partition (read-only %v): %v", ro, err)
			}
		}
	})
	t.Run("no disk", func(t *testing.T) {
		t.Parallel()
		file := filepath.Join(t.TempDir(), "os.img")
		if err := os.WriteFile(file, make([]byte, 1<<20), 0o644); err != nil {
			t.Fatal(err)
		}
		for _, path := range []string{file, "/dev/null", "/dev/usbflash-test-no-such-disk"} {
			if _, err := openFor(t, "disk:"+path, Options{}); failure.Of(err) != failure.Usage || !errors.Is(err, ErrNotADisk) {
				t.Errorf("disk:%s = %v, want ErrNotADisk", path, err)
			}
		}
		if _, err := os.Stat("/dev/usbflash-test-no-such-disk"); err == nil {
			t.Error("a missing disk was created")
		}
	})
	t.Run("mounted", func(t *testing.T) {
		t.Parallel()
		dev, mnt := testtargets.MountedLoop(t, 16<<20)
		_, err := openFor(t, "disk:"+dev, Options{})
		if failure.Of(err) != failure.Refused || !errors.Is(err, ErrInUse) || !strings.Contains(err.Error(), dev+" is mounted on "+mnt) {
			t.Fatalf("a mounted disk: %v", err)
		}
		d, err := openFor(t, "disk:"+dev, Options{ReadOnly: true})
		if err != nil {
			t.Fatalf("reading a mounted disk: %v", err)
		}
		if !errors.Is(d.InUse, ErrInUse) || len(d.Dev.(RawDisk).RawDisk().Volumes) != 1 {
			t.Errorf("InUse = %v, volumes %+v", d.InUse, d.Dev.(RawDisk).RawDisk().Volumes)
		}
	})
}

// partitionNode is the node of partition n of dev: /dev/loopNpN where
// udev made it, else one made here from the number sysfs gives it (a
// container without udev).
func partitionNode(t *testing.T, dev string, n int) string {
	t.Helper()
	name := fmt.Sprintf("%sp%d", filepath.Base(dev), n)
	if _, err := os.Stat("/dev/" + name); err == nil {
		return "/dev/" + name
	}
	attr := filepath.Join("/sys/block", filepath.Base(dev), name, "dev")
	if _, err := os.Stat(attr); err != nil {
		// losetup --partscan's scan is not always done (or seen) yet:
		// have the partitions added now.
		exec.Command("partx", "--add", dev).Run() // fails if the scan ran meanwhile: the read below tells
	}
	b, err := os.ReadFile(attr)
	if err != nil {
		t.Fatalf("the kernel made no partition %s: %v", name, err)
	}
	var major, minor uint32
	if _, err := fmt.Sscanf(string(b), "%d:%d", &major, &minor); err != nil {
		t.Fatal(err)
	}
	node := filepath.Join(t.TempDir(), name)
	if err := unix.Mknod(node, unix.S_IFBLK|0o600, int(unix.Mkdev(major, minor))); err != nil {
		t.Fatalf("mknod %s: %v", node, err)
	}
	return node
}

func blockName(d *Device) string {
	if s, ok := d.Dev.(interface{ String() string }); ok {
		return s.String()
	}
	return ""
}
