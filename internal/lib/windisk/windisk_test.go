package windisk

import (
	"encoding/binary"
	"reflect"
	"testing"
)

// TestControlCodes makes each control code again from the arguments the
// Windows SDK's headers give CTL_CODE (winioctl.h: FILE_DEVICE_DISK 7,
// FILE_DEVICE_FILE_SYSTEM 9, IOCTL_STORAGE_BASE FILE_DEVICE_MASS_STORAGE
// 0x2d, IOCTL_VOLUME_BASE 'V'; METHOD_BUFFERED 0; FILE_ANY_ACCESS 0,
// FILE_READ_ACCESS 1, FILE_WRITE_ACCESS 2) and holds it to the number the
// constant states, which is the one the SDK's headers expand to.
func TestControlCodes(t *testing.T) {
	const (
		disk, fs, storage, volume = 7, 9, 0x2d, 'V'
		buffered                  = 0
		anyAccess, read, write    = 0, 1, 2
	)
	tests := []struct {
		name                    string
		got                     uint32
		dev, fn, method, access uint32
	}{
		{"IOCTL_STORAGE_QUERY_PROPERTY", IoctlStorageQueryProperty, storage, 0x0500, buffered, anyAccess},
		{"IOCTL_STORAGE_GET_DEVICE_NUMBER", IoctlStorageGetDeviceNumber, storage, 0x0420, buffered, anyAccess},
		{"IOCTL_STORAGE_EJECT_MEDIA", IoctlStorageEjectMedia, storage, 0x0202, buffered, read},
		{"IOCTL_DISK_GET_DRIVE_GEOMETRY_EX", IoctlDiskGetDriveGeometryEx, disk, 0x0028, buffered, anyAccess},
		{"IOCTL_DISK_IS_WRITABLE", IoctlDiskIsWritable, disk, 0x0009, buffered, anyAccess},
		{"IOCTL_DISK_DELETE_DRIVE_LAYOUT", IoctlDiskDeleteDriveLayout, disk, 0x0040, buffered, read | write},
		{"IOCTL_DISK_UPDATE_PROPERTIES", IoctlDiskUpdateProperties, disk, 0x0050, buffered, anyAccess},
		{"IOCTL_VOLUME_GET_VOLUME_DISK_EXTENTS", IoctlVolumeGetVolumeDiskExtents, volume, 0, buffered, anyAccess},
		{"FSCTL_LOCK_VOLUME", FsctlLockVolume, fs, 6, buffered, anyAccess},
		{"FSCTL_UNLOCK_VOLUME", FsctlUnlockVolume, fs, 7, buffered, anyAccess},
		{"FSCTL_DISMOUNT_VOLUME", FsctlDismountVolume, fs, 8, buffered, anyAccess},
	}
	for _, tt := range tests {
		if want := CTLCode(tt.dev, tt.fn, tt.method, tt.access); tt.got != want {
			t.Errorf("%s = %#08x, CTL_CODE makes %#08x", tt.name, tt.got, want)
		}
	}
	// Two the SDK's documentation prints as numbers, held to CTLCode
	// itself: IOCTL_DISK_GET_LENGTH_INFO 0x7405c, FSCTL_ALLOW_EXTENDED_DASD_IO
	// 0x90083 (METHOD_NEITHER 3).
	if got := CTLCode(disk, 0x17, buffered, read); got != 0x7405c {
		t.Errorf("CTL_CODE(IOCTL_DISK_GET_LENGTH_INFO) = %#x", got)
	}
	if got := CTLCode(fs, 32, 3, anyAccess); got != 0x90083 {
		t.Errorf("CTL_CODE(FSCTL_ALLOW_EXTENDED_DASD_IO) = %#x", got)
	}
}

// TestLayouts holds the sizes this package reads structures by to the
// C layouts (x64, arm64: natural alignment), field by field.
func TestLayouts(t *testing.T) {
	for _, tt := range []struct {
		name      string
		got, want int
	}{
		// ULONG, ULONG, BYTE, BYTE, BOOLEAN, BOOLEAN, 4 x ULONG, enum, ULONG, BYTE[1] -> 37, padded to 4.
		{"STORAGE_DEVICE_DESCRIPTOR", SizeofDeviceDescriptor, 40},
		{"STORAGE_DEVICE_DESCRIPTOR.RemovableMedia", offDescRemovable, 4 + 4 + 1 + 1},
		{"STORAGE_DEVICE_DESCRIPTOR.BusType", offDescBusType, 4 + 4 + 4*1 + 4*4},
		// enum, enum, BYTE[1] -> 9, padded to 4.
		{"STORAGE_PROPERTY_QUERY", SizeofStoragePropertyQuery, 12},
		{"STORAGE_DEVICE_NUMBER", SizeofDeviceNumber, 3 * 4},
		// DISK_GEOMETRY (LARGE_INTEGER, enum, 3 x DWORD = 24), LARGE_INTEGER, BYTE[1] -> 33, padded to 8.
		{"DISK_GEOMETRY_EX", SizeofDiskGeometryEx, 40},
		{"DISK_GEOMETRY.BytesPerSector", offGeomBytesPerSector, 8 + 4 + 4 + 4},
		{"DISK_GEOMETRY_EX.DiskSize", offGeomDiskSize, 24},
		// DWORD, (pad to 8) LARGE_INTEGER, LARGE_INTEGER.
		{"DISK_EXTENT", SizeofDiskExtent, 24},
		// DWORD, (pad to 8) DISK_EXTENT[1].
		{"VOLUME_DISK_EXTENTS", SizeofDiskExtents1, 32},
	} {
		if tt.got != tt.want {
			t.Errorf("%s: %d, the C layout has %d", tt.name, tt.got, tt.want)
		}
	}
}

