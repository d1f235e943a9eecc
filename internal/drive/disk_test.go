package drive

import (
	"errors"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"github.com/usbflash/usbflash/internal/failure"
	"github.com/usbflash/usbflash/internal/lib/diskutil"
	"github.com/usbflash/usbflash/internal/lib/linuxdisk"
	"github.com/usbflash/usbflash/internal/lib/windisk"
	"github.com/usbflash/usbflash/internal/testkit/scratch"
)

// TestJudgeDisk is the one decision every system's disk: open makes.
func TestJudgeDisk(t *testing.T) {
	mnt := scratch.Dir(t)
	image := filepath.Join(mnt, "os.img")
	if err := os.WriteFile(image, []byte("image"), 0o644); err != nil {
		t.Fatal(err)
	}
	card := WholeDisk{Name: "Generic- SD/MMC", Bus: "USB", Size: 31914983424, Whole: true, Removable: true,
		Volumes: []Volume{{Node: "/dev/disk4s1", MountPoint: "/Volumes/bootfs"}}}
	with := func(f func(*WholeDisk)) WholeDisk { d := card; f(&d); return d }
	tests := []struct {
		name  string
		disk  WholeDisk
		opts  Options
		class failure.Class
		kind  error
		say   string
	}{
		{"a card", card, Options{}, failure.Unknown, nil, ""},
		{"a card, mounted: the system's open unmounts it", card, Options{Image: "/elsewhere/os.img"}, failure.Unknown, nil, ""},
		{"a partition", with(func(d *WholeDisk) { d.Whole = false }), Options{}, failure.Usage, ErrNotWholeDisk, "is a partition, not a whole disk"},
		{"a partition, even to read", with(func(d *WholeDisk) { d.Whole = false }), Options{ReadOnly: true}, failure.Usage, ErrNotWholeDisk, "partition"},
		{"the system's disk", with(func(d *WholeDisk) { d.System, d.Internal, d.Removable = true, true, false }), Options{}, failure.Refused, ErrSystemDisk, "holds the running system's volume; nothing was written"},
		{"the system's disk, forced", with(func(d *WholeDisk) { d.System = true }), Options{Force: true}, failure.Refused, ErrSystemDisk, "running system"},
		{"the system's disk, read", with(func(d *WholeDisk) { d.System = true }), Options{ReadOnly: true}, failure.Unknown, nil, ""},
		{"an internal disk", with(func(d *WholeDisk) { d.Internal, d.Removable, d.Bus = true, false, "SATA" }), Options{}, failure.Refused, ErrInternalDisk, "is an internal disk"},
		{"an internal disk, forced", with(func(d *WholeDisk) { d.Internal, d.Removable = true, false }), Options{Force: true}, failure.Unknown, nil, ""},
		{"an internal card slot", with(func(d *WholeDisk) { d.Internal = true }), Options{}, failure.Unknown, nil, ""},
		{"the image on its volume", with(func(d *WholeDisk) { d.Volumes = []Volume{{Node: "/dev/sdb1", MountPoint: mnt}} }), Options{Image: image},
			failure.Refused, ErrIsImage, "the image " + image + " lies on"},
		{"the image on its volume, forced", with(func(d *WholeDisk) { d.Volumes = []Volume{{Node: "/dev/sdb1", MountPoint: mnt}} }), Options{Image: image, Force: true},
			failure.Refused, ErrIsImage, "refusing to overwrite the image"},
		{"the image beside its volume's mount point", with(func(d *WholeDisk) { d.Volumes = []Volume{{MountPoint: filepath.Join(mnt, "sub")}} }), Options{Image: image}, failure.Unknown, nil, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := judgeDisk(Spec{Scheme: Disk, Raw: "disk:/dev/rdisk4"}, tt.disk, tt.opts)
			if tt.kind == nil {
				if err != nil {
					t.Fatalf("judgeDisk = %v, want nil", err)
				}
				return
			}
			if failure.Of(err) != tt.class || !errors.Is(err, tt.kind) || !strings.Contains(err.Error(), tt.say) {
				t.Errorf("judgeDisk = %v (class %v), want class %v, kind %v, saying %q", err, failure.Of(err), tt.class, tt.kind, tt.say)
			}
		})
	}
}

func TestListed(t *testing.T) {
	for _, tt := range []struct {
		d    WholeDisk
		want bool
	}{
		{WholeDisk{Whole: true}, true},
		{WholeDisk{Whole: true, Internal: true}, false},
		{WholeDisk{Whole: true, Internal: true, Removable: true}, true},
		{WholeDisk{Whole: true, System: true}, false},
		{WholeDisk{Whole: false}, false},
	} {
		if got := tt.d.Listed(); got != tt.want {
			t.Errorf("%+v.Listed() = %v", tt.d, got)
		}
	}
	if !lessNode("/dev/rdisk4", "/dev/rdisk10") || lessNode(`\\.\PhysicalDrive10`, `\\.\PhysicalDrive9`) {
		t.Error("nodes not in counting order")
	}
}

