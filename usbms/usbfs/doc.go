// Package usbfs reaches USB mass-storage readers on Linux through usbfs
// (/dev/bus/usb/BBB/DDD ioctls) and sysfs, in pure Go, so that usbflash
// builds as one static binary (CGO_ENABLED=0) with no libusb. It is the
// Linux default backend (usbms/backend chooses it); -tags libusb selects
// usbms/libusb instead.
//
// It offers the surface of usbms/libusb in the vocabulary both share
// (usbms/usbdev): List returns usbdev.Info values, Open takes
// usbdev.OpenOptions, and errors are *usbdev.Error of usbdev's kinds, so
// the CLI's classification and advice apply to both alike. An opened
// Device is a usbms.Endpoint for Bulk-Only Transport and, opened with
// OpenOptions.UAS in the interface's UAS alternate setting, a
// usbms.UASEndpoint (asynchronous URBs, bulk streams at SuperSpeed); it
// sends from usbfs memory without a copy where the kernel gives it
// (usbms.BufferAllocator) and keeps its own deadlines
// (usbms.DeadlineSetter).
//
// What it promises an importer: List and Access claim nothing; Open
// claims the interface only after checking that no disk the kernel made of
// it is mounted, swapped on or held (usbdev.ErrInUse) unless
// OpenOptions.Force, and Close gives it back to the kernel's driver. Only
// Linux has usbfs: elsewhere the package is empty.
package usbfs
