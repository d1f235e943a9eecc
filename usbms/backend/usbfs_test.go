//go:build linux && !libusb && !libusbdl && !nousb

package backend

import "testing"

// TestUsbfs: Linux's default build reaches readers through usbfs.
func TestUsbfs(t *testing.T) {
	if Name != "usbfs" {
		t.Errorf("Name %q, want usbfs", Name)
	}
}
