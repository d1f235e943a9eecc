package windisk

import (
	"os"
	"path/filepath"
	"testing"

	"golang.org/x/sys/windows"

	"github.com/usbflash/usbflash/internal/testkit/winetest"
)

func TestVolumes(t *testing.T) {
	vols, err := Volumes()
	if err != nil {
		t.Fatal(err)
	}
	windir, err := windows.GetWindowsDirectory()
	if err != nil {
		t.Fatal(err)
	}
	root := filepath.VolumeName(windir) + `\`
	found := false
	for _, v := range vols {
		t.Logf("volume %s: mounted on %q, on drives %v", v.Name, v.Paths, v.Disks)
		for _, p := range v.Paths {
			found = found || p == root
		}
	}
	if !found {
		t.Errorf("no volume is mounted on %s, the Windows directory's", root)
	}
}

func TestSystemDrives(t *testing.T) {
	drives, err := SystemDrives()
	if err != nil && winetest.Running() {
		t.Skipf("Wine has no IOCTL_VOLUME_GET_VOLUME_DISK_EXTENTS for its volumes (directories of the host): %v", err)
	}
	if err != nil || len(drives) == 0 {
		t.Fatalf("SystemDrives = %v, %v", drives, err)
	}
}

func TestDrives(t *testing.T) {
	drives, err := Drives()
	if winetest.Running() && (err != nil || len(drives) == 0) {
		t.Skipf("Wine has no physical drives (no disk device interfaces, no \\\\.\\PhysicalDriveN): %d drives, %v", len(drives), err)
	}
	if err != nil {
		t.Fatal(err)
	}
	if len(drives) == 0 {
		t.Fatal("no physical drive, yet Windows runs from one")
	}
	for _, d := range drives {
		if d.Path != PhysicalDrivePath(d.Number) {
			t.Errorf("drive %d has path %q", d.Number, d.Path)
		}
		again, err := Describe(d.Path)
		if err != nil || again.Number != d.Number || again.Descriptor != d.Descriptor {
			t.Errorf("Describe(%s) = %+v, %v; listed as %+v", d.Path, again, err, d)
		}
	}
}

// TestLockRefusesOpenFiles locks a volume a file is open on: the lock is
// refused with a *LockError, unless forced. It needs a volume of its own
// (a VHD an administrator attached) and is skipped without one, saying
// how to give it one.
func TestLockRefusesOpenFiles(t *testing.T) {
	dir := os.Getenv("USBFLASH_TEST_SCRATCH_VOLUME")
	if dir == "" {
		t.Skip("set USBFLASH_TEST_SCRATCH_VOLUME to the root of a volume this test may dismount (an attached VHD, as an administrator); Wine has no volume locks")
	}
	name := make([]uint16, windows.MAX_PATH+1)
	p, _ := windows.UTF16PtrFromString(dir)
	if err := windows.GetVolumeNameForVolumeMountPoint(p, &name[0], uint32(len(name))); err != nil {
		t.Fatal(err)
	}
	v := Volume{Name: windows.UTF16ToString(name), Paths: []string{dir}}
	f, err := os.Create(filepath.Join(dir, "usbflash-lock-test"))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if l, err := Lock([]Volume{v}, false); err == nil {
		l.Release()
		t.Fatal("a volume with an open file was locked")
	}
}
