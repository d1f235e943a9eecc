package xzdec

import (
	"bytes"
	"context"
	"errors"
	"io"
	"sync"
	"testing"
	"testing/iotest"
)

// testImage is the shared small OS-like payload for correctness tests.
var testImage = sync.OnceValue(func() []byte { return genImage(3<<20+12345, 42, false) })

// execImage is payload with an x86/ARM-ish flavour: BCJ filters only change
// bytes that look like branch instructions, so sprinkle plenty of those.
var execImage = sync.OnceValue(func() []byte {
	b := genImage(1<<20+333, 43, true)
	for i := 0; i+8 < len(b); i += 13 {
		switch i % 5 {
		case 0:
			b[i] = 0xE8 // x86 call
		case 1:
			b[i+3] = 0xEB // ARM BL
		case 2:
			b[i+1], b[i+3] = 0xF0, 0xF8 // Thumb BL
		case 3:
			b[i+3] = 0x94 // ARM64 BL
		case 4:
			b[i], b[i+3] = 0x48, 0x01 // PowerPC bl
		}
	}
	return b
})

// decodeAll decodes c with every front end we offer and requires each to
// produce want. Parallel decoding runs with several budgets to exercise
// admission, including one that forces a single block at a time.
func decodeAll(t *testing.T, c, want []byte) {
	t.Helper()
	check := func(name string, got []byte, err error) {
		t.Helper()
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		if !bytes.Equal(got, want) {
			t.Fatalf("%s: output differs (got %d bytes, want %d) first diff at %d", name, len(got), len(want), firstDiff(got, want))
		}
	}
	r, err := NewReader(bytes.NewReader(c))
	if err != nil {
		t.Fatalf("NewReader: %v", err)
	}
	got, err := io.ReadAll(iotest.HalfReader(r))
	check("Reader.Read", got, err)

	r, err = NewReader(iotest.HalfReader(bytes.NewReader(c)))
	if err != nil {
		t.Fatalf("NewReader: %v", err)
	}
	var buf bytes.Buffer
	_, err = r.WriteTo(&buf)
	check("Reader.WriteTo", buf.Bytes(), err)

	idx, err := ReadIndex(bytes.NewReader(c), int64(len(c)))
	if err != nil {
		t.Fatalf("ReadIndex: %v", err)
	}
	if idx.UncompressedSize != int64(len(want)) {
		t.Fatalf("ReadIndex: UncompressedSize %d, want %d", idx.UncompressedSize, len(want))
	}
	for _, opt := range []Options{{}, {Workers: 2, MaxInFlight: 1}, {Workers: 3, MaxInFlight: 700 << 10}, {Workers: 1}} {
		pr, err := NewParallelReader(context.Background(), bytes.NewReader(c), int64(len(c)), opt)
		if err != nil {
			t.Fatalf("NewParallelReader %+v: %v", opt, err)
		}
		got, err := io.ReadAll(pr)
		check("parallel Read", got, err)
		pr.Close()
		pr, _ = NewParallelReader(context.Background(), bytes.NewReader(c), int64(len(c)), opt)
		buf.Reset()
		_, err = pr.(io.WriterTo).WriteTo(&buf)
		check("parallel WriteTo", buf.Bytes(), err)
		pr.Close()

		// The same from a stream, read in pieces of any size.
		sr, err := NewParallelStreamReader(context.Background(), iotest.HalfReader(bytes.NewReader(c)), opt)
		if err != nil {
			t.Fatalf("NewParallelStreamReader %+v: %v", opt, err)
		}
		got, err = io.ReadAll(iotest.HalfReader(sr))
		check("parallel stream Read", got, err)
		sr.Close()
		sr, _ = NewParallelStreamReader(context.Background(), bytes.NewReader(c), opt)
		buf.Reset()
		_, err = sr.(io.WriterTo).WriteTo(&buf)
		check("parallel stream WriteTo", buf.Bytes(), err)
		sr.Close()
	}
}

func firstDiff(a, b []byte) int {
	for i := range min(len(a), len(b)) {
		if a[i] != b[i] {
			return i
		}
	}
	return min(len(a), len(b))
}

