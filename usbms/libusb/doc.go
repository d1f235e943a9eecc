// Package libusb is the backend of the usbms.Endpoint seam over libusb-1.0
// through cgo, for the systems that have neither usbfs nor the run-time
// loaded libusb of usbms/libusbdl (the BSDs), and for any with -tags
// libusb (usbms/backend chooses): it finds USB mass-storage interfaces with libusb
// (through gousb), claims one, and moves Bulk-Only Transport traffic over
// its bulk endpoints through transfers allocated once per open, from usbfs
// DMA memory where it can. It drives Bulk-Only only (gousb has no bulk
// streams): an interface that offers nothing but UAS is listed as not
// supported (usbdev.ReasonUASOnLibusb). Every C call is in libusb_cgo.go,
// behind the usbHandle interface.
//
// Two builds exist. With cgo, without the nousb tag, and on Linux, macOS
// and Windows only with the libusb tag (their default backends are
// usbms/usbfs and usbms/libusbdl, neither of which needs cgo), the package
// talks to libusb-1.0. Otherwise (-tags nousb, CGO_ENABLED=0, or a Linux,
// macOS or Windows build without -tags libusb) every entry point returns
// usbdev.ErrNoUSBSupport. Its vocabulary
// (Info, OpenOptions, *usbdev.Error and its kinds, the kernel disks'
// in-use check) is usbms/usbdev's, shared with usbms/usbfs.
//
// Safety: List never claims anything. Open claims the interface only after it
// has checked, on Linux, that no partition of the kernel's disk behind that
// interface is mounted or held by another block device (dm, md), because
// detaching usb-storage pulls the disk from under a filesystem.
package libusb
