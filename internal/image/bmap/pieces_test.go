package bmap

import (
	"fmt"
	"testing"

	"github.com/usbflash/usbflash/pipeline/blockdev"
)

type ext = blockdev.Extent

func TestMapPieces(t *testing.T) {
	const K = 1024
	// Blocks of 4 KiB: mapped 0-1, 4, 10-11, 40; the image ends 100
	// bytes into block 40.
	m := &Map{ImageSize: 40*4*K + 100, BlockSize: 4 * K, Ranges: []Range{
		{First: 0, Last: 1}, {First: 4, Last: 4}, {First: 10, Last: 11}, {First: 40, Last: 40}}}
	tests := []struct {
		name     string
		off, n   int64
		gap      int64
		want     []ext
		preclude []ext // already in into
	}{
		{name: "every range in the transfer, no joining", off: 0, n: 64 * K, gap: 0,
			want: []ext{{Off: 0, Len: 8 * K}, {Off: 16 * K, Len: 4 * K}, {Off: 40 * K, Len: 8 * K}}},
		{name: "a gap shorter than gap is written through", off: 0, n: 64 * K, gap: 9 * K,
			want: []ext{{Off: 0, Len: 20 * K}, {Off: 40 * K, Len: 8 * K}}},
		{name: "a gap as long as gap is left out", off: 0, n: 64 * K, gap: 8 * K,
			want: []ext{{Off: 0, Len: 8 * K}, {Off: 16 * K, Len: 4 * K}, {Off: 40 * K, Len: 8 * K}}},
		{name: "every gap joined", off: 0, n: 64 * K, gap: 128 * K,
			want: []ext{{Off: 0, Len: 48 * K}}},
		{name: "ranges cut at the transfer's edges", off: 4 * K, n: 40 * K, gap: 0,
			want: []ext{{Off: 4 * K, Len: 4 * K}, {Off: 16 * K, Len: 4 * K}, {Off: 40 * K, Len: 4 * K}}},
		{name: "a transfer with no mapped byte", off: 64 * K, n: 64 * K, gap: 128 * K, want: nil},
		{name: "between two ranges, touching neither", off: 20 * K, n: 20 * K, gap: 128 * K, want: nil},
		{name: "the short last block ends at the image's end", off: 128 * K, n: 64 * K, gap: 0,
			want: []ext{{Off: 160 * K, Len: 100}}},
		{name: "appended to what into holds", off: 0, n: 8 * K, gap: 0,
			preclude: []ext{{Off: -100, Len: 1}}, want: []ext{{Off: -100, Len: 1}, {Off: 0, Len: 8 * K}}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got := m.Pieces(tc.gap)(tc.off, make([]byte, tc.n), tc.preclude)
			if fmt.Sprint(got) != fmt.Sprint(tc.want) {
				t.Errorf("Pieces = %v, want %v", got, tc.want)
			}
		})
	}
}

func TestSparsePieces(t *testing.T) {
	const K = 1024
	// image builds a transfer of n bytes with a non-zero byte at each of
	// the offsets given.
	image := func(n int, at ...int) []byte {
		b := make([]byte, n)
		for _, i := range at {
			b[i] = 1
		}
		return b
	}
	tests := []struct {
		name string
		off  int64
		b    []byte
		gap  int64
		want []ext
	}{
		{"all zero: not written", 1 << 20, image(64 * K), 128 * K, nil},
		{"one byte makes its 4 KiB block written", 1 << 20, image(64*K, 5*K+7), 0,
			[]ext{{Off: 1<<20 + 4*K, Len: 4 * K}}},
		{"the last byte of a block, the first of the next", 0, image(64*K, 4*K-1, 4*K), 0,
			[]ext{{Off: 0, Len: 8 * K}}},
		{"blocks apart, gap 0: separate pieces", 0, image(64*K, 0, 12*K), 0,
			[]ext{{Off: 0, Len: 4 * K}, {Off: 12 * K, Len: 4 * K}}},
		{"a gap shorter than gap is written through", 0, image(64*K, 0, 12*K), 8*K + 1,
			[]ext{{Off: 0, Len: 16 * K}}},
		{"a gap as long as gap is left out", 0, image(64*K, 0, 12*K), 8 * K,
			[]ext{{Off: 0, Len: 4 * K}, {Off: 12 * K, Len: 4 * K}}},
		{"a short tail is its own block", 0, image(10*K, 9*K), 0,
			[]ext{{Off: 8 * K, Len: 2 * K}}},
		{"the last byte of the transfer", 0, image(64*K, 64*K-1), 0,
			[]ext{{Off: 60 * K, Len: 4 * K}}},
		{"everything", 0, image(16*K, 0, 4*K, 8*K, 12*K), 0,
			[]ext{{Off: 0, Len: 16 * K}}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got := SparsePieces(tc.gap)(tc.off, tc.b, nil)
			if fmt.Sprint(got) != fmt.Sprint(tc.want) {
				t.Errorf("SparsePieces = %v, want %v", got, tc.want)
			}
		})
	}
}

// TestPiecesAllocateNothing: the pieces are chosen on the decoding
// goroutine for every transfer; with room in into, nothing is allocated.
func TestPiecesAllocateNothing(t *testing.T) {
	m := &Map{ImageSize: 1 << 20, BlockSize: 4096, Ranges: []Range{{First: 0, Last: 3}, {First: 100, Last: 120}}}
	b := make([]byte, 1<<20)
	b[5000], b[500000] = 1, 1
	into := make([]ext, 0, 16)
	for name, f := range map[string]PieceFunc{"map": m.Pieces(0), "sparse": SparsePieces(0)} {
		if n := testing.AllocsPerRun(10, func() { into = f(0, b, into[:0]) }); n != 0 {
			t.Errorf("%s: %v allocations per transfer", name, n)
		}
	}
}

func TestAllZero(t *testing.T) {
	for _, n := range []int{0, 1, ZeroBlock - 1, ZeroBlock, 3*ZeroBlock + 5} {
		b := make([]byte, n)
		if !allZero(b) {
			t.Errorf("%d zeros: not all zero", n)
		}
		if n > 0 {
			b[n-1] = 1
			if allZero(b) {
				t.Errorf("%d bytes ending in 1: all zero", n)
			}
		}
	}
}
