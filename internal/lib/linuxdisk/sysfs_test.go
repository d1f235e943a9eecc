package linuxdisk

import (
	"errors"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
)

// fakeSys builds a sysfs-like tree under t.TempDir() the way usb-storage
// lays it out: bus/usb/devices/1-2:1.0/host6/target6:0:0/6:0:0:0/block/sdb.
type fakeSys struct {
	t    *testing.T
	root string
	view Sys
}

func newFakeSys(t *testing.T) *fakeSys {
	t.Helper()
	root := t.TempDir()
	return &fakeSys{t: t, root: root, view: Sys{
		root:      filepath.Join(root, "sys"),
		mountInfo: filepath.Join(root, "mountinfo"),
		swaps:     filepath.Join(root, "swaps"),
	}}
}

func (f *fakeSys) write(rel, content string) {
	f.t.Helper()
	p := filepath.Join(f.view.root, rel)
	if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
		f.t.Fatal(err)
	}
	if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
		f.t.Fatal(err)
	}
}

// disk adds a SCSI disk behind interface iface (e.g. "1-2:1.0") and returns
// its directory relative to the sysfs root.
func (f *fakeSys) disk(iface, hctl, name, dev string, sectors string) string {
	host := "host" + strings.Split(hctl, ":")[0]
	target := "target" + strings.Join(strings.Split(hctl, ":")[:3], ":")
	lun := filepath.Join("bus/usb/devices", iface, host, target, hctl)
	f.write(filepath.Join(lun, "vendor"), "Generic \n")
	f.write(filepath.Join(lun, "model"), "STORAGE DEVICE  \n")
	dir := filepath.Join(lun, "block", name)
	f.write(filepath.Join(dir, "dev"), dev+"\n")
	f.write(filepath.Join(dir, "size"), sectors+"\n")
	return dir
}

func (f *fakeSys) part(diskDir, name, dev string) string {
	dir := filepath.Join(diskDir, name)
	f.write(filepath.Join(dir, "dev"), dev+"\n")
	f.write(filepath.Join(dir, "partition"), "1\n")
	f.write(filepath.Join(dir, "size"), "2048\n")
	return dir
}

func (f *fakeSys) holder(devDir, name, dev string) string {
	dir := filepath.Join(devDir, "holders", name)
	f.write(filepath.Join(dir, "dev"), dev+"\n")
	return dir
}

func (f *fakeSys) mounts(lines ...string) {
	f.t.Helper()
	if err := os.WriteFile(f.view.mountInfo, []byte(strings.Join(lines, "\n")+"\n"), 0o644); err != nil {
		f.t.Fatal(err)
	}
}

func (f *fakeSys) swapsFile(lines ...string) {
	f.t.Helper()
	content := "Filename\t\t\t\tType\t\tSize\t\tUsed\t\tPriority\n" + strings.Join(lines, "\n") + "\n"
	if err := os.WriteFile(f.view.swaps, []byte(content), 0o644); err != nil {
		f.t.Fatal(err)
	}
}

// mi renders a mountinfo line for a mount of source (dev major:minor) on mp.
func mi(dev, mp, fstype, source string) string {
	return "100 25 " + dev + " / " + mp + " rw,relatime shared:1 - " + fstype + " " + source + " rw"
}

// testIface is the sysfs name of the interface the tests look behind.
const testIface = "1-2:1.0"

