package image

import (
	"archive/zip"
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"hash/crc32"
	"io"
	"os/exec"
	"strings"
	"testing"

	"github.com/klauspost/compress/zstd"

	"github.com/usbflash/usbflash/internal/failure"
	"github.com/usbflash/usbflash/internal/testkit/factsonly"
)

// srcXzIndexShrunk rewrites the last index record of a single-stream xz
// file to claim `less` fewer uncompressed bytes (same varint length), with
// a valid index CRC32: a file whose bookkeeping claims less than its data.
func srcXzIndexShrunk(t testing.TB, enc []byte, less uint64) []byte {
	t.Helper()
	out := bytes.Clone(enc)
	ftr := out[len(out)-12:]
	back := (int(binary.LittleEndian.Uint32(ftr[4:8])) + 1) * 4
	idx := out[len(out)-12-back : len(out)-12]
	p := 1
	vli := func() (uint64, int) {
		var v uint64
		start := p
		for i := 0; ; i++ {
			v |= uint64(idx[p]&0x7f) << (7 * i)
			p++
			if idx[p-1]&0x80 == 0 {
				return v, start
			}
		}
	}
	count, _ := vli()
	var size uint64
	var at int
	for range count {
		vli()
		size, at = vli()
	}
	n := p - at
	nv := size - less
	for i := range n {
		b := byte(nv >> (7 * i) & 0x7f)
		if i < n-1 {
			b |= 0x80
		}
		idx[at+i] = b
	}
	if nv>>(7*n) != 0 {
		t.Fatalf("%d does not fit the %d-byte varint of %d", nv, n, size)
	}
	binary.LittleEndian.PutUint32(idx[len(idx)-4:], crc32.ChecksumIEEE(idx[:len(idx)-4]))
	return out
}

// srcZstdFCSShrunk lowers a zstd frame's content size (a 4-byte field, as
// for any frame from 64 KiB to 4 GiB) by less.
func srcZstdFCSShrunk(t testing.TB, enc []byte, less uint32) []byte {
	t.Helper()
	var h zstd.Header
	if err := h.Decode(enc); err != nil || !h.HasFCS || enc[4]>>6 != 2 {
		t.Fatalf("want a frame with a 4-byte content size: %v", err)
	}
	out := bytes.Clone(enc)
	f := out[h.HeaderSize-4 : h.HeaderSize]
	binary.LittleEndian.PutUint32(f, binary.LittleEndian.Uint32(f)-less)
	return out
}

// TestSourceSizeClaimsLess: when the container's exact size is less than
// its data, the reader that stops at the declared size and probes one byte
// further (as the writer does) gets an *Error naming the format and offset,
// not the byte.
func TestSourceSizeClaimsLess(t *testing.T) {
	img := genOSImage(256<<10, 5)
	xzEnc, err := srcXzGo(img)
	if err != nil {
		t.Fatal(err)
	}
	zstEnc, err := srcZstdGo(img)
	if err != nil {
		t.Fatal(err)
	}
	for _, tt := range []struct {
		name string
		enc  []byte
	}{
		{"xz", srcXzIndexShrunk(t, xzEnc, 1000)},
		{"zstd", srcZstdFCSShrunk(t, zstEnc, 1000)},
	} {
		for _, how := range []string{"file", "seekable"} {
			s, err := srcOpen(t, tt.enc, how)
			if err != nil {
				// Refusing at Open is as good, if it is a source error.
				var se *Error
				if !errors.As(err, &se) {
					t.Errorf("%s %s: Open: %v, want an *Error", tt.name, how, err)
				}
				continue
			}
			if !s.SizeExact || s.Size != int64(len(img))-1000 {
				t.Fatalf("%s %s: size %d exact %v, want %d exact", tt.name, how, s.Size, s.SizeExact, len(img)-1000)
			}
			buf := make([]byte, s.Size)
			_, err = io.ReadFull(s, buf)
			if err == nil {
				var one [1]byte
				var n int
				n, err = s.Read(one[:])
				if n != 0 {
					t.Errorf("%s %s: read a byte past the declared size", tt.name, how)
				}
			}
			var se *Error
			if !errors.As(err, &se) || se.Format.String() != tt.name || se.Offset <= 0 ||
				!strings.Contains(err.Error(), "compressed byte") {
				t.Errorf("%s %s: error %v, want an *Error naming %s and the offset", tt.name, how, err, tt.name)
			}
			s.Close()
		}
	}
}

