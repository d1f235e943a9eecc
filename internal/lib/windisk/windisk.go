// Package windisk speaks to Windows about its disks and volumes: which
// physical drives there are and on which bus, which volumes lie on a
// drive, and locking and dismounting those volumes for the length of a
// raw write. The control codes and the layouts of the structures they
// exchange are plain Go (this file), pinned by tests on any system against
// the Windows SDK's values; the calls are in windisk_windows.go.
package windisk

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"strings"
)

// CTLCode is winioctl.h's CTL_CODE(DeviceType, Function, Method, Access):
// how every I/O control code below is made.
func CTLCode(deviceType, function, method, access uint32) uint32 {
	return deviceType<<16 | access<<14 | function<<2 | method
}

// The I/O control codes a raw write uses, as the Windows SDK's winioctl.h
// (and ntddstor.h, ntddvol.h) define them; x/sys/windows has none of them.
// windisk_test.go makes each again with CTLCode from the header's
// arguments.
const (
	// IOCTL_STORAGE_QUERY_PROPERTY: CTL_CODE(IOCTL_STORAGE_BASE 0x2d, 0x0500, METHOD_BUFFERED, FILE_ANY_ACCESS).
	IoctlStorageQueryProperty = 0x002D1400
	// IOCTL_STORAGE_GET_DEVICE_NUMBER: CTL_CODE(0x2d, 0x0420, METHOD_BUFFERED, FILE_ANY_ACCESS).
	IoctlStorageGetDeviceNumber = 0x002D1080
	// IOCTL_STORAGE_EJECT_MEDIA: CTL_CODE(0x2d, 0x0202, METHOD_BUFFERED, FILE_READ_ACCESS).
	IoctlStorageEjectMedia = 0x002D4808
	// IOCTL_DISK_GET_DRIVE_GEOMETRY_EX: CTL_CODE(IOCTL_DISK_BASE 7, 0x0028, METHOD_BUFFERED, FILE_ANY_ACCESS).
	IoctlDiskGetDriveGeometryEx = 0x000700A0
	// IOCTL_DISK_IS_WRITABLE: CTL_CODE(7, 0x0009, METHOD_BUFFERED, FILE_ANY_ACCESS).
	IoctlDiskIsWritable = 0x00070024
	// IOCTL_DISK_DELETE_DRIVE_LAYOUT: CTL_CODE(7, 0x0040, METHOD_BUFFERED, FILE_READ_ACCESS | FILE_WRITE_ACCESS).
	IoctlDiskDeleteDriveLayout = 0x0007C100
	// IOCTL_DISK_UPDATE_PROPERTIES: CTL_CODE(7, 0x0050, METHOD_BUFFERED, FILE_ANY_ACCESS).
	IoctlDiskUpdateProperties = 0x00070140
	// IOCTL_VOLUME_GET_VOLUME_DISK_EXTENTS: CTL_CODE(IOCTL_VOLUME_BASE 'V', 0, METHOD_BUFFERED, FILE_ANY_ACCESS).
	IoctlVolumeGetVolumeDiskExtents = 0x00560000
	// FSCTL_LOCK_VOLUME: CTL_CODE(FILE_DEVICE_FILE_SYSTEM 9, 6, METHOD_BUFFERED, FILE_ANY_ACCESS).
	FsctlLockVolume = 0x00090018
	// FSCTL_UNLOCK_VOLUME: CTL_CODE(9, 7, METHOD_BUFFERED, FILE_ANY_ACCESS).
	FsctlUnlockVolume = 0x0009001C
	// FSCTL_DISMOUNT_VOLUME: CTL_CODE(9, 8, METHOD_BUFFERED, FILE_ANY_ACCESS).
	FsctlDismountVolume = 0x00090020
)