func TestKernelDisks(t *testing.T) {
	rootMount := mi("8:1", "/", "ext4", "/dev/sda1")
	tests := []struct {
		name      string
		build     func(f *fakeSys)
		wantNames []string
		wantParts [][]string
		wantUses  []string // Use.String of every InUse, in order
	}{
		{
			name:  "no interface in sysfs (no kernel driver)",
			build: func(f *fakeSys) { f.mounts(rootMount) },
		},
		{
			name: "interface bound but no disk yet",
			build: func(f *fakeSys) {
				f.write("bus/usb/devices/1-2:1.0/bInterfaceClass", "08\n")
				f.mounts(rootMount)
			},
		},
		{
			name: "disk with partitions, nothing mounted",
			build: func(f *fakeSys) {
				d := f.disk("1-2:1.0", "6:0:0:0", "sdb", "8:16", "62521344")
				f.part(d, "sdb1", "8:17")
				f.part(d, "sdb2", "8:18")
				f.mounts(rootMount)
			},
			wantNames: []string{"sdb"},
			wantParts: [][]string{{"/dev/sdb1", "/dev/sdb2"}},
		},
		{
			name: "partition mounted, matched by major:minor",
			build: func(f *fakeSys) {
				d := f.disk("1-2:1.0", "6:0:0:0", "sdb", "8:16", "100")
				f.part(d, "sdb1", "8:17")
				f.mounts(rootMount, mi("8:17", "/media/u/BOOT", "vfat", "/dev/sdb1"))
			},
			wantNames: []string{"sdb"},
			wantParts: [][]string{{"/dev/sdb1"}},
			wantUses:  []string{"/dev/sdb1 is mounted on /media/u/BOOT"},
		},
		{
			name: "btrfs: anonymous major:minor, matched by source; escaped mount point",
			build: func(f *fakeSys) {
				d := f.disk("1-2:1.0", "6:0:0:0", "sdb", "8:16", "100")
				f.part(d, "sdb2", "8:18")
				f.mounts(rootMount, mi("0:45", `/media/u/my\040disk`, "btrfs", "/dev/sdb2"))
			},
			wantNames: []string{"sdb"},
			wantParts: [][]string{{"/dev/sdb2"}},
			wantUses:  []string{"/dev/sdb2 is mounted on /media/u/my disk"},
		},
		{
			name: "whole disk mounted without a partition table",
			build: func(f *fakeSys) {
				f.disk("1-2:1.0", "6:0:0:0", "sdb", "8:16", "100")
				f.mounts(rootMount, mi("8:16", "/mnt", "ext4", "/dev/sdb"))
			},
			wantNames: []string{"sdb"},
			wantUses:  []string{"/dev/sdb is mounted on /mnt"},
		},
		{
			name: "LUKS on a partition, mounted through dm-0",
			build: func(f *fakeSys) {
				d := f.disk("1-2:1.0", "6:0:0:0", "sdb", "8:16", "100")
				p := f.part(d, "sdb1", "8:17")
				f.holder(p, "dm-0", "254:0")
				f.mounts(rootMount, mi("254:0", "/secret", "ext4", "/dev/mapper/luks-1"))
			},
			wantNames: []string{"sdb"},
			wantParts: [][]string{{"/dev/sdb1"}},
			wantUses:  []string{"/dev/dm-0 (on /dev/sdb1) is mounted on /secret"},
		},
		{
			name: "held by an open mapping that is not mounted",
			build: func(f *fakeSys) {
				d := f.disk("1-2:1.0", "6:0:0:0", "sdb", "8:16", "100")
				p := f.part(d, "sdb1", "8:17")
				f.holder(p, "dm-3", "254:3")
				f.mounts(rootMount)
			},
			wantNames: []string{"sdb"},
			wantParts: [][]string{{"/dev/sdb1"}},
			wantUses:  []string{"/dev/sdb1 is held by dm-3"},
		},
		{
			name: "swap partition",
			build: func(f *fakeSys) {
				d := f.disk("1-2:1.0", "6:0:0:0", "sdb", "8:16", "100")
				f.part(d, "sdb2", "8:18")
				f.mounts(rootMount)
				f.swapsFile("/dev/sdb2                               partition\t1048572\t\t0\t\t-2")
			},
			wantNames: []string{"sdb"},
			wantParts: [][]string{{"/dev/sdb2"}},
			wantUses:  []string{"/dev/sdb2 is active swap"},
		},
		{
			name: "multi-slot reader: LUNs sorted, other interface ignored",
			build: func(f *fakeSys) {
				f.disk("1-2:1.0", "6:0:0:1", "sdc", "8:32", "0")
				f.disk("1-2:1.0", "6:0:0:0", "sdb", "8:16", "100")
				f.disk("1-2:1.1", "7:0:0:0", "sdd", "8:48", "100")
				f.mounts(rootMount, mi("8:48", "/other", "vfat", "/dev/sdd"))
			},
			wantNames: []string{"sdb", "sdc"},
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			f := newFakeSys(t)
			tc.build(f)
			disks, err := f.view.InterfaceDisks(testIface)
			if err != nil {
				t.Fatalf("disks: %v", err)
			}
			var names []string
			var parts [][]string
			var uses []string
			for _, d := range disks {
				names = append(names, d.Name)
				if d.Partitions != nil {
					parts = append(parts, d.Partitions)
				}
				for _, u := range d.InUse {
					uses = append(uses, u.String())
				}
			}
			if !reflect.DeepEqual(names, tc.wantNames) {
				t.Errorf("names = %q, want %q", names, tc.wantNames)
			}
			if !reflect.DeepEqual(parts, tc.wantParts) {
				t.Errorf("partitions = %q, want %q", parts, tc.wantParts)
			}
			if !reflect.DeepEqual(uses, tc.wantUses) {
				t.Errorf("uses = %q, want %q", uses, tc.wantUses)
			}
			err = CheckDisks("usb:46f4:0001", disks)
			if (len(tc.wantUses) > 0) != errors.Is(err, ErrInUse) {
				t.Errorf("CheckDisks = %v, want ErrInUse: %v", err, len(tc.wantUses) > 0)
			}
			if err != nil {
				for _, u := range tc.wantUses {
					if !strings.Contains(err.Error(), u) {
						t.Errorf("error %q does not say %q", err, u)
					}
				}
				if !strings.Contains(err.Error(), "usb:46f4:0001") {
					t.Errorf("error %q should name the device", err)
				}
			}
		})
	}
}