// footerReads counts ReadAt calls of exactly the last 12 bytes of the
// input: the xz stream footer, which every index parse reads.
type footerReads struct {
	r     *bytes.Reader
	size  int64
	reads int
}

func (f *footerReads) ReadAt(p []byte, off int64) (int, error) {
	if off == f.size-12 && len(p) == 12 {
		f.reads++
	}
	return f.r.ReadAt(p, off)
}

func (f *footerReads) Read(p []byte) (int, error) { return f.r.Read(p) }

// TestXzIndexReadOnce: a seekable multi-block .xz has its index parsed once,
// for both the parallel decoder and the size.
func TestXzIndexReadOnce(t *testing.T) {
	img := genOSImage(512<<10, 7)
	a, err := srcXzGo(img[:200<<10])
	if err != nil {
		t.Fatal(err)
	}
	b, err := srcXzGo(img[200<<10:])
	if err != nil {
		t.Fatal(err)
	}
	enc := srcConcat(a, b) // two streams, two blocks: decoded in parallel
	f := &footerReads{r: bytes.NewReader(enc), size: int64(len(enc))}
	s, err := New(f, f.size)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	if f.reads != 1 {
		t.Errorf("the stream footer was read %d times while opening, want once", f.reads)
	}
	if !s.SizeExact || s.Size != int64(len(img)) {
		t.Errorf("size %d exact %v, want %d", s.Size, s.SizeExact, len(img))
	}
	if got, err := io.ReadAll(s); err != nil || !bytes.Equal(got, img) {
		t.Errorf("decoded %d bytes, %v", len(got), err)
	}
}

// TestGzipSizeHintWrap: ISIZE is the size mod 4 GiB; it is a hint only
// where the input is too small to have wrapped.
func TestGzipSizeHintWrap(t *testing.T) {
	const MB, MiB, GiB = 1_000_000, 1 << 20, 1 << 30
	for _, tc := range []struct {
		name       string
		compressed int64
		isize      uint32
		want       int64 // -1: unknown
	}{
		{"4.25 GiB of mostly empty space in 100 MB", 100 * MB, 256 * MiB, -1},
		{"a 1 GiB image in 400 MB", 400 * MB, 1 * GiB, -1},
		{"3 MiB in 1 MB", 1 * MB, 3 * MiB, 3 * MiB},
		{"3.5 GiB of zeros in 4 MB", 4 * MB, 3584 * MiB, 3584 * MiB},
		{"5 MB: it could be 4 GiB more", 5 * MB, 20 * MiB, -1},
		{"smaller than the input", 1 * MB, 100_000, -1},
		{"more than deflate can expand", 1000, 2 * MiB, -1},
	} {
		var isize [4]byte
		binary.LittleEndian.PutUint32(isize[:], tc.isize)
		got, ok := gzipSizeHint(trailerReaderAt{size: tc.compressed, trailer: isize[:]}, tc.compressed)
		if !ok {
			got = -1
		}
		if got != tc.want {
			t.Errorf("%s: hint %d, want %d", tc.name, got, tc.want)
		}
	}
}

// trailerReaderAt is a file of size bytes that ends in trailer.
type trailerReaderAt struct {
	size    int64
	trailer []byte
}

func (r trailerReaderAt) ReadAt(p []byte, off int64) (int, error) {
	for i := range p {
		pos := off + int64(i)
		switch t := pos - (r.size - int64(len(r.trailer))); {
		case pos >= r.size:
			return i, io.EOF
		case t >= 0:
			p[i] = r.trailer[t]
		default:
			p[i] = 0
		}
	}
	return len(p), nil
}

