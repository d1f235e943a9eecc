//go:build darwin

package libusbdl

import (
	"context"
	"fmt"
	"os"
	"os/exec"

	"golang.org/x/sys/unix"

	"github.com/usbflash/usbflash/usbms/usbdev"
)

func diskView() usbdev.DiskView { return darwinDisks{ioreg: runIoreg, mounts: mountedFrom} }

func sysfsSerial(string) (string, bool) { return "", false }

// captureMinMicro is the first libusb (1.0.25) that can take a device
// from a macOS driver (libusb_detach_kernel_driver: it captures the
// whole device with USBDeviceReEnumerate).
const captureMinMicro = 25

// platformClaimCheck refuses, before anything is taken, a reader that
// Apple's mass-storage driver holds when this process cannot capture it:
// capture needs libusb 1.0.25 or later, and root, since the entitlement
// that allows it otherwise (com.apple.vm.device-access) cannot be held by
// a command-line program (libusb issue 1014). The disks' in-use check
// (every volume unmounted) ran before it.
func platformClaimCheck(l *Library, info usbdev.Info, held bool) error {
	if !held && l.atLeast(captureMinMicro) {
		return nil
	}
	if !l.atLeast(captureMinMicro) {
		return usbdev.NewError("taking the reader from macOS's mass-storage driver", info, usbdev.ErrSystemDriver,
			fmt.Errorf("libusb %s cannot take a device from a macOS driver; 1.0.25 or later can", l.Version()))
	}
	if os.Geteuid() != 0 {
		return usbdev.NewError("taking the reader from macOS's mass-storage driver", info, usbdev.ErrSystemDriver,
			fmt.Errorf("it needs root: libusb captures the whole device, which only root may do from a command-line program (the com.apple.vm.device-access entitlement cannot be held by one)"))
	}
	return nil
}

// openError is the error of a device libusb could not open.
func openError(info usbdev.Info, err error) error {
	return mapError(context.Background(), "opening the reader", info, err)
}

// openFailure says why a device could not be opened to read its strings.
func openFailure(err error) string {
	if err == ErrAccess {
		return "no permission to open the device"
	}
	return "could not open the device: " + err.Error()
}

// runIoreg is the USB devices of the I/O Registry with everything below
// them, as a property list.
func runIoreg() ([]byte, error) {
	return exec.Command("/usr/sbin/ioreg", "-a", "-r", "-c", "IOUSBHostDevice", "-l").Output()
}

// mountedFrom lists the mounted file systems (getfsstat).
func mountedFrom() ([]mount, error) {
	n, err := unix.Getfsstat(nil, unix.MNT_NOWAIT)
	if err != nil {
		return nil, err
	}
	buf := make([]unix.Statfs_t, n+8)
	n, err = unix.Getfsstat(buf, unix.MNT_NOWAIT)
	if err != nil {
		return nil, err
	}
	out := make([]mount, 0, n)
	for _, s := range buf[:n] {
		out = append(out, mount{from: unix.ByteSliceToString(s.Mntfromname[:]), on: unix.ByteSliceToString(s.Mntonname[:]),
			fstype: unix.ByteSliceToString(s.Fstypename[:])})
	}
	return out, nil
}
