package pipeline

import (
	"bytes"
	"io"
	"testing"
	"unsafe"

	"usbflash/internal/aligned"
)

func TestAlignedBuffersRing(t *testing.T) {
	for _, tc := range []struct{ count, size int }{{2, 512}, {3, 4096}, {5, 8192 + 512}, {2, 1 << 20}} {
		r := newRing(alignedBuffers(tc.count, tc.size))
		if len(r.bufs) != tc.count || len(r.free) != tc.count {
			t.Fatalf("%+v: %d buffers, %d free", tc, len(r.bufs), len(r.free))
		}
		for i, b := range r.bufs {
			if len(b) != tc.size || cap(b) != tc.size {
				t.Errorf("%+v: buffer %d len %d cap %d", tc, i, len(b), cap(b))
			}
			if p := uintptr(unsafe.Pointer(unsafe.SliceData(b))); p%uintptr(aligned.Alignment()) != 0 {
				t.Errorf("%+v: buffer %d at %#x is not %d-aligned", tc, i, p, aligned.Alignment())
			}
		}
		// Buffers must not overlap: fill each with its index and read back.
		for i, b := range r.bufs {
			for j := range b {
				b[j] = byte(i + 1)
			}
		}
		for i, b := range r.bufs {
			if bytes.Count(b, []byte{byte(i + 1)}) != len(b) {
				t.Errorf("%+v: buffer %d was overwritten by another", tc, i)
			}
		}
	}
}

// TestRingSteadyStateAllocs proves the hot path allocates nothing per
// buffer: 1024 more buffers through Write must cost no more allocations
// (a little slack for the runtime's own, unrelated ones).
func TestRingSteadyStateAllocs(t *testing.T) {
	if testing.Short() {
		t.Skip("allocation counting is slow-ish")
	}
	if per := allocsPerBuffer(t, 4096); per > 0.01 {
		t.Fatalf("%.3f allocations per buffer, want 0", per)
	}
}

// zeroNilReader returns 0, nil forever: readFull must give up, not spin.
type zeroNilReader struct{}

func (zeroNilReader) Read([]byte) (int, error) { return 0, nil }

func TestReadFull(t *testing.T) {
	for _, tc := range []struct {
		name  string
		r     io.Reader
		size  int
		wantN int
		err   error
	}{
		{"fills", bytes.NewReader(make([]byte, 100)), 64, 64, nil},
		{"exact then nothing", bytes.NewReader(make([]byte, 64)), 64, 64, nil},
		{"short is EOF, not unexpected", bytes.NewReader(make([]byte, 10)), 64, 10, io.EOF},
		{"source's own unexpected EOF passes through", io.MultiReader(bytes.NewReader(make([]byte, 5)), errReader{io.ErrUnexpectedEOF}), 64, 5, io.ErrUnexpectedEOF},
		{"no progress", zeroNilReader{}, 8, 0, io.ErrNoProgress},
	} {
		n, err := readFull(tc.r, make([]byte, tc.size))
		if n != tc.wantN || err != tc.err {
			t.Errorf("%s: readFull = %d, %v; want %d, %v", tc.name, n, err, tc.wantN, tc.err)
		}
	}
}

type errReader struct{ err error }

func (e errReader) Read([]byte) (int, error) { return 0, e.err }