// TestSourceHasChecksum: whether the archive carries a checksum of the
// image that reading verifies, from its headers.
func TestSourceHasChecksum(t *testing.T) {
	img := genOSImage(100_000, 15)
	zst, err := srcZstdGo(img)
	if err != nil {
		t.Fatal(err)
	}
	gz, err := srcGzipGo(img)
	if err != nil {
		t.Fatal(err)
	}
	xzc, err := srcXzGo(img)
	if err != nil {
		t.Fatal(err)
	}
	cases := []struct {
		name string
		data []byte
		want bool
	}{
		{"raw", img, false},
		{"gzip", gz, true},
		{"xz", xzc, true},
		{"zip", srcZip(t, zip.Deflate, "os.img", img), true},
		{"zstd with a content checksum", zst, true},
		{"zstd without", srcZstdRawFrame(img[:5000], 0, 0x50), false},
		{"zstd, a frame with and one without", srcConcat(zst, srcZstdRawFrame(img[:5000], 0, 0x50)), false},
	}
	if _, err := exec.LookPath("xz"); err == nil {
		cases = append(cases, struct {
			name string
			data []byte
			want bool
		}{"xz with check none", srcRunCLI(t, img, "xz", "-c", "-T1", "-C", "none"), false})
	}
	if _, err := exec.LookPath("bzip2"); err == nil {
		cases = append(cases, struct {
			name string
			data []byte
			want bool
		}{"bzip2", srcRunCLI(t, img, "bzip2", "-c"), true})
	}
	for _, tc := range cases {
		ways := srcWaysIn
		if tc.name == "zip" {
			ways = []string{"file", "seekable"}
		}
		for _, how := range ways {
			s, err := srcOpen(t, tc.data, how)
			if err != nil {
				t.Fatalf("%s (%s): %v", tc.name, how, err)
			}
			want := tc.want
			if how == "stream" && tc.name == "zstd, a frame with and one without" {
				want = true // a stream shows its first frame only
			}
			if s.HasChecksum != want {
				t.Errorf("%s (%s): HasChecksum %v, want %v", tc.name, how, s.HasChecksum, want)
			}
			s.Close()
		}
	}
}

// TestExpectSize (issue 41): a size stated from outside the file (a
// catalog's entry) that the image, decoded whole, does not have is an
// error of kind ErrStatedSize naming who stated it, never damage or
// truncation: the archive's own checks passed. A container that states
// another size disagrees at once; one that states the same agrees.
func TestExpectSize(t *testing.T) {
	t.Parallel()
	img := genOSImage(300_000, 41)
	gz, err := srcGzipGo(img)
	if err != nil {
		t.Fatal(err)
	}
	xz, err := srcXzGo(img)
	if err != nil {
		t.Fatal(err)
	}
	const from = "the catalog's entry Test OS (extract_size)"
	for _, tc := range []struct {
		name    string
		file    []byte
		stated  int64
		atOpen  bool   // ExpectSize itself refuses (the container states a size)
		message string // "": the image reads whole, no error
	}{
		{name: "gzip, the entry's size", file: gz, stated: int64(len(img))},
		{name: "gzip, the entry says more", file: gz, stated: int64(len(img)) + 512,
			message: fmt.Sprintf("the image decodes to %d bytes, and %s says %d", len(img), from, len(img)+512)},
		{name: "gzip, the entry says less", file: gz, stated: int64(len(img)) - 512,
			message: fmt.Sprintf("the image decodes to more than %d bytes, and %s says %d", len(img)-512, from, len(img)-512)},
		{name: "xz, the entry's size", file: xz, stated: int64(len(img))},
		{name: "xz, the entry says another", file: xz, stated: int64(len(img)) + 512, atOpen: true,
			message: fmt.Sprintf("the image's xz container says it is %d bytes, and %s says %d", len(img), from, len(img)+512)},
		{name: "no size stated", file: gz, stated: 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			src, err := New(bytes.NewReader(tc.file), int64(len(tc.file)))
			if err != nil {
				t.Fatal(err)
			}
			defer src.Close()
			err = src.ExpectSize(tc.stated, from)
			if !tc.atOpen && err == nil {
				_, err = io.Copy(io.Discard, src)
			}
			if tc.message == "" {
				if err != nil {
					t.Fatalf("reading: %v", err)
				}
				return
			}
			if tc.atOpen != (err != nil && src.Size == int64(len(img))) {
				t.Errorf("the container's size was given up or the refusal came late: %v, size %d", err, src.Size)
			}
			if !errors.Is(err, ErrStatedSize) || errors.Is(err, ErrDamaged) || errors.Is(err, ErrTruncated) || failure.Of(err) != failure.Image {
				t.Fatalf("error %v, want one of kind %v alone, class image", err, ErrStatedSize)
			}
			if !strings.Contains(err.Error(), tc.message) {
				t.Errorf("error %q, want it to say %q", err, tc.message)
			}
			factsonly.Check(t, err.Error())
		})
	}
}
