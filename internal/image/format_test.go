package image

import (
	"bytes"
	"encoding/binary"
	"math"
	"slices"
	"testing"

	"github.com/ulikunitz/xz/lzma"
)

func TestSniff(t *testing.T) {
	tarHdr := make([]byte, 512)
	copy(tarHdr[257:], "ustar  \x00") // GNU
	cases := []struct {
		name        string
		head        []byte
		format      Format
		unsupported string
		truncated   bool
	}{
		{"mbr", append([]byte{0xeb, 0x63, 0x90}, make([]byte, 509)...), FormatRaw, "", false},
		{"zeros", make([]byte, 512), FormatRaw, "", false},
		{"gzip", []byte{0x1f, 0x8b, 0x08, 0, 0, 0, 0, 0, 0, 3}, FormatGzip, "", false},
		{"xz", []byte{0xfd, '7', 'z', 'X', 'Z', 0, 0, 4}, FormatXz, "", false},
		{"zstd", []byte{0x28, 0xb5, 0x2f, 0xfd, 0x04}, FormatZstd, "", false},
		{"zstd-skippable-first", []byte{0x5e, 0x2a, 0x4d, 0x18, 0, 0, 0, 0}, FormatZstd, "", false},
		{"bzip2", []byte("BZh91AY&SY"), FormatBzip2, "", false},
		{"zip", []byte("PK\x03\x04\x14\x00"), FormatZip, "", false},
		{"zip-empty", []byte("PK\x05\x06"), FormatZip, "", false},
		{"gzip-cut-to-1", []byte{0x1f}, FormatRaw, "", true},
		{"xz-cut-to-5", []byte{0xfd, '7', 'z', 'X', 'Z'}, FormatRaw, "", true},
		{"compress-Z", []byte{0x1f, 0x9d, 0x90}, FormatRaw, "compress (.Z) stream", false},
		{"7z", []byte{'7', 'z', 0xbc, 0xaf, 0x27, 0x1c, 0, 4}, Format7z, "", false},
		{"lz4", []byte{0x04, 0x22, 0x4d, 0x18, 0x64, 0x40, 0xa7}, FormatLz4, "", false},
		{"lz4-legacy", []byte{0x02, 0x21, 0x4c, 0x18, 0, 0, 0, 0}, FormatLz4, "", false},
		{"lz4-skippable-first", []byte{0x50, 0x2a, 0x4d, 0x18, 2, 0, 0, 0, 'h', 'i', 0x04, 0x22, 0x4d, 0x18, 0x64, 0x40}, FormatLz4, "", false},
		{"zstd-skippable-then-zstd", []byte{0x50, 0x2a, 0x4d, 0x18, 0, 0, 0, 0, 0x28, 0xb5, 0x2f, 0xfd}, FormatZstd, "", false},
		{"skippable-huge", []byte{0x50, 0x2a, 0x4d, 0x18, 0xff, 0xff, 0xff, 0xff, 0x04, 0x22, 0x4d, 0x18}, FormatZstd, "", false},
		{"tar-gnu", tarHdr, FormatTar, "", false},

		{"tar-short", tarHdr[:260], FormatRaw, "", false},
		{"lzma-not-really", append([]byte{0x5d, 0, 0, 0x80, 0}, make([]byte, 20)...), FormatRaw, "", false},
		{"android-sparse", []byte{0x3a, 0xff, 0x26, 0xed, 1, 0}, FormatRaw, "Android sparse image", false},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			got := sniff(c.head)
			if got.truncated != c.truncated || got.unsupported != c.unsupported ||
				(!c.truncated && c.unsupported == "" && got.format != c.format) {
				t.Errorf("sniff = %+v; want format %v, unsupported %q, truncated %v",
					got, c.format, c.unsupported, c.truncated)
			}
			if got.unsupported != "" && !slices.Contains(UnsupportedContainers(), got.unsupported) {
				t.Errorf("refused %s is not among UnsupportedContainers", got.unsupported)
			}
		})
	}
}

func TestFormatString(t *testing.T) {
	want := map[Format]string{FormatRaw: "raw", FormatGzip: "gzip", FormatXz: "xz", FormatZstd: "zstd",
		FormatBzip2: "bzip2", FormatZip: "zip", Format(42): "Format(42)", Format(-1): "Format(-1)"}
	for f, w := range want {
		if f.String() != w {
			t.Errorf("Format(%d).String() = %q, want %q", int(f), f.String(), w)
		}
	}
}

