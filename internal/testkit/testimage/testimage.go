// Package testimage makes the images the write tests of several packages
// share: a test pattern's file and whether a card holds it, one with holes
// a block map or a sparse write skips, its map, and the image compressed
// in each format usbflash reads.
package testimage

import (
	"archive/tar"
	"archive/zip"
	"bytes"
	"compress/gzip"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/klauspost/compress/zstd"
	"github.com/pierrec/lz4/v4"
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

// Compress is data in format: raw, gzip, xz, zstd, lz4, zip (one member,
// os.img), bzip2 (the bzip2 program's: Go has no bzip2 encoder), 7z (one
// member, os.img, by 7-Zip's 7zz: Go has no 7z encoder), tar (one member,
// os.img, beside a readme), or tar.FORMAT (that tar in FORMAT).
func Compress(tb testing.TB, format string, data []byte) []byte {
	tb.Helper()
	var buf bytes.Buffer
	var w io.WriteCloser
	var err error
	if inner, ok := strings.CutPrefix(format, "tar."); ok {
		return Compress(tb, inner, Compress(tb, "tar", data))
	}
	switch format {
	case "raw":
		return data
	case "lz4":
		w = lz4.NewWriter(&buf)
	case "tar":
		return tarOf(tb, data)
	case "7z":
		return sevenZipOf(tb, data)

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

// tarOf is a tar archive of a readme and data as os.img.
func tarOf(tb testing.TB, data []byte) []byte {
	tb.Helper()
	var buf bytes.Buffer
	tw := tar.NewWriter(&buf)
	readme := []byte("the image\n")
	for _, m := range []struct {
		name string
		data []byte
	}{{"readme.txt", readme}, {"os.img", data}} {
		if err := tw.WriteHeader(&tar.Header{Name: m.name, Mode: 0o644, Size: int64(len(m.data))}); err != nil {
			tb.Fatal(err)
		}
		if _, err := tw.Write(m.data); err != nil {
			tb.Fatal(err)
		}
	}
	if err := tw.Close(); err != nil {
		tb.Fatal(err)
	}
	return buf.Bytes()
}

// sevenZipOf is a 7z archive (LZMA2, as 7-Zip makes it by default) of data
// as os.img.
func sevenZipOf(tb testing.TB, data []byte) []byte {
	tb.Helper()
	dir := tb.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "os.img"), data, 0o644); err != nil {
		tb.Fatal(err)
	}
	cmd := exec.Command("7zz", "a", "-bd", "-t7z", "-mx=1", "os.7z", "os.img")
	cmd.Dir = dir
	if out, err := cmd.CombinedOutput(); err != nil {
		tb.Fatalf("7zz (apt-get install 7zip): %v\n%s", err, out)
	}
	out, err := os.ReadFile(filepath.Join(dir, "os.7z"))
	if err != nil {
		tb.Fatal(err)
	}
	return out
}

// ISO is an ISO 9660 image made by xorriso (Debian's xorriso; isolinux's
// boot loader and hybrid MBR), as installers are made: a sources/install.wim,
// the volume ID given, and an El Torito boot catalog for CD and DVD
// firmware; hybrid adds the MBR partition table a stick boots from
// (-isohybrid-mbr, as isohybrid and most Linux installers have it), and
// without it the image boots only from a disc, as a Windows installer ISO.
func ISO(tb testing.TB, volumeID string, hybrid bool) []byte {
	tb.Helper()
	dir := tb.TempDir()
	for name, size := range map[string]int{"d/sources/install.wim": 2 << 20, "d/readme.txt": 100} {
		p := filepath.Join(dir, name)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			tb.Fatal(err)
		}
		if err := os.WriteFile(p, testpattern.Bytes(size, 9), 0o644); err != nil {
			tb.Fatal(err)
		}
	}
	loader, err := os.ReadFile("/usr/lib/ISOLINUX/isolinux.bin")
	if err != nil {
		tb.Fatalf("isolinux's boot loader (apt-get install isolinux): %v", err)
	}
	if err := os.MkdirAll(filepath.Join(dir, "d/boot"), 0o755); err != nil {
		tb.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "d/boot/isolinux.bin"), loader, 0o644); err != nil {
		tb.Fatal(err)
	}
	args := []string{"-as", "mkisofs", "-quiet", "-V", volumeID, "-b", "boot/isolinux.bin", "-c", "boot/boot.cat",
		"-no-emul-boot", "-boot-load-size", "4", "-boot-info-table", "-o", "out.iso"}
	if hybrid {
		args = append(args, "-isohybrid-mbr", "/usr/lib/ISOLINUX/isohdpfx.bin")
	}
	cmd := exec.Command("xorriso", append(args, "d")...)
	cmd.Dir = dir
	if out, err := cmd.CombinedOutput(); err != nil {
		tb.Fatalf("xorriso (apt-get install xorriso): %v\n%s", err, out)
	}
	out, err := os.ReadFile(filepath.Join(dir, "out.iso"))
	if err != nil {
		tb.Fatal(err)
	}
	return out
}
