// Package usbfs reaches USB mass-storage readers on Linux through usbfs
// (/dev/bus/usb/BBB/DDD ioctls) and sysfs, in pure Go, so that usbflash
// builds as one static binary (CGO_ENABLED=0) with no libusb. It is the
// Linux default; -tags libusb selects usbms/libusb instead.
//
// It offers the surface of usbms/libusb in the vocabulary both share
// (usbms/usbdev): List returns usbdev.Info values, Open takes
// usbdev.OpenOptions, and errors are *usbdev.Error of usbdev's kinds, so
// the CLI's classification and advice apply to both alike. Only Linux has
// usbfs: elsewhere the package is empty.
package usbfs
