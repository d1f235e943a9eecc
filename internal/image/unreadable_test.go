package image

import (
	"bytes"
	"errors"
	"io"
	"testing"
)

// failingReader hands out n bytes, then fails as a dying disk or a dropped
// share does.
type failingReader struct {
	r   io.Reader
	n   int
	err error
}

func (f *failingReader) Read(p []byte) (int, error) {
	if f.n <= 0 {
		return 0, f.err
	}
	m, err := f.r.Read(p[:min(len(p), f.n)])
	f.n -= m
	return m, err
}

// TestUnreadableInput: when a raw image's input fails, the error is an
// *Error (the image could not be read: exit 4), not a bare error the CLI
// would count as its own bug, and it says where.
func TestUnreadableInput(t *testing.T) {
	disk := errors.New("input/output error")
	img := bytes.Repeat([]byte("usbflash"), 64<<10)
	src, err := New(&failingReader{r: bytes.NewReader(img), n: 4096, err: disk}, -1)
	if err != nil {
		t.Fatal(err)
	}
	_, err = io.Copy(io.Discard, src)
	var e *Error
	if !errors.As(err, &e) || e.Kind != ErrUnreadable || !errors.Is(err, disk) {
		t.Fatalf("err = %v, want an Unreadable *Error wrapping the input's error", err)
	}
}
