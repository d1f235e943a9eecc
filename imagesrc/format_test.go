package imagesrc

import (
	"bytes"
	"slices"
	"testing"
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
		{"7z", []byte{'7', 'z', 0xbc, 0xaf, 0x27, 0x1c, 0, 4}, FormatRaw, "7z archive", false},
		{"tar-gnu", tarHdr, FormatRaw, "tar archive", false},
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
