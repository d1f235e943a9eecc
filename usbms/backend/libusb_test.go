//go:build !nousb && (libusb || !(linux || darwin || windows))

package backend

import "testing"

// TestLibusb: -tags libusb, and every system but Linux, reach readers
// through libusb.
func TestLibusb(t *testing.T) {
	if Name != "libusb" {
		t.Errorf("Name %q, want libusb", Name)
	}
}
