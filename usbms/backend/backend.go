// Package backend is the one place a build chooses how it reaches USB
// readers: every program of the module that lists or opens a real reader
// (the CLI through internal/drive, the e2e probes) goes through it, so a
// build tag means the same backend everywhere.
//
// The choice, by build tags:
//
//   - Linux, by default: usbms/usbfs, pure Go over usbfs and sysfs (a static
//     CGO_ENABLED=0 binary), Bulk-Only and UAS (usbfs.go).
//   - macOS and Windows, by default, and Linux with -tags libusbdl:
//     usbms/libusbdl, libusb-1.0 loaded at run time without cgo (a
//     CGO_ENABLED=0 binary that runs where libusb is installed), Bulk-Only
//     and UAS (libusbdl.go).
//   - -tags libusb, and the other systems (the BSDs): usbms/libusb,
//     libusb-1.0 through cgo (gousb), Bulk-Only (libusb.go). Without cgo
//     usbms/libusb is its stub, whose every entry point returns
//     usbdev.ErrNoUSBSupport.
//   - -tags nousb: none; List and Open return usbdev.ErrNoUSBSupport, and
//     sim: and file: targets are all there is (none.go).
//
// Every backend speaks usbms/usbdev's vocabulary (Info, OpenOptions,
// *usbdev.Error and its kinds), so what callers do with a reader does not
// depend on the backend.
package backend

import "github.com/usbflash/usbflash/usbms"

// Device is an opened reader of this build's backend: the usbms.Endpoint
// of its mass-storage interface, which the caller closes. The backend's
// own type is behind it, with the optional interfaces it has
// (usbms.UASEndpoint, usbms.BufferAllocator, usbms.DeadlineSetter), which
// usbms asks for with type assertions.
type Device interface {
	usbms.Endpoint
	// Close releases the interface and gives it back to the kernel's
	// driver when it held it.
	Close() error
}
