package libusb

import (
	"errors"

	"usbflash/internal/linuxdisk"
)

// sysView is where the kernel's view of USB devices and their disks is
// read; the in-use check itself lives in linuxdisk, shared with file:
// targets.
type sysView = linuxdisk.Sys

func hostView() sysView { return linuxdisk.Host() }

// KernelDisk is a block device the kernel's usb-storage (or uas) driver
// made from a USB interface. `usbflash list` shows these so the user can
// tell readers apart without claiming anything.
type KernelDisk = linuxdisk.Disk

// KernelDisks returns the block devices the kernel created from info's
// interface, with their partitions and whatever mounts or holds them. It
// claims nothing. An interface without a kernel driver (or a system without
// sysfs) has none: the result is empty and the error nil.
func KernelDisks(info Info) ([]KernelDisk, error) {
	if info.PortPath == "" {
		return nil, nil
	}
	return hostView().InterfaceDisks(info.sysfsName())
}

// checkNotInUse refuses (with a *linuxdisk.InUseError, which matches
// linuxdisk.ErrInUse) when any kernel disk behind info is mounted, swapped
// on or held.
func checkNotInUse(view sysView, info Info) error {
	if info.PortPath == "" {
		return nil
	}
	err := view.CheckInterface(info.String(), info.sysfsName())
	if err == nil || errors.Is(err, linuxdisk.ErrInUse) {
		return err
	}
	return newError("checking whether the device's disk is in use", info, ErrInUseUnknown, err)
}
