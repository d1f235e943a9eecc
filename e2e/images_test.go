//go:build e2e

package e2e

import (
	"bytes"
	"compress/gzip"
	"fmt"
	"math/rand"
	"os"
	"path/filepath"
	"testing"

	"github.com/klauspost/compress/zstd"
	"github.com/ulikunitz/xz"
)

// cardFill is the byte a fresh backing file is filled with, so untouched
// areas are told apart from written zeros.
const cardFill = 0xA5

// newCard creates a raw backing file of size bytes filled with cardFill.
func newCard(t *testing.T, size int64) string {
	t.Helper()
	p := filepath.Join(t.TempDir(), "card.img")
	if err := os.WriteFile(p, bytes.Repeat([]byte{cardFill}, int(size)), 0o644); err != nil {
		t.Fatal(err)
	}
	return p
}

// makeImage returns size bytes of image content from seed: random runs,
// zero runs and text, so that every compressor has work and every offset is
// distinguishable.
func makeImage(seed int64, size int) []byte {
	r := rand.New(rand.NewSource(seed))
	b := make([]byte, size)
	for off := 0; off < size; {
		n := 4096 + r.Intn(256<<10)
		if off+n > size {
			n = size - off
		}
		switch r.Intn(3) {
		case 0:
			r.Read(b[off : off+n])
		case 1: // zeros
		case 2:
			line := []byte(fmt.Sprintf("usbflash e2e seed %d offset %d\n", seed, off))
			for i := 0; i < n; i++ {
				b[off+i] = line[i%len(line)]
			}
		}
		off += n
	}
	// Stamp each 512-byte block with its index so a misplaced block shows.
	for blk := 0; blk*512+8 <= size; blk++ {
		copy(b[blk*512:], fmt.Sprintf("%08x", blk))
	}
	return b
}

// encode compresses img in format ("raw", "gz", "xz", "zst").
func encode(t *testing.T, img []byte, format string) []byte {
	t.Helper()
	var buf bytes.Buffer
	switch format {
	case "raw":
		return img
	case "gz":
		w := gzip.NewWriter(&buf)
		w.Write(img)
		w.Close()
	case "xz":
		w, err := xz.NewWriter(&buf)
		if err != nil {
			t.Fatal(err)
		}
		w.Write(img)
		w.Close()
	case "zst":
		w, err := zstd.NewWriter(&buf)
		if err != nil {
			t.Fatal(err)
		}
		w.Write(img)
		w.Close()
	default:
		t.Fatalf("unknown format %s", format)
	}
	return buf.Bytes()
}

// putImage writes img (encoded as format) into the machine's share and
// returns its guest path.
func putImage(t *testing.T, m *Machine, name string, img []byte, format string) string {
	t.Helper()
	if format != "raw" {
		name += "." + format
	}
	if err := os.WriteFile(filepath.Join(m.Share, "img", name), encode(t, img, format), 0o644); err != nil {
		t.Fatal(err)
	}
	return "/host/img/" + name
}

// checkCard asserts the backing file holds img at offset 0, the rest of
// img's last block is zero padding or untouched, and everything after is
// untouched.
func checkCard(t *testing.T, backing string, img []byte) {
	t.Helper()
	got := checkPrefix(t, backing, img)
	end := (len(img) + 511) / 512 * 512
	for i := len(img); i < end && i < len(got); i++ {
		if got[i] != 0 && got[i] != cardFill {
			t.Fatalf("%s: tail padding byte %d is %#x", backing, i, got[i])
		}
	}
	for i := end; i < len(got); i++ {
		if got[i] != cardFill {
			t.Fatalf("%s: byte %d past the image (LBA %d) was changed to %#x", backing, i, i/512, got[i])
		}
	}
}

// checkUntouched asserts the backing file still holds only cardFill.
func checkUntouched(t *testing.T, backing string) {
	t.Helper()
	got, err := os.ReadFile(backing)
	if err != nil {
		t.Fatal(err)
	}
	for i, c := range got {
		if c != cardFill {
			t.Fatalf("%s: byte %d (LBA %d) was changed to %#x: the card should be untouched", backing, i, i/512, c)
		}
	}
}

func firstDiff(a, b []byte) int {
	n := min(len(a), len(b))
	for off := 0; off < n; off += 64 << 10 {
		e := min(off+64<<10, n)
		if !bytes.Equal(a[off:e], b[off:e]) {
			for i := off; i < e; i++ {
				if a[i] != b[i] {
					return i
				}
			}
		}
	}
	if len(a) != len(b) {
		return n
	}
	return -1
}

func window(b []byte, i int) []byte {
	return b[i:min(i+16, len(b))]
}

// checkPrefix asserts the backing file starts with img and returns it.
func checkPrefix(t *testing.T, backing string, img []byte) []byte {
	t.Helper()
	got, err := os.ReadFile(backing)
	if err != nil {
		t.Fatal(err)
	}
	if len(got) < len(img) {
		t.Fatalf("%s: backing (%d bytes) smaller than image (%d)", backing, len(got), len(img))
	}
	if i := firstDiff(got[:len(img)], img); i >= 0 {
		t.Fatalf("%s: differs from the image at byte %d (LBA %d): got % x, want % x", backing, i, i/512, window(got, i), window(img, i))
	}
	return got
}
