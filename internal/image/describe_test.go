package image

import (
	"archive/tar"
	"bytes"
	"errors"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/usbflash/usbflash/internal/testkit/factsonly"
)

func TestDescribe(t *testing.T) {
	mbr := make([]byte, 512)
	mbr[510], mbr[511] = 0x55, 0xaa
	mbr[0] = 0xeb
	xz, err := srcXzGo([]byte("x"))
	if err != nil {
		t.Fatal(err)
	}
	for _, tt := range []struct {
		head []byte
		want string
	}{
		{nil, "an empty file"},
		{[]byte("<!DOCTYPE html>\n<html><body>404 Not Found</body></html>\n"), "an HTML document"},
		{[]byte("\ufeff  <HTML>\r\n<head><title>403 Forbidden</title>"), "an HTML document"},
		{[]byte("<?xml version=\"1.0\"?><Error><Code>AccessDenied</Code></Error>"), "an XML document"},
		{[]byte(`{"error":"not found"}`), "a JSON document"},
		{[]byte("d2c1...  2024-11-19-raspios-bookworm-arm64.img.xz\n"), "text"},
		{[]byte("na\xc3\xafve text cut inside a character \xc3"), "text"},
		{xz, "xz-compressed data"},
		{xz[:3], "the first bytes of xz-compressed data, cut short"},
		{srcTar(t), "a tar archive"},
		{[]byte{'7', 'z', 0xbc, 0xaf, 0x27, 0x1c, 0, 4}, "a 7z archive"},
		{mbr, "a disk image (MBR boot signature)"},
		{make([]byte, 512), "zero bytes"},
		{[]byte("%PDF-1.7\n%\xe2\xe3\xcf\xd3\n"), "a PDF document"},
		{[]byte("\x7fELF\x02\x01\x01\x00"), "an ELF executable"},
		{[]byte{1, 2, 3, 0, 0xfe, 0x80}, "binary data of no known format"},
	} {
		if got := Describe(tt.head); got != tt.want {
			t.Errorf("Describe(%q) = %q, want %q", tt.head[:min(len(tt.head), 20)], got, tt.want)
		}
	}
}

func srcTar(t *testing.T) []byte {
	t.Helper()
	var b bytes.Buffer
	w := tar.NewWriter(&b)
	if err := w.WriteHeader(&tar.Header{Name: "os.img", Mode: 0o644, Size: 3}); err != nil {
		t.Fatal(err)
	}
	w.Write([]byte("img"))
	w.Close()
	return b.Bytes()
}

// TestOpenRefusesMisnamed: a file named as a container whose bytes are not
// that container is refused, naming both, before anything is decoded.
func TestOpenRefusesMisnamed(t *testing.T) {
	html := []byte("<html><head><title>502 Bad Gateway</title></head></html>\n")
	img := genOSImage(64<<10, 9)
	xz, err := srcXzGo(img)
	if err != nil {
		t.Fatal(err)
	}
	gz, err := srcGzipGo(img)
	if err != nil {
		t.Fatal(err)
	}
	disk := append([]byte("\xeb\x63\x90"), img...)
	disk[510], disk[511] = 0x55, 0xaa
	for _, tt := range []struct {
		name string
		data []byte
		want string // "" means Open succeeds
	}{
		{"image.img.xz", html, "named .xz but its bytes are an HTML document of 57 bytes, not xz-compressed data"},
		{"image.IMG.GZ", []byte("Moved to https://example.org/image.img.gz\n"), "named .GZ but its bytes are text of 42 bytes, not gzip-compressed data"},
		{"image.zst", nil, "named .zst but its bytes are an empty file, not zstd-compressed data"},
		{"image.zip", disk, "named .zip but its bytes are a disk image (MBR boot signature), not a zip archive"},
		{"image.tar.xz", srcTar(t), "named .xz but its bytes are a tar archive, not xz-compressed data"},
		{"image.img.gz", xz, "named .gz but its bytes are xz-compressed data, not gzip-compressed data"},
		{"image.img.xz", xz, ""},
		{"image.img.gz", gz, ""},
		{"image.img", html, ""},      // no promise in the name: the size check decides
		{"image.img.xz", xz[:4], ""}, // cut inside the signature: reported as truncated below
	} {
		p := filepath.Join(t.TempDir(), tt.name)
		if err := os.WriteFile(p, tt.data, 0o644); err != nil {
			t.Fatal(err)
		}
		s, err := OpenFile(p)
		if tt.want == "" {
			var se *Error
			if err != nil && !(errors.As(err, &se) && se.Kind == ErrTruncated) {
				t.Errorf("%s: %v", tt.name, err)
			}
			if s != nil {
				s.Close()
			}
			continue
		}
		var se *Error
		if !errors.As(err, &se) || se.Kind != ErrNotNamedFormat || !strings.Contains(err.Error(), tt.want) {
			t.Errorf("%s: error %v\nwant an *Error saying %q", tt.name, err, tt.want)
		}
		if s != nil {
			s.Close()
		}
	}
}

