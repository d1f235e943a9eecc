package diskdev

import (
	"context"
	"errors"
	"fmt"
	"os"

	"golang.org/x/sys/windows"

	"github.com/usbflash/usbflash/internal/lib/windisk"
)

// Open opens a physical drive (\\.\PhysicalDriveN) for block I/O with
// FILE_FLAG_NO_BUFFERING and FILE_FLAG_WRITE_THROUGH: sector-aligned
// transfers straight to the drive, each written through its cache. Its
// sector size and size are the drive's (IOCTL_DISK_GET_DRIVE_GEOMETRY_EX),
// its write protection IOCTL_DISK_IS_WRITABLE's. Before the first write
// its layout is cleared (IOCTL_DISK_DELETE_DRIVE_LAYOUT, then
// IOCTL_DISK_UPDATE_PROPERTIES), so Windows mounts nothing of the old
// partitions or of the image while it is written; the volumes that were
// on it must be locked and dismounted before (drive does: windisk.Lock,
// whose locks opts.Release lets go). Eject sends
// IOCTL_STORAGE_EJECT_MEDIA.
//
// A regular file opens the same way, with the same flags, 512-byte
// blocks and its size: the writer is tested so where no drive can be
// written (under Wine).
func Open(ctx context.Context, path string, opts Options) (*Device, error) {
	access := uint32(windows.GENERIC_READ)
	if !opts.ReadOnly {
		access |= windows.GENERIC_WRITE
	}
	p, err := windows.UTF16PtrFromString(path)
	if err != nil {
		return nil, err
	}
	h, err := windows.CreateFile(p, access, windows.FILE_SHARE_READ|windows.FILE_SHARE_WRITE, nil, windows.OPEN_EXISTING,
		windows.FILE_FLAG_NO_BUFFERING|windows.FILE_FLAG_WRITE_THROUGH, 0)
	switch {
	case errors.Is(err, windows.ERROR_ACCESS_DENIED):
		return nil, &PermissionError{Path: path, Need: "an administrator", Err: err}
	case errors.Is(err, windows.ERROR_SHARING_VIOLATION):
		return nil, fmt.Errorf("%s: another program has it open exclusively: %w", path, err)
	case err != nil:
		return nil, &os.PathError{Op: "open", Path: path, Err: err}
	}
	f := os.NewFile(uintptr(h), path)
	cfg := config{name: "disk:" + path, release: opts.Release}
	if _, drive := windisk.ParsePhysicalDrive(path); drive {
		err = describeDrive(h, &cfg, opts)
	} else {
		err = describeFile(f, &cfg)
	}
	if err != nil {
		f.Close()
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	return newDevice(f, cfg), nil
}

// describeDrive reads a drive's sector size, size and write protection,
// and sets up the layout's clearing and the eject.
func describeDrive(h windows.Handle, cfg *config, opts Options) error {
	buf := make([]byte, 256)
	if err := windisk.Ioctl(h, windisk.IoctlDiskGetDriveGeometryEx, nil, buf); err != nil {
		return fmt.Errorf("IOCTL_DISK_GET_DRIVE_GEOMETRY_EX: %w", err)
	}
	g, err := windisk.ParseGeometryEx(buf)
	if err != nil {
		return err
	}
	if g.BytesPerSector == 0 || g.Size <= 0 {
		return fmt.Errorf("the drive reports %d bytes in %d-byte sectors (no medium?)", g.Size, g.BytesPerSector)
	}
	cfg.blockSize, cfg.blocks = int(g.BytesPerSector), g.Size/int64(g.BytesPerSector)
	cfg.wp = !opts.ReadOnly && errors.Is(windisk.Ioctl(h, windisk.IoctlDiskIsWritable, nil, nil), windows.ERROR_WRITE_PROTECT)
	cfg.prepare = func() error {
		if err := windisk.Ioctl(h, windisk.IoctlDiskDeleteDriveLayout, nil, nil); err != nil {
			return fmt.Errorf("IOCTL_DISK_DELETE_DRIVE_LAYOUT: %w", err)
		}
		if err := windisk.Ioctl(h, windisk.IoctlDiskUpdateProperties, nil, nil); err != nil {
			return fmt.Errorf("IOCTL_DISK_UPDATE_PROPERTIES: %w", err)
		}
		return nil
	}
	cfg.eject = func(context.Context) error {
		if err := windisk.Ioctl(h, windisk.IoctlStorageEjectMedia, nil, nil); err != nil {
			return fmt.Errorf("IOCTL_STORAGE_EJECT_MEDIA: %w", err)
		}
		return nil
	}
	return nil
}

// describeFile sizes a regular file opened as a disk: 512-byte blocks,
// its whole size.
func describeFile(f *os.File, cfg *config) error {
	st, err := f.Stat()
	if err != nil {
		return err
	}
	if !st.Mode().IsRegular() {
		return errors.New("neither a physical drive (\\\\.\\PhysicalDriveN) nor a regular file")
	}
	cfg.blockSize, cfg.blocks = 512, st.Size()/512
	return nil
}
