// Package usbdev is the USB vocabulary both backends share (usbms/usbfs,
// pure Go over Linux usbfs, and usbms/libusb, cgo): a mass-storage
// interface's identity (Info), its speed and class codes, the options of
// an open, the kinds of error a backend reports (*Error and its
// sentinels), and the kernel's disks made from an interface with the
// in-use check a backend makes before its claim. It has no I/O of its own
// beyond reading sysfs and the mount table.
//
// What it promises an importer: a backend's every failure is an *Error
// whose Kind is one of the sentinels here (or usbms's, or a context
// error), matched with errors.Is, so that what a failure means does not
// depend on the backend; the texts state facts, never advice.
package usbdev
