// Package usbfs reaches USB mass-storage readers on Linux through usbfs
// (/dev/bus/usb/BBB/DDD ioctls) and sysfs, in pure Go, so that usbflash
// builds as one static binary (CGO_ENABLED=0) with no libusb. It is the
// Linux default; -tags libusb selects usbms/libusb instead.
//
// It offers the surface of usbms/libusb and reuses its types: List returns
// libusb.Info values, Open takes libusb.OpenOptions, and errors are
// *libusb.Error with libusb's kinds (those files of usbms/libusb are pure
// Go and build without cgo). Only Linux has usbfs: elsewhere the package
// is empty.
package usbfs
