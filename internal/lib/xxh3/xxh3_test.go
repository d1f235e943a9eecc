package xxh3

import (
	"slices"
	"testing"

	upstream "github.com/zeebo/xxh3"
)

// input is n bytes that differ from one position to the next.
func input(n int) []byte {
	b := make([]byte, n)
	x := uint32(2463534242)
	for i := range b {
		x ^= x << 13
		x ^= x >> 17
		x ^= x << 5
		b[i] = byte(x)
	}
	return b
}

// sizes are the lengths the hash has a branch for (0, 1-3, 4-8, 9-16,
// 17-128, 129-240, longer), their edges, whole and partial blocks and
// stripes, and a command's sizes.
var sizes = func() []int {
	s := []int{0, 1, 2, 3, 4, 7, 8, 9, 15, 16, 17, 63, 64, 65, 127, 128, 129, 200, 239, 240, 241, 255, 256, 257,
		511, 512, 1023, 1024, 1025, 1087, 1088, 1089, 2047, 2048, 2049, 4096, 4097, 8191, 16384 + 13,
		32 << 10, 64 << 10, (64 << 10) + 1, 120 << 10, 1 << 20, (1 << 20) + 512}
	for n := 241; n < 2200; n += 61 {
		s = append(s, n)
	}
	return s
}()

// TestAccumsMatchUpstream: every implementation this CPU runs gives
// upstream's hash for every size, in one call and fed in pieces of
// several sizes (the read-back hashes a range spread over reads).
func TestAccumsMatchUpstream(t *testing.T) {
	as := Accums()
	if as[0].Name() != "scalar" {
		t.Fatalf("Accums()[0] is %q, want the portable one first", as[0].Name())
	}
	data := input(slices.Max(sizes))
	for _, a := range as {
		t.Run(a.Name(), func(t *testing.T) {
			h := a.New128()
			for _, n := range sizes {
				b := data[:n]
				want := upstream.Hash128(b).Bytes()
				if got := a.Hash128(b).Bytes(); got != want {
					t.Errorf("Hash128 of %d bytes: %x, upstream %x", n, got, want)
				}
				for _, piece := range []int{1, 13, 64, 1000, 1024, 4096, 100000} {
					h.Reset()
					for p := b; len(p) > 0; {
						k := min(piece, len(p))
						if w, err := h.Write(p[:k]); w != k || err != nil {
							t.Fatalf("Write: %d, %v", w, err)
						}
						p = p[k:]
					}
					if got := h.Sum128().Bytes(); got != want {
						t.Errorf("%d bytes in pieces of %d: %x, upstream %x", n, piece, got, want)
					}
				}
			}
		})
	}
}

// TestVectorAccums: the vector code upstream would take on this CPU is
// among the choices, so that timing it against the portable code means
// something.
func TestVectorAccums(t *testing.T) {
	names := map[string]bool{}
	for _, a := range Accums() {
		names[a.Name()] = true
	}
	for _, want := range wantVector {
		if !names[want] {
			t.Errorf("Accums %v lack %q", names, want)
		}
	}
}

// BenchmarkAccums hashes a 1 MiB command with each implementation this
// CPU runs: what the engine's choice (pipeline's digestChoice) weighs.
func BenchmarkAccums(b *testing.B) {
	data := input(1 << 20)
	for _, a := range Accums() {
		b.Run(a.Name(), func(b *testing.B) {
			b.SetBytes(int64(len(data)))
			for b.Loop() {
				a.Hash128(data)
			}
		})
	}
}