// TestSniffIgnoresExtension: the name never decides; the bytes do.
func TestSniffIgnoresExtension(t *testing.T) {
	gz, err := srcGzipGo(bytes.Repeat([]byte("image "), 1000))
	if err != nil {
		t.Fatal(err)
	}
	s, err := srcOpen(t, gz, "file") // written as image.bin
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	if s.Format != FormatGzip {
		t.Errorf("format %v, want gzip", s.Format)
	}
}

// srcLzmaAlone encodes data as a .lzma (lzma_alone) stream with the
// independent encoder: props nil means the default lc=3 lp=0 pb=2; size
// says whether the header states the uncompressed size (as the LZMA SDK
// writes it) or leaves it unknown (as xz --format=lzma does).
func srcLzmaAlone(t *testing.T, data []byte, props *lzma.Properties, dict int, size bool) []byte {
	t.Helper()
	var b bytes.Buffer
	c := lzma.WriterConfig{Properties: props, DictCap: dict}
	if size {
		c.Size = int64(len(data))
	}
	w, err := c.NewWriter(&b)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := w.Write(data); err != nil {
		t.Fatal(err)
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	return b.Bytes()
}

// TestSniffLzmaAlone: an lzma_alone stream is recognised by its structure,
// whatever header shape its encoder chose, and disk images are not.
func TestSniffLzmaAlone(t *testing.T) {
	img := genOSImage(64<<10, 4)
	header := func(props byte, dict uint32, size uint64, first byte) []byte {
		h := []byte{props}
		h = binary.LittleEndian.AppendUint32(h, dict)
		h = binary.LittleEndian.AppendUint64(h, size)
		return append(append(h, first), img[:100]...)
	}
	mbr := make([]byte, 512)
	copy(mbr, "\xfa\x31\xc0\x8e\xd8\x8e\xd0\xbc\x00\x7c") // cli; xor ax,ax; ...
	mbr[510], mbr[511] = 0x55, 0xaa
	unknown := uint64(math.MaxUint64)
	for _, tc := range []struct {
		name string
		head []byte
		lzma bool
	}{
		{"xz --format=lzma shape", srcLzmaAlone(t, img, nil, 8<<20, false), true},
		{"size stated, as the LZMA SDK writes", srcLzmaAlone(t, img, nil, 8<<20, true), true},
		{"3 MiB dictionary", srcLzmaAlone(t, img, nil, 3<<20, false), true},
		{"lc=0 lp=2 pb=0", srcLzmaAlone(t, img, &lzma.Properties{LC: 0, LP: 2, PB: 0}, 1<<20, true), true},
		{"lc=4 lp=0 pb=4", srcLzmaAlone(t, img, &lzma.Properties{LC: 4, LP: 0, PB: 4}, 64<<10, false), true},
		{"4 KiB dictionary", header(0x5d, 4<<10, unknown, 0), true},
		{"SDK's whole-MiB dictionary", header(0x5d, 5<<20, 123456, 0), true},
		{"largest properties byte", header(224, 1<<16, unknown, 0), true},
		{"properties byte 225", header(225, 1<<16, unknown, 0), false},
		{"dictionary below 4 KiB", header(0x5d, 2<<10, unknown, 0), false},
		{"dictionary no encoder writes", header(0x5d, 0x00012345, unknown, 0), false},
		{"dictionary of 4 GiB", header(0x5d, 0xffffffff, unknown, 0), false},
		{"stated size 0", header(0x5d, 8<<20, 0, 0), false},
		{"stated size of 1 TiB", header(0x5d, 8<<20, 1<<40, 0), false},
		{"range coder's first byte not zero", header(0x5d, 8<<20, unknown, 1), false},
		{"header only", header(0x5d, 8<<20, unknown, 0)[:13], false},
		{"MBR boot code", mbr, false},
		{"zeros", make([]byte, 512), false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := sniff(tc.head).unsupported == containerLzmaAlone
			if got != tc.lzma {
				t.Errorf("sniffed as lzma_alone: %v, want %v (header % x)", got, tc.lzma, tc.head[:min(14, len(tc.head))])
			}
		})
	}
}
