package windisk

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"time"

	"golang.org/x/sys/windows"
)

// guidDevinterfaceDisk is GUID_DEVINTERFACE_DISK (ntddstor.h), the device
// interface class of every disk: {53f56307-b6bf-11d0-94f2-00a0c91efb8b}.
var guidDevinterfaceDisk = windows.GUID{Data1: 0x53f56307, Data2: 0xb6bf, Data3: 0x11d0, Data4: [8]byte{0x94, 0xf2, 0x00, 0xa0, 0xc9, 0x1e, 0xfb, 0x8b}}

// Drives lists the physical drives that are present, through SetupAPI's
// configuration manager (CM_Get_Device_Interface_List of the disk
// interface class), each described by its storage IOCTLs. A drive that
// cannot be described is skipped: it may have gone.
func Drives() ([]Drive, error) {
	paths, err := windows.CM_Get_Device_Interface_List("", &guidDevinterfaceDisk, windows.CM_GET_DEVICE_INTERFACE_LIST_PRESENT)
	var cr windows.CONFIGRET
	if errors.As(err, &cr) {
		// CONFIGRET's own text comes from CM_MapCrToWin32Err, which
		// older systems (and Wine) lack: say the number.
		return nil, fmt.Errorf("listing the disk interfaces: CM_Get_Device_Interface_List: CONFIGRET %#x", uint32(cr))
	}
	if err != nil {
		return nil, fmt.Errorf("listing the disk interfaces: %w", err)
	}
	var out []Drive
	for _, p := range paths {
		if p == "" {
			continue
		}
		d, err := describe(p, true)
		if err != nil {
			continue
		}
		out = append(out, d)
	}
	return out, nil
}

// Describe describes one drive by its path (\\.\PhysicalDriveN).
func Describe(path string) (Drive, error) { return describe(path, false) }

func describe(path string, byInterface bool) (Drive, error) {
	h, err := openQuery(path)
	if err != nil {
		return Drive{}, err
	}
	defer windows.CloseHandle(h)
	var d Drive
	num := make([]byte, SizeofDeviceNumber)
	if err := ioctl(h, IoctlStorageGetDeviceNumber, nil, num); err != nil {
		return Drive{}, fmt.Errorf("%s: IOCTL_STORAGE_GET_DEVICE_NUMBER: %w", path, err)
	}
	n, part, err := ParseDeviceNumber(num)
	if err != nil {
		return Drive{}, fmt.Errorf("%s: %w", path, err)
	}
	if part != 0 {
		return Drive{}, fmt.Errorf("%s is partition %d of %s, not a whole drive", path, part, PhysicalDrivePath(n))
	}
	d.Number, d.Path = n, PhysicalDrivePath(n)
	if !byInterface {
		d.Path = path
	}
	query := make([]byte, SizeofStoragePropertyQuery) // StorageDeviceProperty, PropertyStandardQuery
	desc := make([]byte, 1024)
	if err := ioctl(h, IoctlStorageQueryProperty, query, desc); err != nil {
		return Drive{}, fmt.Errorf("%s: IOCTL_STORAGE_QUERY_PROPERTY: %w", path, err)
	}
	if d.Descriptor, err = ParseDeviceDescriptor(desc); err != nil {
		return Drive{}, fmt.Errorf("%s: %w", path, err)
	}
	geom := make([]byte, 256)
	if err := ioctl(h, IoctlDiskGetDriveGeometryEx, nil, geom); err == nil {
		d.Geometry, _ = ParseGeometryEx(geom)
	}
	d.Writable = ioctl(h, IoctlDiskIsWritable, nil, nil) == nil
	return d, nil
}

// openQuery opens a device for IOCTLs alone: no access right is asked, so
// no administrator is needed and no other opener is disturbed.
func openQuery(path string) (windows.Handle, error) {
	p, err := windows.UTF16PtrFromString(path)
	if err != nil {
		return 0, err
	}
	h, err := windows.CreateFile(p, 0, windows.FILE_SHARE_READ|windows.FILE_SHARE_WRITE, nil, windows.OPEN_EXISTING, 0, 0)
	if err != nil {
		return 0, &os.PathError{Op: "open", Path: path, Err: err}
	}
	return h, nil
}

// ioctl runs DeviceIoControl with in and out as its buffers.
func ioctl(h windows.Handle, code uint32, in, out []byte) error {
	var inp, outp *byte
	if len(in) > 0 {
		inp = &in[0]
	}
	if len(out) > 0 {
		outp = &out[0]
	}
	var n uint32
	return windows.DeviceIoControl(h, code, inp, uint32(len(in)), outp, uint32(len(out)), &n, nil)
}

// Ioctl runs DeviceIoControl on an open handle with in and out as its
// buffers: the disk writer's calls (delete the layout, eject) go through
// it too.
func Ioctl(h windows.Handle, code uint32, in, out []byte) error { return ioctl(h, code, in, out) }

// Volumes lists every volume and the drives under it. A volume whose
// extents cannot be read (a CD, a volume going away) is listed without
// drives.
func Volumes() ([]Volume, error) {
	buf := make([]uint16, windows.MAX_PATH+1)
	h, err := windows.FindFirstVolume(&buf[0], uint32(len(buf)))
	if err != nil {
		return nil, fmt.Errorf("FindFirstVolume: %w", err)
	}
	defer windows.FindVolumeClose(h)
	var out []Volume
	for {
		v := Volume{Name: windows.UTF16ToString(buf)}
		v.Paths = mountPaths(buf)
		v.Disks, _ = volumeDisks(v.Device())
		out = append(out, v)
		if err := windows.FindNextVolume(h, &buf[0], uint32(len(buf))); err != nil {
			if errors.Is(err, windows.ERROR_NO_MORE_FILES) {
				return out, nil
			}
			return out, fmt.Errorf("FindNextVolume: %w", err)
		}
	}
}

