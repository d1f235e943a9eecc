package drive

import (
	"context"
	"errors"
	"fmt"

	"github.com/usbflash/usbflash/internal/failure"
	"github.com/usbflash/usbflash/internal/lib/windisk"
	"github.com/usbflash/usbflash/pipeline/diskdev"
)

// listDisks lists the physical drives (SetupAPI's disk interfaces), each
// with the volumes on it.
func listDisks(context.Context) ([]WholeDisk, error) {
	drives, err := windisk.Drives()
	if err != nil {
		return nil, err
	}
	vols, err := windisk.Volumes()
	if err != nil {
		return nil, err
	}
	system, err := windisk.SystemDrives()
	if err != nil {
		return nil, err
	}
	out := make([]WholeDisk, len(drives))
	for i, drv := range drives {
		out[i] = diskFromWindows(drv, vols, system)
	}
	return out, nil
}

// openDisk opens a disk: target: the drive's IOCTLs describe it,
// judgeDisk judges it, and for a write (as an administrator) the volumes
// on it are locked and dismounted (a volume a program holds is a refusal,
// unless forced) and stay so until the disk is closed.
func openDisk(ctx context.Context, t Spec, opts Options) (*Device, error) {
	n, ok := windisk.ParsePhysicalDrive(t.Path)
	if !ok {
		return nil, notADisk(t, `is not a physical drive (\\.\PhysicalDriveN, N from usbflash list)`)
	}
	drv, err := windisk.Describe(windisk.PhysicalDrivePath(n))
	if err != nil {
		return nil, &Error{class: failure.Device, Target: t.Raw, Err: errors.Join(ErrNotFound, err),
			Msg: fmt.Sprintf("target %s: %v", t.Raw, err)}
	}
	vols, err := windisk.Volumes()
	var system []uint32
	if err == nil {
		system, err = windisk.SystemDrives()
	}
	if err != nil && !opts.Force && !opts.ReadOnly {
		return nil, unknownUse(t, err)
	}
	d := diskFromWindows(drv, vols, system)
	if err := judgeDisk(t, d, opts); err != nil {
		return nil, err
	}
	var locks *windisk.Locks
	if !opts.ReadOnly {
		if !windisk.Elevated() {
			return nil, openError(t, &diskdev.PermissionError{Path: drv.Path, Need: "an administrator",
				Err: errors.New("this usbflash runs without an administrator's rights")})
		}
		var on []windisk.Volume
		for _, v := range vols {
			if v.On(n) {
				on = append(on, v)
			}
		}
		if locks, err = windisk.Lock(on, opts.Force); err != nil {
			var le *windisk.LockError
			if errors.As(err, &le) {
				return nil, inUseVolumes(t, err)
			}
			return nil, openError(t, err)
		}
	}
	dd, err := diskdev.Open(ctx, drv.Path, diskdev.Options{ReadOnly: opts.ReadOnly, Release: locks.Release})
	if err != nil {
		locks.Release()
		return nil, openError(t, err)
	}
	return &Device{Name: "disk:" + drv.Path, Dev: &rawDisk{Device: dd, disk: d}, closer: dd.Close, node: drv.Path}, nil
}
