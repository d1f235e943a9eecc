package imagesrc

import (
	"bytes"
	"encoding/binary"
	"errors"
	"hash/crc32"
	"io"
	"strings"
	"testing"

	"github.com/klauspost/compress/zstd"
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
