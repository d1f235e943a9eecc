//go:build linux

package libusbdl

import (
	"context"

	"github.com/usbflash/usbflash/internal/lib/linuxdisk"
	"github.com/usbflash/usbflash/usbms/usbdev"
)

// diskView is where the disks the system made of a reader are read: the
// kernel's, through sysfs and the mount table, as usbfs reads them.
func diskView() usbdev.DiskView { return linuxdisk.Host() }

// sysfsSerial is the device's serial as the kernel read it.
func sysfsSerial(portPath string) (string, bool) {
	return linuxdisk.Host().USBString(portPath, "serial")
}

// platformClaimCheck: on Linux libusb detaches usb-storage or uas from
// the interface alone when it claims it (auto-detach), as usbfs does,
// after the in-use check.
func platformClaimCheck(*Library, usbdev.Info, bool) error { return nil }

// openError is the error of a device libusb could not open.
func openError(info usbdev.Info, err error) error {
	return mapError(context.Background(), "opening "+info.DevNode(), info, err)
}

// openFailure says why a device could not be opened to read its strings.
func openFailure(err error) string {
	if err == ErrAccess {
		return "no permission to open the device"
	}
	return "could not open the device: " + err.Error()
}