// TestSourceTinyArchiveSize: an archive that decodes to less than the sniff
// window has a known, exact size after Open, whatever the container says.
func TestSourceTinyArchiveSize(t *testing.T) {
	html := []byte("<html>Not Found</html>")
	for _, c := range srcCodecs {
		enc := srcCompress(t, c, html)
		for _, how := range srcWaysIn {
			s, err := srcOpen(t, enc, how)
			if err != nil {
				t.Fatalf("%s %s: %v", c.format, how, err)
			}
			if s.Size != int64(len(html)) || !s.SizeExact || Describe(s.Head()) != "an HTML document" {
				t.Errorf("%s %s: size %d exact %v head %q", c.format, how, s.Size, s.SizeExact, s.Head())
			}
			if got, err := io.ReadAll(s); err != nil || !bytes.Equal(got, html) {
				t.Errorf("%s %s: read %q, %v", c.format, how, got, err)
			}
			s.Close()
		}
	}
}

// TestOpenMisnamedContainers: every name that promises a container, decoded
// or not, is held to it. A file whose bytes are that container is refused
// (if usbflash does not decode it) naming it; one whose bytes are something
// else recognisable is refused naming both; a name promising a container
// without a signature (brotli) or with only a structure (lzma_alone), over
// bytes that are recognisably nothing else, is refused as that container.
func TestOpenMisnamedContainers(t *testing.T) {
	html := []byte("<html><head><title>404 Not Found</title></head></html>\n")
	img := genOSImage(64<<10, 9)
	disk := append([]byte("\xeb\x63\x90"), img...)
	disk[510], disk[511] = 0x55, 0xaa
	xz, err := srcXzGo(img)
	if err != nil {
		t.Fatal(err)
	}
	noise := make([]byte, 4096)
	for i := range noise {
		noise[i] = byte(i*7919>>3) ^ byte(i>>5) | 0x80
	}
	noise[0] = 0xe9 // no lzma_alone properties byte
	lzmaOdd := srcConcat([]byte{0x5d}, []byte{0x45, 0x23, 0x01, 0x00}, bytes.Repeat([]byte{0xff}, 8), []byte{0}, img[:200])
	sevenZ := []byte("7z\xbc\xaf\x27\x1c\x00\x04rest of a 7z archive")
	rar := []byte("Rar!\x1a\x07\x01\x00rest of a RAR archive")
	lz4 := []byte("\x04\x22\x4d\x18rest of an lz4 frame")
	lz4legacy := []byte("\x02\x21\x4c\x18rest of a legacy lz4 stream")
	lzip := []byte("LZIP\x01rest of an lzip member")
	for _, tt := range []struct {
		name      string
		data      []byte
		kind      error
		container string
		want      string
	}{
		{"image.img.lzma", html, ErrNotNamedFormat, containerLzmaAlone, "named .lzma but its bytes are an HTML document of 55 bytes, not a lzma (lzma_alone) stream"},
		{"image.img.lzma", xz, ErrNotNamedFormat, containerLzmaAlone, "named .lzma but its bytes are xz-compressed data, not a lzma (lzma_alone) stream"},
		{"image.img.lzma", srcLzmaAlone(t, img, nil, 3<<20, true), ErrUnsupported, containerLzmaAlone, "lzma (lzma_alone) stream"},
		{"image.img.lzma", lzmaOdd, ErrUnsupported, containerLzmaAlone, "named .lzma and its bytes are recognisably nothing else"},
		{"image.img.lz", html, ErrNotNamedFormat, "lzip stream", "named .lz but its bytes are an HTML document of 55 bytes, not a lzip stream"},
		{"image.img.lz", lzip, ErrUnsupported, "lzip stream", "lzip stream"},
		{"image.7z", disk, ErrNotNamedFormat, "", "named .7z but its bytes are a disk image (MBR boot signature), not a 7z archive"},
		{"image.7z", sevenZ, ErrTruncated, "", "cannot read the archive header at the end of the file"},
		{"image.rar", noise, ErrNotNamedFormat, "RAR archive", "named .rar but its bytes are binary data of no known format, not a RAR archive"},
		{"image.RAR", rar, ErrUnsupported, "RAR archive", "RAR archive"},
		{"image.img.lz4", []byte("Moved\n"), ErrNotNamedFormat, "", "named .lz4 but its bytes are text of 6 bytes, not lz4-compressed data"},
		{"image.img.lz4", lz4, ErrDamaged, "", "lz4: invalid header checksum"},
		{"image.img.lz4", lz4legacy, ErrDamaged, "", "lz4: invalid block size"},
		{"image.tar", disk, ErrNotNamedFormat, "", "named .tar but its bytes are a disk image (MBR boot signature), not a tar archive"},

		{"image.img.br", html, ErrNotNamedFormat, containerBrotli, "named .br but its bytes are an HTML document of 55 bytes, not a brotli stream"},
		{"image.img.br", xz, ErrNotNamedFormat, containerBrotli, "named .br but its bytes are xz-compressed data, not a brotli stream"},
		{"image.img.br", noise, ErrUnsupported, containerBrotli, "named .br and its bytes are recognisably nothing else: taken as a brotli stream"},
		{"image.img.zst", xz, ErrNotNamedFormat, "", "named .zst but its bytes are xz-compressed data, not zstd-compressed data"},
		{"image.img.bz2", html, ErrNotNamedFormat, "", "named .bz2 but its bytes are an HTML document of 55 bytes, not bzip2-compressed data"},
		{"image.img.xz", sevenZ, ErrNotNamedFormat, "", "named .xz but its bytes are a 7z archive of 28 bytes, not xz-compressed data"},
	} {
		t.Run(tt.name+"/"+Describe(tt.data), func(t *testing.T) {
			p := filepath.Join(t.TempDir(), tt.name)
			if err := os.WriteFile(p, tt.data, 0o644); err != nil {
				t.Fatal(err)
			}
			s, err := OpenFile(p)
			if s != nil {
				s.Close()
			}
			var se *Error
			if !errors.As(err, &se) || se.Kind != tt.kind || se.Container != tt.container || !strings.Contains(err.Error(), tt.want) {
				t.Fatalf("error %v\nwant an *Error of kind %v, container %q, saying %q", err, tt.kind, tt.container, tt.want)
			}
			if tt.container != "" && !slices.Contains(UnsupportedContainers(), tt.container) {
				t.Errorf("container %q is not among UnsupportedContainers", tt.container)
			}
			factsonly.Check(t, err.Error())
		})
	}
}

// srcTarOf is a tar archive of the named members (name, data, name, data...).
func srcTarOf(t *testing.T, members ...any) []byte {
	t.Helper()
	var b bytes.Buffer
	w := tar.NewWriter(&b)
	for i := 0; i < len(members); i += 2 {
		data := members[i+1].([]byte)
		if err := w.WriteHeader(&tar.Header{Name: members[i].(string), Mode: 0o644, Size: int64(len(data))}); err != nil {
			t.Fatal(err)
		}
		if _, err := w.Write(data); err != nil {
			t.Fatal(err)
		}
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	return b.Bytes()
}
