package image

import (
	"bytes"
	"io"
	"syscall"
	"testing"
)

// faultyReaderAt refuses to read into one particular buffer, as the kernel
// refuses to read a 9p file into usbfs mmap memory (EFAULT).
type faultyReaderAt struct {
	data    []byte
	refused []byte
}

func (f *faultyReaderAt) ReadAt(p []byte, off int64) (int, error) {
	if len(p) > 0 && len(f.refused) > 0 && &p[0] == &f.refused[0] {
		return 0, syscall.EFAULT
	}
	if off >= int64(len(f.data)) {
		return 0, io.EOF
	}
	n := copy(p, f.data[off:])
	if n < len(p) {
		return n, io.EOF
	}
	return n, nil
}

func TestBounceReaderAt(t *testing.T) {
	data := bytes.Repeat([]byte("usbflash"), (3*bounceSize)/8+5)
	for _, tc := range []struct {
		name string
		off  int64
		n    int
	}{
		{"small", 100, 4096},
		{"larger than the bounce buffer", 7, 2*bounceSize + 123},
		{"to the end", int64(len(data) - 1000), 4096},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dst := make([]byte, tc.n)
			b := &bounceReaderAt{ra: &faultyReaderAt{data: data, refused: dst}}
			n, err := b.ReadAt(dst, tc.off)
			want := data[tc.off:min(int(tc.off)+tc.n, len(data))]
			if n != len(want) || !bytes.Equal(dst[:n], want) {
				t.Fatalf("read %d bytes (err %v), want %d equal to the file", n, err, len(want))
			}
			if n < tc.n && err != io.EOF {
				t.Errorf("short read ended with %v, want io.EOF", err)
			}
		})
	}
}
