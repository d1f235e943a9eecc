package units

import "testing"

func TestParseSize(t *testing.T) {
	tests := []struct {
		in      string
		want    int64
		wantErr bool
	}{
		{"512", 512, false},
		{"4k", 4096, false},
		{"4KiB", 4096, false},
		{"120 KiB", 120 << 10, false},
		{"32MiB", 32 << 20, false},
		{"64M", 64 << 20, false},
		{"1GB", 1e9, false},
		{"1.5GiB", 3 << 29, false},
		{"", 0, true},
		{"MiB", 0, true},
		{"12parsecs", 0, true},
		{"99999999999999999999", 0, true},
		{"9999999999T", 0, true},
	}
	for _, tt := range tests {
		got, err := ParseSize(tt.in)
		if (err != nil) != tt.wantErr || got != tt.want {
			t.Errorf("ParseSize(%q) = %d, %v; want %d, err=%v", tt.in, got, err, tt.want, tt.wantErr)
		}
	}
}

func TestParseRate(t *testing.T) {
	tests := []struct {
		in   string
		want float64
	}{
		{"30MB/s", 30e6},
		{"40MiB/s", 40 << 20},
		{"1e6", 1e6},
		{"2500000/s", 2.5e6},
	}
	for _, tt := range tests {
		got, err := ParseRate(tt.in)
		if err != nil || got != tt.want {
			t.Errorf("ParseRate(%q) = %v, %v; want %v", tt.in, got, err, tt.want)
		}
	}
	if _, err := ParseRate("fast"); err == nil {
		t.Error(`ParseRate("fast") succeeded`)
	}
}

func TestFormatSize(t *testing.T) {
	tests := []struct {
		in   int64
		want string
	}{
		{0, "0 B"}, {512, "512 B"}, {4096, "4 KiB"}, {120 << 10, "120 KiB"},
		{3 << 29, "1.5 GiB"}, {64 << 20, "64 MiB"},
	}
	for _, tt := range tests {
		if got := FormatSize(tt.in); got != tt.want {
			t.Errorf("FormatSize(%d) = %q, want %q", tt.in, got, tt.want)
		}
	}
}

func TestFormatBytes(t *testing.T) {
	for _, tt := range []struct {
		n    int64
		want string
	}{
		{0, "0 B"}, {999, "999 B"}, {1000, "1.00 kB"}, {1 << 20, "1.05 MB"}, {33554432, "33.6 MB"},
		{4 << 30, "4.29 GB"}, {64 << 20, "67.1 MB"},
	} {
		if got := FormatBytes(tt.n); got != tt.want {
			t.Errorf("FormatBytes(%d) = %q, want %q", tt.n, got, tt.want)
		}
	}
}

func TestFormatBytesPair(t *testing.T) {
	for _, tt := range []struct {
		a, b   int64
		sa, sb string
		exact  bool
	}{
		{33554456, 33554432, "33554456 bytes", "33554432 bytes", true}, // 24 bytes short
		{100000256, 99999744, "100000256 bytes", "99999744 bytes", true},
		{8 << 30, 8 << 30, "8.59 GB", "8.59 GB", false}, // the same amount: no need
		{8e9, 16e9, "8.00 GB", "16.0 GB", false},
		{999, 1000, "999 B", "1.00 kB", false},
		{1001, 1002, "1001 bytes", "1002 bytes", true},
	} {
		sa, sb, exact := FormatBytesPair(tt.a, tt.b)
		if sa != tt.sa || sb != tt.sb || exact != tt.exact {
			t.Errorf("FormatBytesPair(%d, %d) = %q, %q, %v; want %q, %q, %v", tt.a, tt.b, sa, sb, exact, tt.sa, tt.sb, tt.exact)
		}
	}
}
