package aligned

import (
	"testing"
	"unsafe"
)

func TestBytesAligned(t *testing.T) {
	for _, n := range []int{0, 1, 511, 4096, 1<<20 + 7} {
		b := Bytes(n)
		if len(b) != n || cap(b) != n {
			t.Errorf("Bytes(%d): len %d cap %d", n, len(b), cap(b))
		}
		if n == 0 {
			continue
		}
		if p := uintptr(unsafe.Pointer(unsafe.SliceData(b))); p%uintptr(Alignment()) != 0 {
			t.Errorf("Bytes(%d) at %#x is not %d-aligned", n, p, Alignment())
		}
	}
	if Alignment() < 4096 || Alignment()&(Alignment()-1) != 0 {
		t.Errorf("Alignment() = %d, want a power of two >= 4096", Alignment())
	}
}
