package image

import (
	"archive/zip"
	"bytes"
	"errors"
	"io"
	"testing"

	"github.com/usbflash/usbflash/internal/testkit/testimage"
)

// FuzzOpen feeds arbitrary bytes through sniffing, size probing and
// decoding, both seekable and as a stream. Nothing may panic, and a
// *SourceError must point inside the input.
func FuzzOpen(f *testing.F) {
	img := genOSImage(3000, 5)
	seeds := [][]byte{img, []byte("\x1f"), []byte("PK\x05\x06"), []byte("BZh9")}
	if b, err := srcGzipGo(img); err == nil {
		seeds = append(seeds, b)
	}
	if b, err := srcXzGo(img); err == nil {
		seeds = append(seeds, b)
	}
	if b, err := srcZstdGo(img); err == nil {
		seeds = append(seeds, b, srcConcat(srcSkippableFrame([]byte("x")), b))
	}
	var z bytes.Buffer
	w := zip.NewWriter(&z)
	if e, err := w.Create("a.img"); err == nil {
		e.Write(img)
	}
	w.Close()
	seeds = append(seeds, z.Bytes())
	// lz4, 7z (7-Zip's own) and tar, plain and compressed.
	for _, format := range []string{"lz4", "7z", "tar", "tar.gzip"} {
		seeds = append(seeds, testimage.Compress(f, format, img))
	}
	for _, s := range seeds {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		for _, seekable := range []bool{true, false} {
			var s *Source
			var err error
			if seekable {
				s, err = New(bytes.NewReader(data), int64(len(data)))
			} else {
				s, err = New(struct{ io.Reader }{bytes.NewReader(data)}, -1)
			}
			if err == nil {
				// Bound the output: a few input bytes may legally decode
				// to gigabytes of zeros, and each exec must stay fast.
				_, err = io.CopyN(io.Discard, s, 4<<20)
				s.Close()
			}
			var se *Error
			if errors.As(err, &se) && (se.Offset < 0 || se.Offset > int64(len(data)) || se.Decoded < 0) {
				t.Fatalf("SourceError outside the %d-byte input: %+v", len(data), se)
			}
			_ = errOrNil(err)
		}
	})
}

// errOrNil formats err, which must not panic either.
func errOrNil(err error) string {
	if err == nil {
		return ""
	}
	return err.Error()
}
