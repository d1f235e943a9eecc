package drive

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"

	"golang.org/x/sys/unix"

	"github.com/usbflash/usbflash/internal/failure"
	"github.com/usbflash/usbflash/internal/lib/linuxdisk"
	"github.com/usbflash/usbflash/pipeline/diskdev"
	"github.com/usbflash/usbflash/pipeline/filedev"
)

// On Linux a disk: target is the kernel's block device through filedev,
// the code a file: block device has always had: O_DIRECT, the exclusive
// open, and the in-use check that refuses a disk with a mounted, swapped
// or held partition unless forced. disk: adds what makes it a disk: a
// whole disk, never the system's (judgeDisk).

// listDisks lists /sys/block's disks.
func listDisks(context.Context) ([]WholeDisk, error) {
	ws, err := linuxdisk.Host().WholeDisks()
	if err != nil {
		return nil, err
	}
	out := make([]WholeDisk, len(ws))
	for i, w := range ws {
		out[i] = diskFromLinux(w)
	}
	return out, nil
}

// openDisk opens a disk: target.
func openDisk(_ context.Context, t Spec, opts Options) (*Device, error) {
	st, err := os.Stat(t.Path)
	switch {
	case errors.Is(err, fs.ErrNotExist):
		return nil, notADisk(t, "does not exist: no such disk")
	case err != nil:
		return nil, &Error{class: failure.Device, Target: t.Raw, Msg: fmt.Sprintf("target %s: %v", t.Raw, err), Err: err}
	case st.Mode()&fs.ModeDevice == 0 || st.Mode()&fs.ModeCharDevice != 0:
		return nil, notADisk(t, "is not a disk (an image file is a file: target)")
	}
	if err := sameFileAsImage(opts.Image, t); err != nil {
		return nil, err
	}
	_, rdev, _ := linuxdisk.FileDevs(st)
	w, err := linuxdisk.Host().DescribeWhole(t.Path, rdev)
	var part *linuxdisk.PartitionError
	switch {
	case errors.As(err, &part):
		return nil, usageKind(t.Raw, ErrNotWholeDisk, fmt.Sprintf("target %s: %v", t.Raw, err))
	case err != nil && !opts.Force:
		return nil, unknownUse(t, err)
	case err != nil:
		w = linuxdisk.WholeDisk{Disk: linuxdisk.Disk{Name: st.Name(), Node: t.Path}} // forced: taken as it is
	}
	d := diskFromLinux(w)
	if err := judgeDisk(t, d, opts); err != nil {
		return nil, err
	}
	if !opts.ReadOnly {
		// Without the right to write the node, filedev would open it to
		// read and call it write-protected: say what it is.
		if err := unix.Access(t.Path, unix.W_OK); errors.Is(err, unix.EACCES) || errors.Is(err, unix.EPERM) {
			return nil, openError(t, &diskdev.PermissionError{Path: t.Path, Need: "root", Err: err})
		}
	}
	f, err := filedev.Open(t.Path, filedev.Options{Force: opts.Force, ReadOnly: opts.ReadOnly, Cache: filedev.CacheBypass})
	if err != nil {
		return nil, openError(t, err)
	}
	dev := &Device{Name: "disk:" + t.Path, Dev: &linuxDisk{Device: f, disk: d}, closer: f.Close, node: t.Path}
	if err := f.InUse(); err != nil {
		dev.InUse = &Error{class: failure.Refused, Target: t.Raw, Msg: err.Error(), Uses: uses(err), Err: err}
	}
	return dev, nil
}

// linuxDisk is a Linux disk: target: the block device itself, with every
// method filedev gives it, and the disk as sysfs described it.
type linuxDisk struct {
	*filedev.Device
	disk WholeDisk
}

func (d *linuxDisk) RawDisk() WholeDisk { return d.disk }
func (d *linuxDisk) String() string     { return "disk:" + d.disk.Node }

// notEjectable says what it is that has no card to eject: the kernel
// offers no eject of a whole disk usbflash could use.
func (d *linuxDisk) notEjectable() string { return "a disk: target on Linux" }
