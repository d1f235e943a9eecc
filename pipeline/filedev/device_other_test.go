//go:build !linux

package filedev

import "testing"

// checkDirect has nothing to compare with off Linux: the portable
// FileDevice never uses direct I/O.
func checkDirect(t *testing.T, dev *Device) {
	t.Helper()
	if dev.Direct() {
		t.Errorf("Direct() = true on a platform without O_DIRECT support")
	}
}