func macTestdata(t *testing.T, name string) []byte {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("..", "lib", "diskutil", "testdata", name))
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// TestDiskFromMac reads the disks of diskutil's outputs (reconstructed,
// see internal/lib/diskutil/testdata) and judges them as a write would.
func TestDiskFromMac(t *testing.T) {
	all, err := diskutil.ParseList(macTestdata(t, "list_all.plist"))
	if err != nil {
		t.Fatal(err)
	}
	root, err := diskutil.ParseInfo(macTestdata(t, "info_root.plist"))
	if err != nil {
		t.Fatal(err)
	}
	boot := diskutil.BootDisks(root)
	tests := []struct {
		file   string
		want   WholeDisk
		listed bool
		kind   error // judgeDisk's for a write
	}{
		{"info_disk4.plist", WholeDisk{Target: "disk:/dev/rdisk4", Node: "/dev/rdisk4", Name: "Generic- SD/MMC", Bus: "USB", Size: 31914983424, BlockSize: 512,
			Whole: true, Removable: true, Volumes: []Volume{{Node: "/dev/disk4s1", MountPoint: "/Volumes/bootfs"}}}, true, nil},
		{"info_disk5.plist", WholeDisk{Target: "disk:/dev/rdisk5", Node: "/dev/rdisk5", Name: "SDXC Reader", Bus: "Secure Digital", Size: 15931539456, BlockSize: 512,
			Whole: true, Internal: true, Removable: true, Volumes: []Volume{{Node: "/dev/disk5s1", MountPoint: "/Volumes/NO NAME"}}}, true, nil},
		{"info_disk6.plist", WholeDisk{Target: "disk:/dev/rdisk6", Node: "/dev/rdisk6", Name: "Samsung Portable SSD T7", Bus: "USB", Size: 1000204886016, BlockSize: 512,
			Whole: true, Volumes: []Volume{{Node: "/dev/disk7s1", MountPoint: "/Volumes/Backup"}}}, true, nil},
		{"info_disk0.plist", WholeDisk{Target: "disk:/dev/rdisk0", Node: "/dev/rdisk0", Name: "APPLE SSD AP0512Z", Bus: "Apple Fabric", Size: 500277790720, BlockSize: 4096,
			Whole: true, Internal: true, System: true, Volumes: []Volume{{Node: "/dev/disk3s5", MountPoint: "/System/Volumes/Data"}, {Node: "/dev/disk3s6", MountPoint: "/System/Volumes/VM"}}}, false, ErrSystemDisk},
		{"info_disk4s1.plist", WholeDisk{Target: "disk:/dev/rdisk4s1", Node: "/dev/rdisk4s1", Name: "bootfs", Bus: "USB", Size: 536870912, BlockSize: 512,
			Removable: true, Volumes: []Volume{{Node: "/dev/disk4s1", MountPoint: "/Volumes/bootfs"}}}, false, ErrNotWholeDisk},
	}
	for _, tt := range tests {
		t.Run(tt.file, func(t *testing.T) {
			info, err := diskutil.ParseInfo(macTestdata(t, tt.file))
			if err != nil {
				t.Fatal(err)
			}
			got := diskFromMac(info, boot, all)
			if !reflect.DeepEqual(got, tt.want) {
				t.Errorf("diskFromMac =\n%+v\nwant\n%+v", got, tt.want)
			}
			if got.Listed() != tt.listed {
				t.Errorf("Listed = %v", got.Listed())
			}
			err = judgeDisk(Spec{Scheme: Disk, Raw: got.Target}, got, Options{Image: "/Users/pi/os.img"})
			if (tt.kind == nil) != (err == nil) || (tt.kind != nil && !errors.Is(err, tt.kind)) {
				t.Errorf("judgeDisk = %v, want %v", err, tt.kind)
			}
		})
	}
	// The image on the card's own volume, a macOS path: judged where
	// paths are macOS's (a Windows path has a drive letter).
	if filepath.Separator != '/' {
		return
	}
	info, _ := diskutil.ParseInfo(macTestdata(t, "info_disk4.plist"))
	d := diskFromMac(info, boot, all)
	if err := judgeDisk(Spec{Scheme: Disk, Raw: d.Target}, d, Options{Image: "/Volumes/bootfs/os.img"}); !errors.Is(err, ErrIsImage) {
		t.Errorf("the image on the card's volume: %v", err)
	}
}

