package libusb

import (
	"testing"
	"time"
)

func TestStreamChunk(t *testing.T) {
	tests := []struct {
		name      string
		opts      OpenOptions
		n, maxPkt int
		want      int
	}{
		{"defaults, fits one chunk", OpenOptions{}.withDefaults(), 1 << 20, 512, 0},
		{"defaults, larger than a chunk", OpenOptions{}.withDefaults(), 1<<20 + 1, 512, 1 << 20},
		{"SuperSpeed packets", OpenOptions{}.withDefaults(), 8 << 20, 1024, 1 << 20},
		{"streaming disabled", OpenOptions{OutStreamChunk: -1}.withDefaults(), 64 << 20, 512, 0},
		{"chunk rounded down to whole packets", OpenOptions{OutStreamChunk: 1000}, 5000, 512, 512},
		{"chunk smaller than a packet", OpenOptions{OutStreamChunk: 100}, 5000, 512, 512},
		{"odd packet size", OpenOptions{OutStreamChunk: 1 << 20}, 3 << 20, 1023, (1 << 20) / 1023 * 1023},
		{"unknown packet size", OpenOptions{}.withDefaults(), 64 << 20, 0, 0},
		{"CBW never streams", OpenOptions{}.withDefaults(), 31, 512, 0},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got := tc.opts.streamChunk(tc.n, tc.maxPkt)
			if got != tc.want {
				t.Fatalf("streamChunk(%d, %d) = %d, want %d", tc.n, tc.maxPkt, got, tc.want)
			}
			if got > 0 && got%tc.maxPkt != 0 {
				t.Fatalf("chunk %d is not a whole number of %d-byte packets", got, tc.maxPkt)
			}
		})
	}
}

func TestWithDefaults(t *testing.T) {
	got := OpenOptions{}.withDefaults()
	want := OpenOptions{ControlTimeout: 5 * time.Second, OutStreamChunk: 1 << 20, OutStreamDepth: 4, ReenumerateTimeout: 10 * time.Second}
	if got != want {
		t.Errorf("withDefaults = %+v, want %+v", got, want)
	}
	keep := OpenOptions{Force: true, ControlTimeout: time.Second, OutStreamChunk: -1, OutStreamDepth: 2, ReenumerateTimeout: time.Minute}
	if got := keep.withDefaults(); got != keep {
		t.Errorf("withDefaults changed set fields: %+v", got)
	}
}

func TestWholeChunks(t *testing.T) {
	tests := []struct{ n, chunk, want int }{
		{4 << 20, 1 << 20, 4 << 20},
		{4<<20 + 512, 1 << 20, 4 << 20},
		{3<<20 - 512, 1 << 20, 2 << 20},
		{100, 0, 0},
	}
	for _, tc := range tests {
		if got := wholeChunks(tc.n, tc.chunk); got != tc.want {
			t.Errorf("wholeChunks(%d, %d) = %d, want %d", tc.n, tc.chunk, got, tc.want)
		}
	}
}
