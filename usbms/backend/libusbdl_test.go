//go:build !nousb && !libusb && (darwin || windows || (linux && libusbdl))

package backend

import "testing"

// TestLibusbdl: macOS and Windows, and Linux with -tags libusbdl, reach
// readers through libusb loaded at run time.
func TestLibusbdl(t *testing.T) {
	if Name != "libusbdl" {
		t.Errorf("Name %q", Name)
	}
}
