package image

import (
	"bytes"
	"encoding/binary"
	"errors"
	"hash/crc32"
	"os/exec"
	"strings"
	"testing"

	"github.com/klauspost/compress/zstd"

	"github.com/usbflash/usbflash/internal/testkit/factsonly"
)

// srcXzSetFilter changes the first filter ID of an xz file's first block
// header and fixes the header's CRC32: a valid file using that filter.
func srcXzSetFilter(t *testing.T, c []byte, id byte) []byte {
	t.Helper()
	c = bytes.Clone(c)
	h := c[12:] // after the stream header
	size := (int(h[0]) + 1) * 4
	if h[1]&0xc0 != 0 {
		t.Fatal("block header states sizes; the test wants it plain")
	}
	h[2] = id // flags, then the first filter's ID (a one-byte varint)
	binary.LittleEndian.PutUint32(h[size-4:], crc32.ChecksumIEEE(h[:size-4]))
	return c
}

// srcXzSetCheck changes an xz file's check ID in the stream header and
// footer and fixes their CRC32s. IDs of the same check size leave the rest
// of the file valid.
func srcXzSetCheck(c []byte, id byte) []byte {
	c = bytes.Clone(c)
	c[7] = id
	binary.LittleEndian.PutUint32(c[8:], crc32.ChecksumIEEE(c[6:8]))
	f := c[len(c)-12:]
	f[9] = id
	binary.LittleEndian.PutUint32(f, crc32.ChecksumIEEE(f[4:10]))
	return c
}

// srcZstdRawFrame is a zstd frame of one raw block holding data, with the
// frame header fields given: a dictionary ID (0: none) and a window
// descriptor byte.
func srcZstdRawFrame(data []byte, dictID byte, windowDesc byte) []byte {
	fhd := byte(0)
	if dictID != 0 {
		fhd |= 1 // a one-byte dictionary ID
	}
	f := []byte{0x28, 0xb5, 0x2f, 0xfd, fhd, windowDesc}
	if dictID != 0 {
		f = append(f, dictID)
	}
	bh := uint32(len(data))<<3 | 1 // raw, last
	f = append(f, byte(bh), byte(bh>>8), byte(bh>>16))
	return append(f, data...)
}

// TestUnsupportedFeatures: a valid archive that uses something usbflash
// does not decode is refused as that, naming it, not as damage.
func TestUnsupportedFeatures(t *testing.T) {
	srcHaveCLI(t, "xz")
	img := genOSImage(100_000, 12)
	x86 := srcRunCLI(t, img, "xz", "-c", "-T1", "-C", "crc32", "--x86", "--lzma2=preset=1")
	plain := srcRunCLI(t, img, "xz", "-c", "-T1", "-C", "crc32", "--lzma2=preset=1")
	zst, err := srcZstdGo(img)
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name    string
		data    []byte
		ways    []string
		format  Format
		feature string
	}{
		{"xz RISC-V BCJ", srcXzSetFilter(t, x86, 0x0b), srcWaysIn, FormatXz, "the RISC-V BCJ filter (ID 0xb)"},
		{"xz unknown filter", srcXzSetFilter(t, x86, 0x55), srcWaysIn, FormatXz, "the unknown filter (ID 0x55)"},
		{"xz reserved check", srcXzSetCheck(plain, 0x02), srcWaysIn, FormatXz, "integrity check ID 0x02"},
		{"xz reserved check of 8 bytes", srcXzSetCheck(srcRunCLI(t, img, "xz", "-c", "-T1", "-C", "crc64", "--lzma2=preset=1"), 0x05),
			srcWaysIn, FormatXz, "integrity check ID 0x05"},
		{"zstd dictionary", srcZstdRawFrame(img[:5000], 7, 0x50), srcWaysIn, FormatZstd, "a dictionary (ID 7)"},
		{"zstd 1 GiB window", srcZstdRawFrame(img[:5000], 0, 20<<3), srcWaysIn, FormatZstd, "a 1 GiB window (usbflash allows up to 512 MiB)"},
		// A stream shows only its first frame before decoding; the
		// decoder refuses the second.
		{"zstd dictionary in a later frame", srcConcat(zst, srcZstdRawFrame(img[:5000], 7, 0x50)), []string{"stream"}, FormatZstd, "a dictionary"},
	} {
		for _, how := range tc.ways {
			_, _, err := srcDecode(t, tc.data, how)
			var se *Error
			if !errors.As(err, &se) || se.Kind != ErrUnsupportedFeature || se.Format != tc.format || !strings.HasPrefix(se.Feature, tc.feature) ||
				!strings.Contains(err.Error(), "the image uses "+tc.feature) || !strings.Contains(err.Error(), "which usbflash does not decode") {
				t.Errorf("%s (%s): error %v; want an *Error of kind %v naming %q", tc.name, how, err, ErrUnsupportedFeature, tc.feature)
				continue
			}
			factsonly.Check(t, err.Error())
		}
	}
}

