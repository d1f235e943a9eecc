package linuxdisk

import (
	"errors"
	"os"
	"path/filepath"
	"testing"
)

// wholeDisk adds a disk at devices/PATH/block/NAME, linked from block/NAME
// and dev/block/DEV as the kernel links them, and returns its directory.
func (f *fakeSys) wholeDisk(path, name, dev, sectors, removable string) string {
	f.t.Helper()
	dir := filepath.Join("devices", path, "block", name)
	f.write(filepath.Join(dir, "dev"), dev+"\n")
	f.write(filepath.Join(dir, "size"), sectors+"\n")
	f.write(filepath.Join(dir, "removable"), removable+"\n")
	f.link(filepath.Join("block", name), dir)
	f.link(filepath.Join("dev", "block", dev), dir)
	return dir
}

func (f *fakeSys) link(rel, target string) {
	f.t.Helper()
	p := filepath.Join(f.view.root, rel)
	if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
		f.t.Fatal(err)
	}
	if err := os.Symlink(filepath.Join(f.view.root, target), p); err != nil {
		f.t.Fatal(err)
	}
}

func TestWholeDisks(t *testing.T) {
	f := newFakeSys(t)
	nvme := f.wholeDisk("pci0000:00/0000:00:1d.0/0000:3d:00.0/nvme/nvme0", "nvme0n1", "259:0", "1000215216", "0")
	root := f.part(nvme, "nvme0n1p2", "259:2")
	f.link("dev/block/259:2", root)
	usb := f.wholeDisk("pci0000:00/0000:00:14.0/usb2/2-1/2-1:1.0/host6/target6:0:0/6:0:0:0", "sdb", "8:16", "62521344", "1")
	f.write(filepath.Join(usb, "device", "vendor"), "Generic \n")
	f.write(filepath.Join(usb, "device", "model"), "STORAGE DEVICE  \n")
	boot := f.part(usb, "sdb1", "8:17")
	f.link("dev/block/8:17", boot)
	sd := f.wholeDisk("platform/fe340000.mmc/mmc_host/mmc0/mmc0:aaaa", "mmcblk0", "179:0", "31116288", "0")
	f.write(filepath.Join(sd, "device", "name"), "SC32G\n")
	f.wholeDisk("virtual", "loop0", "7:0", "2048", "0")
	f.wholeDisk("virtual", "zram0", "252:0", "8388608", "0")
	f.mounts(
		"29 1 259:2 / / rw,relatime shared:1 - ext4 /dev/nvme0n1p2 rw",
		"40 29 8:17 / /media/pi/bootfs rw,relatime shared:2 - vfat /dev/sdb1 rw",
	)
	f.swapsFile()
	disks, err := f.view.WholeDisks()
	if err != nil {
		t.Fatal(err)
	}
	type row struct {
		name, bus, vendor, model string
		size                     int64
		removable, system        bool
		uses                     int
	}
	var got []row
	for _, d := range disks {
		got = append(got, row{d.Name, d.Bus, d.Vendor, d.Model, d.Size, d.Removable, d.System, len(d.InUse)})
	}
	want := []row{
		{"mmcblk0", "SD", "", "SC32G", 31116288 * 512, false, false, 0},
		{"nvme0n1", "NVMe", "", "", 1000215216 * 512, false, true, 1},
		{"sdb", "USB", "Generic", "STORAGE DEVICE", 62521344 * 512, true, false, 1},
	}
	if len(got) != len(want) {
		t.Fatalf("WholeDisks = %+v, want %+v", got, want)
	}
	for i := range want {
		if got[i] != want[i] {
			t.Errorf("disk %d = %+v, want %+v", i, got[i], want[i])
		}
	}

	d, err := f.view.DescribeWhole("/dev/sdb", "8:16")
	if err != nil || d.Name != "sdb" || d.Bus != "USB" || !d.Removable || len(d.Partitions) != 1 {
		t.Errorf("DescribeWhole(sdb) = %+v, %v", d, err)
	}
	_, err = f.view.DescribeWhole("/dev/sdb1", "8:17")
	var pe *PartitionError
	if !errors.As(err, &pe) || pe.Disk != "/dev/sdb" || err.Error() != "/dev/sdb1 is a partition of /dev/sdb, not a whole disk" {
		t.Errorf("DescribeWhole(sdb1) = %v", err)
	}
	if d, err := f.view.DescribeWhole("/dev/loop0", "7:0"); err != nil || d.Bus != "loop" {
		t.Errorf("DescribeWhole(loop0) = %+v, %v", d, err)
	}
	if _, err := f.view.DescribeWhole("/dev/sdz", "8:240"); err == nil {
		t.Error("a device sysfs does not know was described")
	}
}
