package image

import (
	"bytes"
	"errors"
	"io"
	"os"
	"strings"
	"testing"
	"time"
)

// TestCheckUnchanged: an image modified, resized, replaced or removed
// while it was read is reported; an untouched one is not.
func TestCheckUnchanged(t *testing.T) {
	img := genOSImage(256<<10, 3)
	later := time.Now().Add(time.Minute)
	for _, tt := range []struct {
		name   string
		change func(t *testing.T, p string)
		want   string // "" means unchanged
	}{
		{"untouched", func(*testing.T, string) {}, ""},
		{"read again", func(t *testing.T, p string) { os.ReadFile(p) }, ""},
		{"written in place, same size", func(t *testing.T, p string) {
			f, err := os.OpenFile(p, os.O_WRONLY, 0)
			if err != nil {
				t.Fatal(err)
			}
			f.WriteAt([]byte("overwritten"), 16)
			f.Close()
			os.Chtimes(p, later, later) // a coarse clock may not tick between
		}, "it was modified at"},
		{"grown", func(t *testing.T, p string) {
			f, err := os.OpenFile(p, os.O_WRONLY|os.O_APPEND, 0)
			if err != nil {
				t.Fatal(err)
			}
			f.Write([]byte("more"))
			f.Close()
		}, "its size went from"},
		{"replaced", func(t *testing.T, p string) {
			n := p + ".new"
			if err := os.WriteFile(n, img, 0o644); err != nil {
				t.Fatal(err)
			}
			if err := os.Rename(n, p); err != nil {
				t.Fatal(err)
			}
		}, "was replaced by another file"},
		{"removed", func(t *testing.T, p string) { os.Remove(p) }, "is no longer there"},
	} {
		for _, format := range []string{"raw", "xz"} {
			data := img
			if format == "xz" {
				var err error
				if data, err = srcXzGo(img); err != nil {
					t.Fatal(err)
				}
			}
			p := tempImage(t, data)
			s, err := OpenFile(p)
			if err != nil {
				t.Fatal(err)
			}
			if fi, ok := s.FileInfo(); !ok || fi.Size() != int64(len(data)) {
				t.Errorf("%s %s: FileInfo %v, %v", tt.name, format, fi, ok)
			}
			io.CopyN(io.Discard, s, 1000)
			tt.change(t, p)
			err = s.CheckUnchanged()
			s.Close()
			var se *Error
			switch {
			case tt.want == "" && err != nil:
				t.Errorf("%s %s: %v", tt.name, format, err)
			case tt.want != "" && (!errors.As(err, &se) || se.Kind != ErrChanged || !strings.Contains(err.Error(), tt.want) ||
				!strings.HasPrefix(err.Error(), "image changed while it was being written: ")):
				t.Errorf("%s %s: error %v, want an *Error saying %q", tt.name, format, err, tt.want)
			}
		}
	}
}

// TestCheckUnchangedStream: a stream has no file to compare.
func TestCheckUnchangedStream(t *testing.T) {
	s, err := New(bytes.NewReader(genOSImage(4096, 1)), 4096)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	if _, ok := s.FileInfo(); ok {
		t.Error("FileInfo of a reader")
	}
	if err := s.CheckUnchanged(); err != nil {
		t.Error(err)
	}
}

// TestRawImageChangedWhileRead: a raw image that shrinks under the reader
// is a changed image, not a damaged archive. (Growth is not read: a raw
// file is read up to its size at Open, and CheckUnchanged reports it.)
func TestRawImageChangedWhileRead(t *testing.T) {
	img := genOSImage(256<<10, 4)
	for _, tt := range []struct {
		name   string
		change func(p string) error
		want   string
	}{
		{"shrunk", func(p string) error { return os.Truncate(p, 100<<10) }, "ended after 102400"},
	} {
		p := tempImage(t, img)
		s, err := OpenFile(p)
		if err != nil {
			t.Fatal(err)
		}
		if err := tt.change(p); err != nil {
			t.Fatal(err)
		}
		_, err = io.Copy(io.Discard, s)
		s.Close()
		var se *Error
		if !errors.As(err, &se) || se.Kind != ErrChanged || !strings.Contains(err.Error(), tt.want) {
			t.Errorf("%s: error %v, want a Changed *Error saying %q", tt.name, err, tt.want)
		}
	}
}