// mountPaths are the drive letters and folders volume name is mounted on.
func mountPaths(name []uint16) []string {
	buf := make([]uint16, 1024)
	var n uint32
	if err := windows.GetVolumePathNamesForVolumeName(&name[0], &buf[0], uint32(len(buf)), &n); err != nil {
		return nil
	}
	// The names are NUL-separated, which UTF16ToString stops at.
	var out []string
	start := 0
	for i := 0; i < int(min(n, uint32(len(buf)))); i++ {
		if buf[i] == 0 {
			if i > start {
				out = append(out, windows.UTF16ToString(buf[start:i]))
			}
			start = i + 1
		}
	}
	return out
}

// volumeDisks reads the drives a volume's extents lie on.
func volumeDisks(device string) ([]uint32, error) {
	h, err := openQuery(device)
	if err != nil {
		return nil, err
	}
	defer windows.CloseHandle(h)
	buf := make([]byte, SizeofDiskExtents1+31*SizeofDiskExtent)
	if err := ioctl(h, IoctlVolumeGetVolumeDiskExtents, nil, buf); err != nil {
		return nil, fmt.Errorf("%s: IOCTL_VOLUME_GET_VOLUME_DISK_EXTENTS: %w", device, err)
	}
	exts, err := ParseDiskExtents(buf)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", device, err)
	}
	if len(exts) == 0 {
		return nil, fmt.Errorf("%s: IOCTL_VOLUME_GET_VOLUME_DISK_EXTENTS gave no extent", device)
	}
	var out []uint32
	for _, e := range exts {
		out = append(out, e.Disk)
	}
	return out, nil
}

// SystemDrives are the drives the volume holding the Windows directory
// lies on: the running system's disk.
func SystemDrives() ([]uint32, error) {
	dir, err := windows.GetWindowsDirectory()
	if err != nil {
		return nil, fmt.Errorf("GetWindowsDirectory: %w", err)
	}
	root := filepath.VolumeName(dir) + `\`
	p, err := windows.UTF16PtrFromString(root)
	if err != nil {
		return nil, err
	}
	name := make([]uint16, windows.MAX_PATH+1)
	if err := windows.GetVolumeNameForVolumeMountPoint(p, &name[0], uint32(len(name))); err != nil {
		return nil, fmt.Errorf("the volume of %s: %w", root, err)
	}
	return volumeDisks(strings.TrimSuffix(windows.UTF16ToString(name), `\`))
}

// Elevated says whether this process runs with an administrator's rights,
// which opening a physical drive or a volume for writing needs.
func Elevated() bool { return windows.GetCurrentProcessToken().IsElevated() }

// LockError is a volume that could not be locked for a raw write: a
// program has files open on it.
type LockError struct {
	Volume Volume
	Err    error
}

func (e *LockError) Error() string {
	return fmt.Sprintf("volume %s could not be locked (a program has files open on it): %v", e.Volume, e.Err)
}

func (e *LockError) Unwrap() error { return e.Err }

// Locks are volumes locked and dismounted for a raw write. Their handles
// stay open until Release: while they are, Windows mounts nothing on the
// drive. Mount points and drive letters are left as they are (deleting
// them strands the letters: rpi-imager #1665); Windows remounts the
// volumes it finds once the locks go.
type Locks struct {
	handles []windows.Handle
}

// lockTries and lockPause: FSCTL_LOCK_VOLUME fails while the system
// itself (the indexer, an antivirus) briefly has a file open; Microsoft's
// own samples try for about 10 seconds.
const (
	lockTries = 20
	lockPause = 500 * time.Millisecond
)

// Lock locks and dismounts each volume. A volume that cannot be locked is
// a *LockError and nothing stays locked; with force it is dismounted all
// the same, which closes the files programs have open on it.
func Lock(vols []Volume, force bool) (*Locks, error) {
	l := &Locks{}
	for _, v := range vols {
		h, err := openVolume(v.Device())
		if err != nil {
			l.Release()
			return nil, fmt.Errorf("opening volume %s: %w", v, err)
		}
		l.handles = append(l.handles, h)
		var lerr error
		for try := 0; try < lockTries; try++ {
			if lerr = ioctl(h, FsctlLockVolume, nil, nil); lerr == nil {
				break
			}
			if !errors.Is(lerr, windows.ERROR_ACCESS_DENIED) && !errors.Is(lerr, windows.ERROR_SHARING_VIOLATION) {
				break
			}
			time.Sleep(lockPause)
		}
		if lerr != nil && !force {
			l.Release()
			return nil, &LockError{Volume: v, Err: lerr}
		}
		if err := ioctl(h, FsctlDismountVolume, nil, nil); err != nil {
			l.Release()
			return nil, fmt.Errorf("dismounting volume %s: %w", v, err)
		}
	}
	return l, nil
}

// Release closes the volumes' handles, which ends their locks.
func (l *Locks) Release() {
	if l == nil {
		return
	}
	for _, h := range l.handles {
		windows.CloseHandle(h)
	}
	l.handles = nil
}

func openVolume(device string) (windows.Handle, error) {
	p, err := windows.UTF16PtrFromString(device)
	if err != nil {
		return 0, err
	}
	return windows.CreateFile(p, windows.GENERIC_READ|windows.GENERIC_WRITE, windows.FILE_SHARE_READ|windows.FILE_SHARE_WRITE,
		nil, windows.OPEN_EXISTING, 0, 0)
}
