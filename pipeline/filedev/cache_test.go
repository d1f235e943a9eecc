package filedev

import "testing"

func TestDiskNodes(t *testing.T) {
	tests := []struct{ in, raw, buffered string }{
		{"/dev/disk4", "/dev/rdisk4", "/dev/disk4"},
		{"/dev/rdisk4", "/dev/rdisk4", "/dev/disk4"},
		{"/dev/sdb", "/dev/sdb", "/dev/sdb"},
	}
	for _, tt := range tests {
		if raw, buffered := diskNodes(tt.in); raw != tt.raw || buffered != tt.buffered {
			t.Errorf("diskNodes(%q) = %q, %q, want %q, %q", tt.in, raw, buffered, tt.raw, tt.buffered)
		}
	}
}

func TestOpenRefusesUnknownCache(t *testing.T) {
	if d, err := Open(t.TempDir(), Options{Cache: CacheUse + 1}); err == nil {
		d.Close()
		t.Fatal("an unknown cache mode was accepted")
	}
}
