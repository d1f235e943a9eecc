// Package usbms drives USB mass-storage readers from user space: it carries
// SCSI commands to a reader over Bulk-Only Transport (BOT) or USB Attached
// SCSI (UAS), brings back a reader that stops answering, and offers each of
// its logical units (a card slot) as a blockdev.Device that reads and
// writes blocks, with no operating-system block layer in between.
//
// From the wire up:
//
//   - Endpoint, and UASEndpoint for an interface opened in its UAS
//     alternate setting, is all it needs from USB. The backends implement
//     it: usbms/usbfs (Linux usbfs, pure Go; BOT and UAS), usbms/libusbdl
//     (libusb-1.0 loaded at run time without cgo, the backend of macOS and
//     Windows; BOT and UAS), usbms/libusb (libusb-1.0 through cgo; BOT),
//     and usbms/sim, an in-process reader
//     on which every path of this package is tested; usbms/backend is the
//     one place a build chooses its real backend.
//   - Transport runs one reader's commands over the protocol its Endpoint
//     was opened in (NewTransport): BOT's command and status wrappers, or
//     UAS's information units on four pipes, queued on bulk streams at
//     SuperSpeed. Both climb one recovery ladder (reset recovery or ABORT
//     TASK, then a port reset) and keep the leniencies Linux has for
//     readers that depart from the specs. ChooseTransport decides which
//     protocol a reader is opened in; ReaderSetup gives it its quirk
//     flags, from Linux's table of the protocol driven (usb-storage's
//     unusual_devs.h for BOT, uas's unusual_uas.h for UAS) and the user's
//     overrides, in the kernel's syntax.
//   - LUN (OpenLUN, ProbeLUNs) is one logical unit, opened with the
//     commands Linux sends a USB disk; ReadBlocks and WriteBlocks go out
//     in as few commands as the CDB and the reader allow, with the sense
//     policy of Linux's sd (what is retried, waited for or final).
//
// What it promises an importer:
//
//   - Errors state facts (what failed, on which device, LUN and blocks)
//     and are told apart with errors.Is against exported sentinels (this
//     package's ErrRecoveryFailed, ErrMediumChanged, ErrNotReady,
//     ErrNoDevice, ...; blockdev.ErrWriteProtected and ErrBadBlock; the
//     backends' usbdev kinds) or taken apart with errors.As
//     (*CommandError, *scsi.SenseError). No message gives advice or names a
//     command-line flag.
//   - Every call that touches the reader takes a context.Context; a
//     cancelled one ends the command in flight and leaves the reader able
//     to take the next (a sync after Ctrl-C).
//   - A Transport is safe for concurrent use: commands are serialised (a
//     UAS transport keeps up to its queue depth of one LUN's READs or
//     WRITEs in flight). A LUN's methods are called from one goroutine at
//     a time.
//   - ReadBlocks and WriteBlocks move the caller's memory as it is, with
//     no copy of their own; LUN.AllocBuffers gives memory the backend
//     sends without one either, where it can. Over Bulk-Only, on an
//     Endpoint that keeps its own deadlines (DeadlineSetter, as both
//     backends do), a READ or WRITE allocates nothing; on another, only
//     its timeout's context and timer.
package usbms
