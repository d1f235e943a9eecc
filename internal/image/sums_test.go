package image

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"io"
	"os"
	"path/filepath"
	"testing"

	"github.com/usbflash/usbflash/internal/testkit/testfifo"
)

// TestSourceSums (issue 31 items 5b, 5c): a Source tells its input's
// SHA-256 and its decoded image's, a file's read again from the open
// descriptor at any time, a stream's as it was read once (bytes past the
// container's end included, which the decoder never asked for); a stream
// nobody asked to hash, or not yet read to its end, says so.
func TestSourceSums(t *testing.T) {
	img := genOSImage(1<<20+333, 21)
	xzed := srcCompress(t, srcCodecs[1], img)
	gzipped := srcCompress(t, srcCodecs[0], img)
	zstded := srcCompress(t, srcCodecs[2], img)
	padded := srcConcat(xzed, make([]byte, 8)) // xz stream padding
	hexOf := func(b []byte) string { s := sha256.Sum256(b); return hex.EncodeToString(s[:]) }
	for _, tc := range []struct {
		name, file string
		data       []byte
		fifo, hash bool
		early      error // InputSHA256 before reading: nil means the sum
	}{
		{"raw file", "os.img", img, false, false, nil},
		{"xz file", "os.img.xz", xzed, false, false, nil},
		{"raw FIFO", "os.img", img, true, true, errNotEnded},
		{"xz FIFO", "os.img.xz", xzed, true, true, errNotEnded},
		{"xz FIFO with stream padding", "os.img.xz", padded, true, true, errNotEnded},
		{"gzip FIFO", "os.img.gz", gzipped, true, true, errNotEnded},
		{"zstd FIFO", "os.img.zst", zstded, true, true, errNotEnded},
		{"xz FIFO not hashed", "os.img.xz", xzed, true, false, ErrNotHashed},
	} {
		t.Run(tc.name, func(t *testing.T) {
			path := filepath.Join(t.TempDir(), tc.file)
			if tc.fifo {
				testfifo.Make(t, path, tc.data)
			} else if err := os.WriteFile(path, tc.data, 0o644); err != nil {
				t.Fatal(err)
			}
			s, err := OpenWith(path, Options{HashStream: tc.hash})
			if err != nil {
				t.Fatal(err)
			}
			defer s.Close()
			ctx := context.Background()
			if s.Stream() != tc.fifo {
				t.Errorf("Stream() = %v", s.Stream())
			}
			sum, err := s.InputSHA256(ctx)
			switch {
			case tc.early == nil && (err != nil || sum != hexOf(tc.data)):
				t.Errorf("before reading: %s, %v; want the file's sum", sum, err)
			case tc.early != nil && !errors.Is(err, tc.early):
				t.Errorf("before reading: %s, %v; want %v", sum, err, tc.early)
			}
			got, err := io.ReadAll(s)
			if err != nil || len(got) != len(img) {
				t.Fatalf("read %d bytes: %v", len(got), err)
			}
			input, err := s.InputSHA256(ctx)
			decoded, derr := s.DecodedSHA256(ctx)
			if !tc.hash && tc.fifo {
				if !errors.Is(err, ErrNotHashed) || !errors.Is(derr, ErrNotHashed) {
					t.Errorf("a stream not hashed: %v, %v", err, derr)
				}
				return
			}
			if err != nil || input != hexOf(tc.data) {
				t.Errorf("InputSHA256 = %s, %v; want %s", input, err, hexOf(tc.data))
			}
			if derr != nil || decoded != hexOf(img) {
				t.Errorf("DecodedSHA256 = %s, %v; want %s", decoded, derr, hexOf(img))
			}
			if again, err := s.InputSHA256(ctx); err != nil || again != input {
				t.Errorf("InputSHA256 again = %s, %v", again, err)
			}
		})
	}
}
