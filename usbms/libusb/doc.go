// Package libusb is the real-hardware backend of the usbms.Endpoint seam: it
// finds USB mass-storage interfaces with libusb (through gousb), claims one,
// and moves Bulk-Only Transport traffic over its bulk endpoints through
// transfers allocated once per open, from usbfs DMA memory where it can.
// Every C call is in libusb_cgo.go, behind the usbHandle interface.
//
// Two builds exist. With cgo and without the nousb tag the package talks to
// libusb-1.0. Built with -tags nousb, or with CGO_ENABLED=0, every entry point
// returns ErrNoUSBSupport so the rest of usbflash (sim: and file: targets)
// still works. The types, the errors and the sysfs inspection (KernelDisks)
// are shared by both builds.
//
// Safety: List never claims anything. Open claims the interface only after it
// has checked, on Linux, that no partition of the kernel's disk behind that
// interface is mounted or held by another block device (dm, md), because
// detaching usb-storage pulls the disk from under a filesystem.
package libusb
