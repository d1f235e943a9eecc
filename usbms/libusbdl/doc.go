// Package libusbdl is the USB backend that loads libusb-1.0 at run time,
// without cgo (github.com/ebitengine/purego calls into it): the backend
// of the macOS and Windows builds, which are then cross-built with
// CGO_ENABLED=0 and run wherever libusb is installed (Homebrew's on
// macOS; libusb-1.0.dll beside usbflash.exe or on PATH on Windows). On
// Linux, usbms/backend selects it with -tags libusbdl, so that the code
// macOS and Windows run is driven against QEMU's readers too.
//
// It offers what usbms/usbfs and usbms/libusb offer, in their shared
// vocabulary (usbms/usbdev): List returns usbdev.Info values by the rules
// every backend lists by, Open takes usbdev.OpenOptions, and every error
// is a *usbdev.Error of usbdev's kinds, so that exit codes and advice do
// not depend on the backend. An opened Device is a usbms.Endpoint for
// Bulk-Only Transport and, opened in its UAS alternate setting, a
// usbms.UASEndpoint (bulk streams at SuperSpeed: libusb_alloc_streams,
// libusb 1.0.19); it keeps its own deadlines (usbms.DeadlineSetter) and
// hands out memory its transfers send as they are (usbms.BufferAllocator:
// usbfs device memory on Linux, page-aligned Go memory elsewhere).
//
// How it drives libusb: asynchronously, as libusb's own model has it.
// Each open has a libusb context of its own and one goroutine, locked to
// its OS thread, that handles the context's events
// (libusb_handle_events_timeout_completed); transfers are allocated once
// per open, submitted from the goroutine that moves the data, and
// complete on the event thread, which sees libusb's status and wakes
// their owner. No synchronous transfer runs beside it (control requests
// are asynchronous transfers too). Go memory handed to libusb is pinned
// (runtime.Pinner) for as long as libusb holds it. A command allocates
// nothing.
//
// What it promises an importer: List claims nothing. Open refuses, unless
// OpenOptions.Force, a reader of which the system has a mounted disk
// (usbdev.ErrInUse: Linux's sysfs, macOS's I/O Registry and mounts), and
// says why it cannot take one the system's driver holds
// (usbdev.ErrSystemDriver: on macOS that needs root and libusb 1.0.25; on
// Windows the reader must be bound to WinUSB). Without libusb every call
// fails with usbdev.ErrNoLibusb, which names where it was looked for.
package libusbdl
