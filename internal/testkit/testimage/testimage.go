// Package testimage makes the images the write tests of several packages
// share: a test pattern's file and whether a card holds it, one with holes
// a block map or a sparse write skips, its map, and the image compressed
// in each format usbflash reads.
package testimage

import (
	"archive/zip"
	"bytes"
	"compress/gzip"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"testing"

	"github.com/klauspost/compress/zstd"
	"github.com/ulikunitz/xz"

	"github.com/usbflash/usbflash/internal/image/bmap"
	"github.com/usbflash/usbflash/internal/testkit/testpattern"
)

// File writes n bytes of test pattern (testpattern.Bytes, seeded by n) to
// dir/os.img and returns its path and bytes.
func File(tb testing.TB, dir string, n int) (string, []byte) {
	tb.Helper()
	img := testpattern.Bytes(n, byte(n))
	path := filepath.Join(dir, "os.img")
	if err := os.WriteFile(path, img, 0o644); err != nil {
		tb.Fatal(err)
	}
	return path, img
}

// Holds says whether the file at path (a card's) starts with img.
func Holds(path string, img []byte) bool {
	b, err := os.ReadFile(path)
	return err == nil && len(b) >= len(img) && bytes.Equal(b[:len(img)], img)
}

// Transfer is the transfer size Holey's holes are laid out by.
const Transfer = 64 << 10

// Holey is a 2 MiB + 1000 byte image with an MBR boot sector (its
// partition entries zero), 16 KiB of data
// 4 KiB into every Transfer, zeros around them, and transfers 3-6, 10 and
// 20-25 all zero, so a map or a sparse write has something to skip: of its
// 33 transfers 20 after the first hold data.
func Holey() []byte {
	img := make([]byte, 2<<20+1000)
	data := testpattern.Bytes(16<<10, 3)
	copy(img[:446], data) // the boot code; no partition entries
	img[510], img[511] = 0x55, 0xaa
	for off := 0; off+4096 < len(img); off += Transfer {
		copy(img[off+4096:min(off+4096+16<<10, len(img))], data)
	}
	for _, c := range []int{3, 4, 5, 6, 10, 20, 21, 22, 23, 24, 25} {
		clear(img[c*Transfer : (c+1)*Transfer])
	}
	return img
}

// WriteMap writes a block map of img to path, built the way a backup
// builds one, and returns it.
func WriteMap(tb testing.TB, path string, img []byte) *bmap.Map {
	tb.Helper()
	b := bmap.NewBuilder(0)
	b.Write(img)
	m := b.Map()
	data, err := bmap.Marshal(m)
	if err != nil {
		tb.Fatal(err)
	}
	if err := os.WriteFile(path, data, 0o644); err != nil {
		tb.Fatal(err)
	}
	return m
}

// Compress is data in format: raw, gzip, xz, zstd, zip (one member,
// os.img) or bzip2 (the bzip2 program's: Go has no bzip2 encoder).
func Compress(tb testing.TB, format string, data []byte) []byte {
	tb.Helper()
	var buf bytes.Buffer
	var w io.WriteCloser
	var err error
	switch format {
	case "raw":
		return data
	case "gzip":
		w = gzip.NewWriter(&buf)
	case "xz":
		w, err = xz.NewWriter(&buf)
	case "zstd":
		w, err = zstd.NewWriter(&buf)
	case "zip":
		zw := zip.NewWriter(&buf)
		var member io.Writer
		member, err = zw.Create("os.img")
		w = zipMember{member, zw}
	case "bzip2":
		cmd := exec.Command("bzip2", "-c")
		cmd.Stdin = bytes.NewReader(data)
		out, err := cmd.Output()
		if err != nil {
			tb.Fatalf("bzip2 (apt-get install bzip2): %v", err)
		}
		return out
	default:
		tb.Fatalf("no %s writer", format)
	}
	if err != nil {
		tb.Fatal(err)
	}
	if _, err := w.Write(data); err != nil {
		tb.Fatal(err)
	}
	if err := w.Close(); err != nil {
		tb.Fatal(err)
	}
	return buf.Bytes()
}

// zipMember closes the archive when its one member is done.
type zipMember struct {
	io.Writer
	zw *zip.Writer
}

func (m zipMember) Close() error { return m.zw.Close() }