// Layouts of the structures the codes above exchange (x64 and arm64 alike:
// every field is naturally aligned, none is a pointer), as byte offsets;
// the parsers below read them from a buffer so that no Go struct's layout
// has to match C's.
const (
	// STORAGE_PROPERTY_QUERY: PropertyId (STORAGE_PROPERTY_ID), QueryType
	// (STORAGE_QUERY_TYPE), AdditionalParameters[1], padded to 12 bytes.
	// StorageDeviceProperty (0) with PropertyStandardQuery (0) is all
	// zeros.
	SizeofStoragePropertyQuery = 12

	// STORAGE_DEVICE_DESCRIPTOR: Version, Size (ULONG), DeviceType,
	// DeviceTypeModifier (BYTE), RemovableMedia, CommandQueueing
	// (BOOLEAN), VendorIdOffset, ProductIdOffset, ProductRevisionOffset,
	// SerialNumberOffset (ULONG), BusType (STORAGE_BUS_TYPE, an enum),
	// RawPropertiesLength (ULONG), RawDeviceProperties[1]: 40 bytes with
	// its padding; the strings the offsets point at follow it.
	offDescSize            = 4
	offDescRemovable       = 10
	offDescVendorOffset    = 12
	offDescProductOffset   = 16
	offDescRevisionOffset  = 20
	offDescSerialOffset    = 24
	offDescBusType         = 28
	SizeofDeviceDescriptor = 40

	// STORAGE_DEVICE_NUMBER: DeviceType (DEVICE_TYPE), DeviceNumber,
	// PartitionNumber (ULONG).
	SizeofDeviceNumber = 12

	// DISK_GEOMETRY_EX: Geometry (DISK_GEOMETRY: Cylinders LARGE_INTEGER,
	// MediaType, TracksPerCylinder, SectorsPerTrack, BytesPerSector: 24
	// bytes), DiskSize (LARGE_INTEGER), Data[1]: 40 bytes with padding.
	offGeomBytesPerSector = 20
	offGeomDiskSize       = 24
	SizeofDiskGeometryEx  = 40
	offGeomMediaType      = 8
	mediaTypeRemovable    = 11 // MEDIA_TYPE RemovableMedia

	// VOLUME_DISK_EXTENTS: NumberOfDiskExtents (ULONG), then (aligned to
	// 8) DISK_EXTENT Extents[]: DiskNumber (ULONG), StartingOffset and
	// ExtentLength (LARGE_INTEGER, at 8 and 16): 24 bytes each.
	offExtentsFirst    = 8
	SizeofDiskExtent   = 24
	offExtentStart     = 8
	offExtentLength    = 16
	SizeofDiskExtents1 = offExtentsFirst + SizeofDiskExtent // with one extent: 32
)

// BusType is STORAGE_BUS_TYPE (ntddstor.h).
type BusType uint32

// Bus types of STORAGE_BUS_TYPE, in the enum's order.
const (
	BusUnknown BusType = iota
	BusSCSI
	BusATAPI
	BusATA
	Bus1394
	BusSSA
	BusFibre
	BusUSB
	BusRAID
	BusISCSI
	BusSAS
	BusSATA
	BusSD
	BusMMC
	BusVirtual
	BusFileBackedVirtual
	BusSpaces
	BusNVMe
	BusSCM
	BusUFS
)

var busNames = [...]string{"unknown", "SCSI", "ATAPI", "ATA", "FireWire", "SSA", "Fibre Channel", "USB", "RAID", "iSCSI",
	"SAS", "SATA", "SD", "MMC", "virtual", "file-backed virtual", "Storage Spaces", "NVMe", "SCM", "UFS"}

func (b BusType) String() string {
	if int(b) < len(busNames) {
		return busNames[b]
	}
	return fmt.Sprintf("bus type %d", uint32(b))
}

// External says whether a disk on this bus is one a person plugs in or
// inserts (USB, SD, MMC, FireWire): Windows has no "internal" flag of its
// own, so the bus decides it.
func (b BusType) External() bool {
	return b == BusUSB || b == BusSD || b == BusMMC || b == Bus1394
}

// Descriptor is what STORAGE_DEVICE_DESCRIPTOR says of a drive.
type Descriptor struct {
	Bus       BusType
	Removable bool // RemovableMedia: the medium comes out (a card, not a stick)
	Vendor    string
	Product   string
	Revision  string
	Serial    string
}

// Name is the drive's vendor and product, as a person reads them.
func (d Descriptor) Name() string {
	return strings.Join(strings.Fields(d.Vendor+" "+d.Product), " ")
}

var errShort = errors.New("answer shorter than its structure")

// ParseDeviceDescriptor reads a STORAGE_DEVICE_DESCRIPTOR and the strings
// after it (each at its offset, NUL-terminated; offset 0 means none).
func ParseDeviceDescriptor(b []byte) (Descriptor, error) {
	if len(b) < SizeofDeviceDescriptor {
		return Descriptor{}, fmt.Errorf("STORAGE_DEVICE_DESCRIPTOR: %d bytes: %w", len(b), errShort)
	}
	if size := int(le.Uint32(b[offDescSize:])); size < len(b) {
		b = b[:max(size, SizeofDeviceDescriptor)]
	}
	str := func(off int) string {
		o := int(le.Uint32(b[off:]))
		if o == 0 || o >= len(b) {
			return ""
		}
		s := b[o:]
		if i := bytes.IndexByte(s, 0); i >= 0 {
			s = s[:i]
		}
		return strings.TrimSpace(string(s))
	}
	return Descriptor{
		Bus:       BusType(le.Uint32(b[offDescBusType:])),
		Removable: b[offDescRemovable] != 0,
		Vendor:    str(offDescVendorOffset),
		Product:   str(offDescProductOffset),
		Revision:  str(offDescRevisionOffset),
		Serial:    str(offDescSerialOffset),
	}, nil
}