// TestTrailingDataIsNotTruncation: data after the end of an archive that
// is not more of it is reported as such, where it starts; only input that
// ends inside the magic of a next member or stream is cut short.
func TestTrailingDataIsNotTruncation(t *testing.T) {
	img := genOSImage(300<<10, 13)
	gz, err := srcGzipGo(img)
	if err != nil {
		t.Fatal(err)
	}
	xz, err := srcXzGo(img)
	if err != nil {
		t.Fatal(err)
	}
	zst, err := srcZstdGo(img)
	if err != nil {
		t.Fatal(err)
	}
	seekable := []string{"file", "seekable"}
	for _, tc := range []struct {
		name  string
		enc   []byte
		extra string
		ways  []string
		kind  error
	}{
		{"gzip, one byte", gz, "x", srcWaysIn, ErrDamaged},
		{"gzip, text", gz, "garbage", srcWaysIn, ErrDamaged},
		{"gzip, long text", gz, strings.Repeat("garbage ", 10), srcWaysIn, ErrDamaged},
		{"gzip, half a magic", gz, "\x1f", srcWaysIn, ErrTruncated},
		{"xz, one byte", xz, "x", srcWaysIn, ErrDamaged},
		{"xz, text", xz, "garbage", srcWaysIn, ErrDamaged},
		{"xz, long text", xz, strings.Repeat("garbage ", 10), srcWaysIn, ErrDamaged},
		{"xz, padding not a multiple of four", xz, "\x00\x00", srcWaysIn, ErrDamaged},
		{"xz, half a magic", xz, "\xfd7z", srcWaysIn, ErrTruncated},
		{"zstd, text", zst, "garbage", srcWaysIn, ErrDamaged},
		{"zstd, long text", zst, strings.Repeat("garbage ", 10), srcWaysIn, ErrDamaged},
		// Three bytes or fewer: a stream cannot tell them from a frame
		// cut short (the decoder does not say where frames end); a file
		// can, from its frame headers.
		{"zstd, two bytes", zst, "xy", seekable, ErrDamaged},
		{"zstd, half a magic", zst, "\x28\xb5", srcWaysIn, ErrTruncated},
	} {
		data := srcConcat(tc.enc, []byte(tc.extra))
		want := int64(len(tc.enc)) // where the trailing data starts
		if tc.kind == ErrTruncated {
			want = int64(len(data)) // where the input ends
		}
		for _, how := range tc.ways {
			_, _, err := srcDecode(t, data, how)
			var se *Error
			if !errors.As(err, &se) || se.Kind != tc.kind || se.Offset != want {
				t.Errorf("%s (%s): error %v; want an *Error of kind %v at compressed byte %d", tc.name, how, err, tc.kind, want)
			}
		}
	}
}

// TestDamageOffsets: damage the decoder finds as it reaches it is placed
// where the decoder had consumed the input, not where it had read ahead to
// (the input is read in 256 KiB pieces).
func TestDamageOffsets(t *testing.T) {
	img := genOSImage(4<<20, 14)
	gz, err := srcGzipGo(img)
	if err != nil {
		t.Fatal(err)
	}
	badBlock := bytes.Clone(gz)
	badBlock[10] |= 0x06 // the first deflate block's type: 3, reserved
	zst, err := srcZstdGo(img)
	if err != nil {
		t.Fatal(err)
	}
	var h zstd.Header
	if err := h.Decode(zst); err != nil {
		t.Fatal(err)
	}
	first := int64(h.HeaderSize) // the first block's header
	v := uint32(zst[first]) | uint32(zst[first+1])<<8 | uint32(zst[first+2])<<16
	second := first + 3 + int64(v>>3)
	if (v>>1)&3 == 1 { // RLE: one byte of data
		second = first + 3 + 1
	}
	if v&1 != 0 {
		t.Fatal("the frame has one block; the test wants two")
	}
	badZst := bytes.Clone(zst)
	badZst[second] |= 0x06 // block type 3, reserved
	var cases = []struct {
		name     string
		data     []byte
		from, to int64
	}{
		{"gzip reserved block type", badBlock, 10, 10 + 16},
		{"zstd reserved block type", badZst, second, second + 3 + 128<<10},
	}
	if _, err := exec.LookPath("bzip2"); err == nil {
		bz := srcRunCLI(t, img, "bzip2", "-c", "-1")
		p := len(bz) / 10
		bad := bytes.Clone(bz)
		bad[p] ^= 0x55
		// bzip2 finds damage within the 100 kB block holding it, by its
		// CRC at the latest.
		cases = append(cases, struct {
			name     string
			data     []byte
			from, to int64
		}{"bzip2 damaged block", bad, int64(p), int64(p) + 110_000})
	}
	for _, tc := range cases {
		for _, how := range srcWaysIn {
			_, _, err := srcDecode(t, tc.data, how)
			var se *Error
			if !errors.As(err, &se) || se.Kind != ErrDamaged || se.Offset < tc.from || se.Offset > tc.to {
				t.Errorf("%s (%s): error %v; want damage found between compressed bytes %d and %d", tc.name, how, err, tc.from, tc.to)
			}
		}
	}
}
