package libusb

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
	view sysView
}

func newFakeSys(t *testing.T) *fakeSys {
	t.Helper()
	root := t.TempDir()
	return &fakeSys{t: t, root: root, view: sysView{
		sysRoot:   filepath.Join(root, "sys"),
		mountInfo: filepath.Join(root, "mountinfo"),
		swaps:     filepath.Join(root, "swaps"),
	}}
}

func (f *fakeSys) write(rel, content string) {
	f.t.Helper()
	p := filepath.Join(f.view.sysRoot, rel)
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

var testInfo = Info{Bus: 1, Address: 7, Port: []int{2}, PortPath: "1-2", VID: 0x46f4, PID: 0x0001,
	Config: 1, Interface: 0, Supported: true}

func TestKernelDisks(t *testing.T) {
	rootMount := mi("8:1", "/", "ext4", "/dev/sda1")
	tests := []struct {
		name      string
		build     func(f *fakeSys)
		wantNames []string
		wantParts [][]string
		wantUses  []string // describeUse of every InUse, in order
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
			wantUses:  []string{"/dev/sdb1 is mounted on /media/u/BOOT (run: umount /media/u/BOOT)"},
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
			wantUses:  []string{`/dev/sdb2 is mounted on /media/u/my disk (run: umount "/media/u/my disk")`},
		},
		{
			name: "whole disk mounted without a partition table",
			build: func(f *fakeSys) {
				f.disk("1-2:1.0", "6:0:0:0", "sdb", "8:16", "100")
				f.mounts(rootMount, mi("8:16", "/mnt", "ext4", "/dev/sdb"))
			},
			wantNames: []string{"sdb"},
			wantUses:  []string{"/dev/sdb is mounted on /mnt (run: umount /mnt)"},
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
			wantUses:  []string{"/dev/dm-0 (on /dev/sdb1) is mounted on /secret (run: umount /secret)"},
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
			wantUses:  []string{"/dev/sdb1 is held by /dev/dm-3, an open dm-crypt, LVM or RAID device: close it first"},
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
			wantUses:  []string{"/dev/sdb2 is in use as swap (run: swapoff /dev/sdb2)"},
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
			disks, err := f.view.disks(testInfo)
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
			err = f.view.checkNotInUse(testInfo)
			if (len(tc.wantUses) > 0) != errors.Is(err, ErrMounted) {
				t.Errorf("checkNotInUse = %v, want ErrMounted: %v", err, len(tc.wantUses) > 0)
			}
			if err != nil {
				for _, u := range tc.wantUses {
					if !strings.Contains(err.Error(), u) {
						t.Errorf("error %q does not say %q", err, u)
					}
				}
				if !strings.Contains(err.Error(), "--force") || !strings.Contains(err.Error(), "46f4:0001") {
					t.Errorf("error %q should name the device and mention --force", err)
				}
			}
		})
	}
}

func TestKernelDiskAttributes(t *testing.T) {
	f := newFakeSys(t)
	f.disk("1-2:1.0", "6:0:0:2", "sdb", "8:16", "62521344")
	f.mounts(mi("8:1", "/", "ext4", "/dev/sda1"))
	disks, err := f.view.disks(testInfo)
	if err != nil || len(disks) != 1 {
		t.Fatalf("disks = %v, %v", disks, err)
	}
	want := KernelDisk{Name: "sdb", Node: "/dev/sdb", HCTL: "6:0:0:2", LUN: 2, Size: 62521344 * 512,
		Vendor: "Generic", Model: "STORAGE DEVICE"}
	if !reflect.DeepEqual(disks[0], want) {
		t.Errorf("disk = %+v\nwant   %+v", disks[0], want)
	}
}

// A mount table that cannot be read must not be taken as "nothing mounted".
func TestCheckNotInUseFailsClosed(t *testing.T) {
	f := newFakeSys(t)
	f.disk("1-2:1.0", "6:0:0:0", "sdb", "8:16", "100")
	// no mountinfo file written
	err := f.view.checkNotInUse(testInfo)
	if err == nil || !strings.Contains(err.Error(), "--force") {
		t.Fatalf("checkNotInUse = %v, want an error suggesting --force", err)
	}
}

func TestSysfsStrings(t *testing.T) {
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
		got, known := f.view.sysfsString(tc.port, tc.attr)
		if got != tc.want || known != tc.known {
			t.Errorf("sysfsString(%s, %s) = %q, %v; want %q, %v", tc.port, tc.attr, got, known, tc.want, tc.known)
		}
	}
}
