// Package e2e runs the real usbflash binary inside a QEMU Linux guest against
// QEMU's emulated USB mass storage (usb-storage, usb-bot + scsi-hd) and checks
// the backing files on the host byte for byte.
//
// Every file but this one carries the build tag "e2e", so a plain `go test
// ./...` does not boot anything. Run:
//
//	go test -tags e2e ./e2e/ -v
//
// See README.md in this directory.
package e2e