func TestDiskFromWindows(t *testing.T) {
	reader := windisk.Drive{Number: 2, Path: `\\.\PhysicalDrive2`,
		Descriptor: windisk.Descriptor{Bus: windisk.BusUSB, Removable: true, Vendor: "Generic", Product: "STORAGE DEVICE"},
		Geometry:   windisk.Geometry{BytesPerSector: 512, Size: 31914983424, RemovableMedia: true}}
	ssd := windisk.Drive{Number: 0, Path: `\\.\PhysicalDrive0`,
		Descriptor: windisk.Descriptor{Bus: windisk.BusNVMe, Vendor: "NVMe", Product: "Samsung SSD 980"},
		Geometry:   windisk.Geometry{BytesPerSector: 512, Size: 1000204886016}}
	sata := windisk.Drive{Number: 1, Path: `\\.\PhysicalDrive1`, Descriptor: windisk.Descriptor{Bus: windisk.BusSATA, Product: "WDC WD20EZAZ"},
		Geometry: windisk.Geometry{BytesPerSector: 4096, Size: 2000398934016}}
	vols := []windisk.Volume{
		{Name: `\\?\Volume{1}\`, Paths: []string{`C:\`}, Disks: []uint32{0}},
		{Name: `\\?\Volume{2}\`, Paths: []string{`E:\`}, Disks: []uint32{2}},
		{Name: `\\?\Volume{3}\`, Disks: []uint32{2}}, // no letter: still Windows's
		{Name: `\\?\Volume{4}\`, Paths: []string{`D:\`}, Disks: []uint32{1}},
	}
	system := []uint32{0}
	got := diskFromWindows(reader, vols, system)
	want := WholeDisk{Target: `disk:\\.\PhysicalDrive2`, Node: `\\.\PhysicalDrive2`, Name: "Generic STORAGE DEVICE", Bus: "USB",
		Size: 31914983424, BlockSize: 512, Whole: true, Removable: true,
		Volumes: []Volume{{Node: `\\?\Volume{2}\`, MountPoint: `E:\`}, {Node: `\\?\Volume{3}\`}}}
	if !reflect.DeepEqual(got, want) || !got.Listed() {
		t.Errorf("the reader =\n%+v\nwant\n%+v", got, want)
	}
	if d := diskFromWindows(ssd, vols, system); !d.System || !d.Internal || d.Listed() || !errors.Is(judgeDisk(Spec{Raw: d.Target}, d, Options{Force: true}), ErrSystemDisk) {
		t.Errorf("the system's SSD: %+v", d)
	}
	if d := diskFromWindows(sata, vols, system); d.System || !d.Internal || d.Listed() || !errors.Is(judgeDisk(Spec{Raw: d.Target}, d, Options{}), ErrInternalDisk) {
		t.Errorf("a second internal disk: %+v", d)
	}
}

func TestDiskFromLinux(t *testing.T) {
	usb := linuxdisk.WholeDisk{Disk: linuxdisk.Disk{Name: "sdb", Node: "/dev/sdb", Size: 32 << 30, Vendor: "Generic", Model: "STORAGE DEVICE",
		InUse: []linuxdisk.Use{{Kind: linuxdisk.Mounted, Node: "/dev/sdb1", Of: "/dev/sdb1", MountPoint: "/media/pi/bootfs"}, {Kind: linuxdisk.Swap, Node: "/dev/sdb2"}}},
		Removable: true, Bus: "USB"}
	want := WholeDisk{Target: "disk:/dev/sdb", Node: "/dev/sdb", Name: "Generic STORAGE DEVICE", Bus: "USB", Size: 32 << 30, Whole: true, Removable: true,
		Volumes: []Volume{{Node: "/dev/sdb1", MountPoint: "/media/pi/bootfs"}}}
	if got := diskFromLinux(usb); !reflect.DeepEqual(got, want) {
		t.Errorf("diskFromLinux =\n%+v\nwant\n%+v", got, want)
	}
	for _, tt := range []struct {
		bus       string
		removable bool
		internal  bool
	}{{"SATA", false, true}, {"NVMe", false, true}, {"SATA", true, false}, {"USB", false, false}, {"SD", false, false}, {"loop", false, false},
		{"virtio", false, true}, {"SCSI", false, true}, {"", false, true}} {
		if got := diskFromLinux(linuxdisk.WholeDisk{Bus: tt.bus, Removable: tt.removable}).Internal; got != tt.internal {
			t.Errorf("bus %q removable %v: Internal %v", tt.bus, tt.removable, got)
		}
	}
}