func TestKernelDiskAttributes(t *testing.T) {
	f := newFakeSys(t)
	f.disk("1-2:1.0", "6:0:0:2", "sdb", "8:16", "62521344")
	f.mounts(mi("8:1", "/", "ext4", "/dev/sda1"))
	disks, err := f.view.InterfaceDisks(testIface)
	if err != nil || len(disks) != 1 {
		t.Fatalf("disks = %v, %v", disks, err)
	}
	want := Disk{Name: "sdb", Node: "/dev/sdb", HCTL: "6:0:0:2", LUN: 2, Size: 62521344 * 512,
		Vendor: "Generic", Model: "STORAGE DEVICE", Devs: []string{"8:16"}}
	if !reflect.DeepEqual(disks[0], want) {
		t.Errorf("disk = %+v\nwant   %+v", disks[0], want)
	}
}

// A mount table that cannot be read must not be taken as "nothing mounted".
func TestInterfaceDisksFailsClosed(t *testing.T) {
	f := newFakeSys(t)
	f.disk("1-2:1.0", "6:0:0:0", "sdb", "8:16", "100")
	// no mountinfo file written
	_, err := f.view.InterfaceDisks(testIface)
	if err == nil || errors.Is(err, ErrInUse) || !strings.Contains(err.Error(), "mount table") {
		t.Fatalf("InterfaceDisks = %v, want an error saying the mount table could not be read", err)
	}
}

func TestUSBStrings(t *testing.T) {
	f := newFakeSys(t)
	f.write("bus/usb/devices/1-2/idVendor", "46f4\n")
	f.write("bus/usb/devices/1-2/product", "QEMU USB HARDDRIVE\n")
	tests := []struct {
		port, attr, want string
		known            bool
	}{
		{"1-2", "product", "QEMU USB HARDDRIVE", true},
		{"1-2", "serial", "", true},   // device known, no serial string
		{"1-3", "product", "", false}, // device unknown to sysfs: ask the device
	}
	for _, tc := range tests {
		got, known := f.view.USBString(tc.port, tc.attr)
		if got != tc.want || known != tc.known {
			t.Errorf("USBString(%s, %s) = %q, %v; want %q, %v", tc.port, tc.attr, got, known, tc.want, tc.known)
		}
	}
}

// blockDev adds a block device at rel (relative to the sysfs root) and
// its /sys/dev/block/MAJ:MIN link, as the kernel does for every disk,
// partition, loop and dm device.
func (f *fakeSys) blockDev(rel, dev string, partition bool) string {
	f.t.Helper()
	f.write(filepath.Join(rel, "dev"), dev+"\n")
	f.write(filepath.Join(rel, "size"), "2048\n")
	if partition {
		f.write(filepath.Join(rel, "partition"), "1\n")
	}
	link := filepath.Join(f.view.root, "dev", "block", dev)
	if err := os.MkdirAll(filepath.Dir(link), 0o755); err != nil {
		f.t.Fatal(err)
	}
	if err := os.Symlink(filepath.Join(f.view.root, rel), link); err != nil {
		f.t.Fatal(err)
	}
	return rel
}