// ParseDeviceNumber reads a STORAGE_DEVICE_NUMBER: the N of
// \\.\PhysicalDriveN, and the partition (0 for the whole disk).
func ParseDeviceNumber(b []byte) (number, partition uint32, err error) {
	if len(b) < SizeofDeviceNumber {
		return 0, 0, fmt.Errorf("STORAGE_DEVICE_NUMBER: %d bytes: %w", len(b), errShort)
	}
	return le.Uint32(b[4:]), le.Uint32(b[8:]), nil
}

// Geometry is what DISK_GEOMETRY_EX says of a drive's medium.
type Geometry struct {
	BytesPerSector uint32
	Size           int64
	RemovableMedia bool // MediaType RemovableMedia, not FixedMedia
}

// ParseGeometryEx reads a DISK_GEOMETRY_EX.
func ParseGeometryEx(b []byte) (Geometry, error) {
	if len(b) < offGeomDiskSize+8 {
		return Geometry{}, fmt.Errorf("DISK_GEOMETRY_EX: %d bytes: %w", len(b), errShort)
	}
	return Geometry{
		BytesPerSector: le.Uint32(b[offGeomBytesPerSector:]),
		Size:           int64(le.Uint64(b[offGeomDiskSize:])),
		RemovableMedia: le.Uint32(b[offGeomMediaType:]) == mediaTypeRemovable,
	}, nil
}

// Extent is one DISK_EXTENT of a volume: which disk, where, how long.
type Extent struct {
	Disk          uint32
	Start, Length int64
}

// ParseDiskExtents reads a VOLUME_DISK_EXTENTS with its extents.
func ParseDiskExtents(b []byte) ([]Extent, error) {
	if len(b) < offExtentsFirst {
		return nil, fmt.Errorf("VOLUME_DISK_EXTENTS: %d bytes: %w", len(b), errShort)
	}
	n := int(le.Uint32(b))
	if len(b) < offExtentsFirst+n*SizeofDiskExtent {
		return nil, fmt.Errorf("VOLUME_DISK_EXTENTS of %d extents: %d bytes: %w", n, len(b), errShort)
	}
	out := make([]Extent, n)
	for i := range out {
		e := b[offExtentsFirst+i*SizeofDiskExtent:]
		out[i] = Extent{Disk: le.Uint32(e), Start: int64(le.Uint64(e[offExtentStart:])), Length: int64(le.Uint64(e[offExtentLength:]))}
	}
	return out, nil
}

// PhysicalDrivePath is the device path of drive n: \\.\PhysicalDriveN.
func PhysicalDrivePath(n uint32) string { return fmt.Sprintf(`\\.\PhysicalDrive%d`, n) }

// ParsePhysicalDrive reads the N of \\.\PhysicalDriveN (any case); ok is
// false for any other path.
func ParsePhysicalDrive(path string) (n uint32, ok bool) {
	const prefix = `\\.\physicaldrive`
	if len(path) <= len(prefix) || !strings.EqualFold(path[:len(prefix)], prefix) {
		return 0, false
	}
	var v uint64
	for _, c := range path[len(prefix):] {
		if c < '0' || c > '9' || v > 1<<20 {
			return 0, false
		}
		v = v*10 + uint64(c-'0')
	}
	return uint32(v), true
}

var le = binary.LittleEndian

// Drive is one physical drive as Windows describes it.
type Drive struct {
	Number     uint32 // the N of \\.\PhysicalDriveN
	Path       string // \\.\PhysicalDriveN
	Descriptor Descriptor
	Geometry   Geometry // zero when the drive has no medium
	Writable   bool     // IOCTL_DISK_IS_WRITABLE succeeded
}

// Volume is a volume Windows mounted, and the disks it lies on.
type Volume struct {
	Name  string   // \\?\Volume{GUID}\ as FindFirstVolume gives it
	Paths []string // where it is mounted: "E:\", a folder
	Disks []uint32 // the drives its extents are on
}

// Device is the volume's device path: its name without the trailing
// backslash, which opens the volume rather than its root directory.
func (v Volume) Device() string { return strings.TrimSuffix(v.Name, `\`) }

// String names the volume as a person knows it: its drive letters or
// folders, else its GUID name.
func (v Volume) String() string {
	if len(v.Paths) > 0 {
		return strings.Join(v.Paths, ", ")
	}
	return v.Name
}

// On says whether the volume lies (wholly or in part) on drive n.
func (v Volume) On(n uint32) bool {
	for _, d := range v.Disks {
		if d == n {
			return true
		}
	}
	return false
}