func TestDecodeMatchesXZ(t *testing.T) {
	needXZ(t)
	tests := []struct {
		name string
		exec bool // use the branch-heavy payload
		args []string
	}{
		{"preset0", false, []string{"-0"}},
		{"preset6", false, []string{"-6"}},
		{"preset9", false, []string{"-9"}},
		{"extreme", false, []string{"-6e"}},
		{"T2-blocks", false, []string{"-6", "-T2", "--block-size=400KiB"}},
		{"T2-tinyblocks", false, []string{"-1", "-T2", "--block-size=65536"}},
		{"check-none", false, []string{"-3", "--check=none", "--block-size=1MiB"}},
		{"check-crc32", false, []string{"-3", "--check=crc32", "--block-size=1MiB"}},
		{"check-crc64", false, []string{"-3", "--check=crc64", "--block-size=1MiB"}},
		{"check-sha256", false, []string{"-3", "--check=sha256", "--block-size=1MiB"}},
		{"lc0-lp4-pb4", false, []string{"--lzma2=preset=6,lc=0,lp=4,pb=4"}},
		{"lc4-pb0", false, []string{"--lzma2=preset=6,lc=4,lp=0,pb=0", "--block-size=1MiB"}},
		{"x86", true, []string{"--x86", "--lzma2"}},
		{"x86-start", true, []string{"--x86=start=4096", "--lzma2", "--block-size=300KiB"}},
		{"arm", true, []string{"--arm", "--lzma2"}},
		{"armthumb", true, []string{"--armthumb", "--lzma2"}},
		{"arm64", true, []string{"--arm64", "--lzma2", "--block-size=300KiB"}},
		{"powerpc", true, []string{"--powerpc", "--lzma2"}},
		{"ia64", true, []string{"--ia64", "--lzma2"}},
		{"sparc", true, []string{"--sparc", "--lzma2"}},
		{"delta4", true, []string{"--delta=dist=4", "--lzma2"}},
		{"delta256", false, []string{"--delta=dist=256", "--lzma2=preset=1", "--block-size=500KiB"}},
		{"delta-x86-chain", true, []string{"--delta=dist=2", "--x86", "--lzma2=preset=1"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			data := testImage()
			if tt.exec {
				data = execImage()
			}
			c := xzCompress(t, data, tt.args...)
			ref := xzDecompress(t, c)
			if !bytes.Equal(ref, data) {
				t.Fatal("xz -dc does not round-trip the payload")
			}
			decodeAll(t, c, ref)
		})
	}
}

func TestEmptyAndTiny(t *testing.T) {
	needXZ(t)
	for _, n := range []int{0, 1, 2, 5, 100, 4096} {
		data := genImage(n, uint64(n), true)
		for _, args := range [][]string{{"-6"}, {"-0", "--check=none"}, {"--check=sha256", "-T2", "--block-size=64"}} {
			c := xzCompress(t, data, args...)
			decodeAll(t, c, data)
		}
	}
}

// TestMultiStreamPadding concatenates streams with stream padding between
// and after them, including empty streams, as `cat a.xz b.xz` and tools
// that pad to a block size produce.
func TestMultiStreamPadding(t *testing.T) {
	needXZ(t)
	data := testImage()
	parts := [][]byte{data[:100000], data[100000:100000], data[100000:2000000], data[2000000:]}
	argsFor := [][]string{{"-6"}, {"--check=none"}, {"-T2", "--block-size=256KiB", "--check=sha256"}, {"-1", "--check=crc32"}}
	for _, pads := range [][]int{{0, 0, 0, 0}, {4, 8, 0, 12}, {0, 0, 0, 4096}, {1024, 4, 4, 4}} {
		var c []byte
		for i, p := range parts {
			c = append(c, xzCompress(t, p, argsFor[i]...)...)
			c = append(c, make([]byte, pads[i])...)
		}
		ref := xzDecompress(t, c)
		if !bytes.Equal(ref, data) {
			t.Fatal("xz -dc does not round-trip")
		}
		decodeAll(t, c, ref)
		idx, err := ReadIndex(bytes.NewReader(c), int64(len(c)))
		if err != nil {
			t.Fatal(err)
		}
		if len(idx.Streams) != 4 || idx.Streams[3].Padding != int64(pads[3]) {
			t.Fatalf("pads %v: streams %+v", pads, idx.Streams)
		}
	}
}

// TestBadPadding covers padding that is not a multiple of four bytes, or
// that precedes the first stream: both must be rejected.
func TestBadPadding(t *testing.T) {
	needXZ(t)
	c := xzCompress(t, []byte("hello, world"), "-6")
	tests := []struct {
		name string
		in   []byte
	}{
		{"pad3", append(bytes.Clone(c), 0, 0, 0)},
		{"pad5", append(bytes.Clone(c), 0, 0, 0, 0, 0)},
		{"leading", append(make([]byte, 4), c...)},
		{"garbage", append(bytes.Clone(c), 'j', 'u', 'n', 'k')},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r, err := NewReader(bytes.NewReader(tt.in))
			if err == nil {
				_, err = io.ReadAll(r)
			}
			requireXZError(t, err, len(tt.in))
			_, err = ReadIndex(bytes.NewReader(tt.in), int64(len(tt.in)))
			requireXZError(t, err, len(tt.in))
		})
	}
}

// requireXZError checks err is an *Error with an offset inside the input.
func requireXZError(t *testing.T, err error, size int) {
	t.Helper()
	var xe *Error
	if !errors.As(err, &xe) {
		t.Fatalf("got %v, want *Error", err)
	}
	if xe.Offset < 0 || xe.Offset > int64(size) {
		t.Fatalf("error offset %d outside input of %d bytes: %v", xe.Offset, size, err)
	}
}