func TestParseDeviceDescriptor(t *testing.T) {
	// A USB SD reader as Windows describes it: the strings after the
	// structure, each NUL-terminated, the product padded as SCSI pads it.
	b := make([]byte, 128)
	put := func(off int, v uint32) { binary.LittleEndian.PutUint32(b[off:], v) }
	put(0, 1) // Version
	put(4, 128)
	b[10] = 1 // RemovableMedia
	put(12, 40)
	put(16, 48)
	put(20, 72)
	put(24, 0) // no serial
	put(28, uint32(BusUSB))
	copy(b[40:], "Generic\x00")
	copy(b[48:], "STORAGE DEVICE  \x00")
	copy(b[72:], "1206\x00")
	got, err := ParseDeviceDescriptor(b)
	if err != nil {
		t.Fatal(err)
	}
	want := Descriptor{Bus: BusUSB, Removable: true, Vendor: "Generic", Product: "STORAGE DEVICE", Revision: "1206"}
	if got != want {
		t.Errorf("ParseDeviceDescriptor = %+v, want %+v", got, want)
	}
	if got.Name() != "Generic STORAGE DEVICE" || got.Bus.String() != "USB" || !got.Bus.External() {
		t.Errorf("Name %q, bus %q external %v", got.Name(), got.Bus, got.Bus.External())
	}
	// An offset past the answer is no string; a short answer is an error.
	put(12, 200)
	if got, _ := ParseDeviceDescriptor(b); got.Vendor != "" {
		t.Errorf("vendor past the end = %q", got.Vendor)
	}
	if _, err := ParseDeviceDescriptor(b[:39]); err == nil {
		t.Error("a 39-byte descriptor parsed")
	}
}

func TestBusTypes(t *testing.T) {
	for bus, want := range map[BusType]bool{BusUSB: true, BusSD: true, BusMMC: true, Bus1394: true,
		BusSATA: false, BusNVMe: false, BusRAID: false, BusSAS: false, BusVirtual: false, BusFileBackedVirtual: false} {
		if bus.External() != want {
			t.Errorf("%s.External() = %v", bus, !want)
		}
	}
	// ntddstor.h numbers them: BusTypeUsb 7, BusTypeSata 0xB, BusTypeSd 0xC, BusTypeNvme 0x11.
	if BusUSB != 7 || BusSATA != 0xB || BusSD != 0xC || BusNVMe != 0x11 || BusUFS != 0x13 {
		t.Error("STORAGE_BUS_TYPE out of step with ntddstor.h")
	}
	if BusType(99).String() != "bus type 99" {
		t.Errorf("unknown bus: %q", BusType(99).String())
	}
}

func TestParseGeometryAndNumber(t *testing.T) {
	g := make([]byte, SizeofDiskGeometryEx)
	binary.LittleEndian.PutUint64(g[0:], 3880)              // Cylinders
	binary.LittleEndian.PutUint32(g[offGeomMediaType:], 11) // RemovableMedia
	binary.LittleEndian.PutUint32(g[offGeomBytesPerSector:], 512)
	binary.LittleEndian.PutUint64(g[offGeomDiskSize:], 31914983424)
	got, err := ParseGeometryEx(g)
	if err != nil || got != (Geometry{BytesPerSector: 512, Size: 31914983424, RemovableMedia: true}) {
		t.Errorf("ParseGeometryEx = %+v, %v", got, err)
	}
	n := make([]byte, SizeofDeviceNumber)
	binary.LittleEndian.PutUint32(n[0:], 7) // FILE_DEVICE_DISK
	binary.LittleEndian.PutUint32(n[4:], 2)
	if num, part, err := ParseDeviceNumber(n); err != nil || num != 2 || part != 0 {
		t.Errorf("ParseDeviceNumber = %d, %d, %v", num, part, err)
	}
}

func TestParseDiskExtents(t *testing.T) {
	// A volume spanning two drives (a spanned dynamic volume).
	b := make([]byte, offExtentsFirst+2*SizeofDiskExtent)
	binary.LittleEndian.PutUint32(b, 2)
	binary.LittleEndian.PutUint32(b[8:], 1)
	binary.LittleEndian.PutUint64(b[16:], 1048576)
	binary.LittleEndian.PutUint64(b[24:], 536870912)
	binary.LittleEndian.PutUint32(b[32:], 3)
	binary.LittleEndian.PutUint64(b[40:], 4096)
	binary.LittleEndian.PutUint64(b[48:], 8192)
	got, err := ParseDiskExtents(b)
	want := []Extent{{Disk: 1, Start: 1048576, Length: 536870912}, {Disk: 3, Start: 4096, Length: 8192}}
	if err != nil || !reflect.DeepEqual(got, want) {
		t.Errorf("ParseDiskExtents = %+v, %v", got, err)
	}
	if _, err := ParseDiskExtents(b[:40]); err == nil {
		t.Error("two extents in 40 bytes parsed")
	}
}

func TestPhysicalDrivePath(t *testing.T) {
	for in, want := range map[string]int{`\\.\PhysicalDrive2`: 2, `\\.\physicaldrive10`: 10, `\\.\PHYSICALDRIVE0`: 0,
		`\\.\PhysicalDrive`: -1, `\\.\PhysicalDrive2x`: -1, `\\?\PhysicalDrive2`: -1, `PhysicalDrive2`: -1, `\\.\C:`: -1} {
		n, ok := ParsePhysicalDrive(in)
		if (want < 0) == ok || (ok && int(n) != want) {
			t.Errorf("ParsePhysicalDrive(%q) = %d, %v", in, n, ok)
		}
	}
	if got := PhysicalDrivePath(3); got != `\\.\PhysicalDrive3` {
		t.Errorf("PhysicalDrivePath(3) = %q", got)
	}
}
