package usbdev

import "github.com/usbflash/usbflash/internal/lib/linuxdisk"

// KernelDisk is a block device the kernel's usb-storage (or uas) driver
// made from a USB interface. `usbflash list` shows these so the user can
// tell readers apart without claiming anything.
type KernelDisk = linuxdisk.Disk

// DiskUse is one way the system uses a KernelDisk (KernelDisk.InUse): a
// mounted filesystem, active swap, or a dm or md device holding it.
type DiskUse = linuxdisk.Use

// DiskUseKind says how the system uses a disk (DiskUse.Kind).
type DiskUseKind = linuxdisk.UseKind

// The ways a disk is in use.
const (
	DiskMounted = linuxdisk.Mounted // a mounted filesystem
	DiskSwap    = linuxdisk.Swap    // active swap
	DiskHeld    = linuxdisk.Held    // held by a dm or md device (LUKS, LVM, RAID)
)

// InUseError is Open's refusal of a reader whose kernel disk the system
// uses (errors.As finds it; errors.Is finds ErrInUse): the disk as named,
// and each use.
type InUseError = linuxdisk.InUseError

// DiskView is where the kernel's disks of an interface are read: this
// machine's sysfs and mount table for a backend, fixtures in tests.
type DiskView interface {
	// InterfaceDisks returns the disks the kernel made from the interface
	// with the sysfs name iface (Info.SysfsName), with their uses.
	InterfaceDisks(iface string) ([]KernelDisk, error)
}

// KernelDisks returns the block devices the kernel created from info's
// interface, with their partitions and whatever mounts or holds them. It
// claims nothing. An interface without a kernel driver (or a system without
// sysfs) has none: the result is empty and the error nil.
func KernelDisks(info Info) ([]KernelDisk, error) {
	if info.PortPath == "" {
		return nil, nil
	}
	return linuxdisk.Host().InterfaceDisks(info.SysfsName())
}

// CheckKernelDisks is what a backend checks of the disks the kernel made
// from info's interface, right before its claim detaches the kernel's
// driver: unless opts.Force, it refuses (with an *InUseError, which
// matches ErrInUse) when one of them is mounted, swapped on or held, and a
// state it cannot read is an *Error of kind ErrInUseUnknown; then
// opts.CheckDisks, when set, sees them. The disks are read once for both,
// from view.
func CheckKernelDisks(view DiskView, info Info, opts OpenOptions) error {
	if info.PortPath == "" || (opts.Force && opts.CheckDisks == nil) {
		return nil
	}
	disks, err := view.InterfaceDisks(info.SysfsName())
	switch {
	case err != nil && !opts.Force:
		return NewError("checking whether the device's disk is in use", info, ErrInUseUnknown, err)
	case err != nil:
		disks = nil // forced past a state that cannot be read
	case !opts.Force:
		if err := linuxdisk.CheckDisks(info.String(), disks); err != nil {
			return err
		}
	}
	if opts.CheckDisks != nil {
		return opts.CheckDisks(disks)
	}
	return nil
}