func TestCheckBlockDevice(t *testing.T) {
	tests := []struct {
		name     string
		build    func(f *fakeSys)
		node     string
		dev      string
		wantUses []string // nil: free
		wantDevs []string
	}{
		{
			name: "free loop device",
			build: func(f *fakeSys) {
				f.blockDev("devices/virtual/block/loop0", "7:0", false)
				f.mounts(mi("8:1", "/", "ext4", "/dev/sda1"))
			},
			node: "/dev/loop0", dev: "7:0", wantDevs: []string{"7:0"},
		},
		{
			name: "loop device as active swap",
			build: func(f *fakeSys) {
				f.blockDev("devices/virtual/block/loop0", "7:0", false)
				f.mounts(mi("8:1", "/", "ext4", "/dev/sda1"))
				f.swapsFile("/dev/loop0                              partition\t8188\t\t0\t\t-2")
			},
			node: "/dev/loop0", dev: "7:0",
			wantUses: []string{"/dev/loop0 is active swap"}, wantDevs: []string{"7:0"},
		},
		{
			name: "swap file is not the device",
			build: func(f *fakeSys) {
				f.blockDev("devices/virtual/block/loop0", "7:0", false)
				f.mounts()
				f.swapsFile("/loop0 file 1000 0 -3")
			},
			node: "/dev/loop0", dev: "7:0", wantDevs: []string{"7:0"},
		},
		{
			name: "disk with a mounted partition",
			build: func(f *fakeSys) {
				f.blockDev("devices/pci/host0/block/sdx", "8:16", false)
				f.blockDev("devices/pci/host0/block/sdx/sdx1", "8:17", true)
				f.blockDev("devices/pci/host0/block/sdx/sdx2", "8:18", true)
				f.mounts(mi("8:18", "/mnt", "ext4", "/dev/sdx2"))
			},
			node: "/dev/sdx", dev: "8:16",
			wantUses: []string{"/dev/sdx2 is mounted on /mnt"}, wantDevs: []string{"8:16", "8:17", "8:18"},
		},
		{
			name: "a partition beside the mounted one is free",
			build: func(f *fakeSys) {
				f.blockDev("devices/pci/host0/block/sdx", "8:16", false)
				f.blockDev("devices/pci/host0/block/sdx/sdx1", "8:17", true)
				f.blockDev("devices/pci/host0/block/sdx/sdx2", "8:18", true)
				f.mounts(mi("8:18", "/mnt", "ext4", "/dev/sdx2"))
			},
			node: "/dev/sdx1", dev: "8:17", wantDevs: []string{"8:17"},
		},
		{
			name: "partition held by an open dm mapping",
			build: func(f *fakeSys) {
				f.blockDev("devices/pci/host0/block/sdx", "8:16", false)
				p := f.blockDev("devices/pci/host0/block/sdx/sdx1", "8:17", true)
				f.holder(p, "dm-0", "254:0")
				f.mounts()
			},
			node: "/dev/sdx", dev: "8:16",
			wantUses: []string{"/dev/sdx1 is held by dm-0"}, wantDevs: []string{"8:16", "8:17"},
		},
		{
			name: "whole disk in an md array",
			build: func(f *fakeSys) {
				d := f.blockDev("devices/pci/host0/block/sdx", "8:16", false)
				f.holder(d, "md0", "9:0")
				f.mounts(mi("9:0", "/srv", "xfs", "/dev/md0"))
			},
			node: "/dev/sdx", dev: "8:16",
			wantUses: []string{"/dev/md0 (on /dev/sdx) is mounted on /srv"}, wantDevs: []string{"8:16"},
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			f := newFakeSys(t)
			tc.build(f)
			d, err := f.view.BlockDevice(tc.dev)
			if err != nil {
				t.Fatal(err)
			}
			if !reflect.DeepEqual(d.Devs, tc.wantDevs) {
				t.Errorf("Devs = %q, want %q", d.Devs, tc.wantDevs)
			}
			err = f.view.CheckBlockDevice(tc.node, tc.dev)
			if (tc.wantUses != nil) != errors.Is(err, ErrInUse) {
				t.Fatalf("CheckBlockDevice = %v, want in use: %v", err, tc.wantUses != nil)
			}
			var inUse *InUseError
			if tc.wantUses == nil {
				return
			}
			if !errors.As(err, &inUse) {
				t.Fatalf("error %T is not an *InUseError", err)
			}
			var got []string
			for _, u := range inUse.Uses {
				got = append(got, u.String())
			}
			if !reflect.DeepEqual(got, tc.wantUses) {
				t.Errorf("uses = %q, want %q", got, tc.wantUses)
			}
			if !strings.HasPrefix(err.Error(), tc.node+" is in use: ") {
				t.Errorf("error %q does not start by naming %s", err, tc.node)
			}
		})
	}
}

// A device sysfs does not know, or a mount table that cannot be read, is
// an error, never a free disk.
func TestCheckBlockDeviceFailsClosed(t *testing.T) {
	f := newFakeSys(t)
	f.mounts()
	if err := f.view.CheckBlockDevice("/dev/loop9", "7:9"); err == nil || errors.Is(err, ErrInUse) {
		t.Errorf("unknown device: %v, want an error that is not ErrInUse", err)
	}
	f.blockDev("devices/virtual/block/loop0", "7:0", false)
	if err := os.Remove(f.view.mountInfo); err != nil {
		t.Fatal(err)
	}
	if err := f.view.CheckBlockDevice("/dev/loop0", "7:0"); err == nil || errors.Is(err, ErrInUse) {
		t.Errorf("no mount table: %v, want an error that is not ErrInUse", err)
	}
}

func TestDevNumber(t *testing.T) {
	for _, tc := range []struct {
		dev  uint64
		want string
	}{
		{0x0810, "8:16"},
		{0x0700, "7:0"},
		{0xfe00, "254:0"},
		{0x10010301, "259:65537"},            // minor past 255: its high bits from bit 20
		{0xff000ffff07ff, "1048327:1048575"}, // major past 4095: its high bits from bit 44
	} {
		if got := DevNumber(tc.dev); got != tc.want {
			t.Errorf("DevNumber(%#x) = %s, want %s", tc.dev, got, tc.want)
		}
	}
}
