package drive

import (
	"context"
	"errors"
	"testing"

	"github.com/usbflash/usbflash/internal/failure"
	"github.com/usbflash/usbflash/internal/lib/windisk"
	"github.com/usbflash/usbflash/internal/testkit/winetest"
)

func TestListDisksWindows(t *testing.T) {
	disks, err := ListDisks(context.Background())
	if err != nil && winetest.Running() {
		t.Skipf("Wine has no physical drives to list (no disk device interfaces): %v", err)
	}
	if err != nil {
		t.Fatal(err)
	}
	for _, d := range disks {
		if d.System || !d.Whole || (d.Internal && !d.Removable) {
			t.Errorf("listed %+v", d)
		}
	}
}

// TestOpenDiskWindows: what names no physical drive is no disk: target;
// the system's drive is refused before anything is asked of the user (or
// of an administrator's rights). Under Wine, whose one drive
// (\\.\PhysicalDrive0, a SCSI disk the size of the host's) has volumes
// without extents, whether it is in use cannot be told, and it is refused
// for that (never forced here: Wine might pass the write to the host's
// disk); a drive it does not have is not found.
func TestOpenDiskWindows(t *testing.T) {
	for _, path := range []string{`C:\os.img`, `\\.\C:`, `\\.\PhysicalDrive`, "/dev/sdb"} {
		if _, err := openWindows(t, "disk:"+path, Options{}); failure.Of(err) != failure.Usage || !errors.Is(err, ErrNotADisk) {
			t.Errorf("disk:%s = %v, want ErrNotADisk", path, err)
		}
	}
	if winetest.Running() {
		if _, err := openWindows(t, `disk:\\.\PhysicalDrive0`, Options{}); failure.Of(err) != failure.Refused || !errors.Is(err, ErrInUseUnknown) {
			t.Errorf(`disk:\\.\PhysicalDrive0 under Wine = %v, want ErrInUseUnknown`, err)
		}
		if _, err := openWindows(t, `disk:\\.\PhysicalDrive9`, Options{}); failure.Of(err) != failure.Device || !errors.Is(err, ErrNotFound) {
			t.Errorf(`disk:\\.\PhysicalDrive9 under Wine = %v, want ErrNotFound`, err)
		}
		return
	}
	system, err := windisk.SystemDrives()
	if err != nil || len(system) == 0 {
		t.Fatalf("SystemDrives = %v, %v", system, err)
	}
	target := "disk:" + windisk.PhysicalDrivePath(system[0])
	if _, err := openWindows(t, target, Options{Force: true}); failure.Of(err) != failure.Refused || !errors.Is(err, ErrSystemDisk) {
		t.Errorf("%s (the system's) = %v, want ErrSystemDisk", target, err)
	}
}

// openWindows opens target as a write does.
func openWindows(t *testing.T, target string, opts Options) (*Device, error) {
	t.Helper()
	spec, err := Parse(target)
	if err != nil {
		return nil, err
	}
	d, err := Open(context.Background(), spec, opts)
	if err == nil {
		t.Cleanup(func() { d.Close() })
	}
	return d, err
}
