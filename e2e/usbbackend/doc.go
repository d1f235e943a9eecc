// Package usbbackend is the e2e probes' (stallprobe, devbench) one seam to the
// USB backend, chosen by the same build tags as target's: usbms/usbfs on
// Linux, usbms/libusb with -tags libusb and on other systems. The suite
// builds the probes with the backend of the usbflash binary under test.
package usbbackend
