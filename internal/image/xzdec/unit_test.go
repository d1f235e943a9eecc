package xzdec

import (
	"bytes"
	"context"
	"encoding/binary"
	"errors"
	"hash/crc32"
	"io"
	"strings"
	"testing"
	"testing/iotest"
)

func TestCopyMatch(t *testing.T) {
	tests := []struct {
		name           string
		size, pos      int
		dist1, n, fill int
	}{
		{"short", 64, 20, 5, 3, 1},
		{"overlap1-zero", 600, 10, 1, 300, 0},
		{"overlap1-byte", 600, 10, 1, 300, 1},
		{"overlap3", 600, 10, 3, 273, 1},
		{"exact", 600, 300, 273, 273, 1},
		{"wrap-src", 64, 3, 10, 20, 1},
		{"wrap-src-overlap", 64, 2, 5, 40, 1},
		{"wrap-src-whole", 64, 3, 60, 40, 1},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			want := make([]byte, tt.size)
			for i := range want {
				want[i] = byte(i*7+3) * byte(tt.fill)
			}
			got := bytes.Clone(want)
			copyMatch(got, tt.pos, tt.dist1, tt.n)
			for i := 0; i < tt.n; i++ { // the LZ77 definition, byte by byte
				src := (tt.pos + i - tt.dist1 + tt.size) % tt.size
				want[tt.pos+i] = want[src]
			}
			if !bytes.Equal(got, want) {
				t.Fatalf("copyMatch differs from byte-by-byte copy at %d", firstDiff(got, want))
			}
		})
	}
}

// TestDistOK pins the match-distance check on every word size: distances
// of 2^31 and more (from corrupt input) must be rejected where int is 32
// bits too (go test with GOARCH=arm, as make test-arm does).
func TestDistOK(t *testing.T) {
	tests := []struct {
		rep0        uint32
		total, dlim int
		want        bool
	}{
		{0, 1, 1, true},
		{0, 0, 1, false},
		{9, 10, 1 << 20, true},
		{10, 10, 1 << 20, false},
		{9, 1 << 20, 10, true},
		{10, 1 << 20, 10, false},
		{1<<31 - 2, 1<<31 - 1, 1<<31 - 1, true},
		{1 << 31, 1 << 20, 1 << 20, false},
		{0xbb9f976b, 1 << 20, 1 << 20, false}, // TestCorrupted's flip that crashed on arm
		{0xFFFFFFFF, 1 << 20, 1 << 20, false},
	}
	for _, tt := range tests {
		if got := distOK(tt.rep0, tt.total, tt.dlim); got != tt.want {
			t.Errorf("distOK(%#x, %d, %d) = %v, want %v", tt.rep0, tt.total, tt.dlim, got, tt.want)
		}
	}
}

func TestVLI(t *testing.T) {
	tests := []struct {
		in   []byte
		v    uint64
		n    int
		name string
	}{
		{[]byte{0}, 0, 1, "zero"},
		{[]byte{0x7F}, 127, 1, "one byte"},
		{[]byte{0x80, 0x01}, 128, 2, "two bytes"},
		{[]byte{0x80, 0x00}, 0, -1, "non-minimal"},
		{[]byte{0x80}, 0, 0, "short"},
		{bytes.Repeat([]byte{0xFF}, 10), 0, -1, "too long"},
		{append(bytes.Repeat([]byte{0xFF}, 8), 0x7F), 1<<63 - 1, 9, "max"},
	}
	for _, tt := range tests {
		v, n := getVLI(tt.in)
		if n != tt.n || (n > 0 && v != tt.v) {
			t.Errorf("%s: got (%d, %d), want (%d, %d)", tt.name, v, n, tt.v, tt.n)
		}
	}
}

// setFilterID rewrites the first block's first filter ID (a one-byte VLI)
// and fixes the block header CRC32.
func setFilterID(t *testing.T, c []byte, id byte) []byte {
	t.Helper()
	c = bytes.Clone(c)
	h := c[streamHeaderSize:]
	size := (int(h[0]) + 1) * 4
	p := 2
	if h[1]&0x40 != 0 {
		_, k := getVLI(h[p:])
		p += k
	}
	if h[1]&0x80 != 0 {
		_, k := getVLI(h[p:])
		p += k
	}
	h[p] = id
	binary.LittleEndian.PutUint32(h[size-4:], crc32.ChecksumIEEE(h[:size-4]))
	return c
}

// TestUnsupportedFilter checks that a filter we cannot decode fails before
// any output with an error naming it.
func TestUnsupportedFilter(t *testing.T) {
	needXZ(t)
	data := execImage()[:100000]
	c := xzCompress(t, data, "--x86", "--lzma2=preset=1")
	tests := []struct {
		id   byte
		name string
	}{
		{0x0B, "RISC-V BCJ"},
		{0x55, "unknown filter"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			d := setFilterID(t, c, tt.id)
			r, err := NewReader(bytes.NewReader(d))
			if err != nil {
				t.Fatal(err)
			}
			n, err := io.Copy(io.Discard, r)
			if n != 0 || !errors.Is(err, ErrUnsupported) || !strings.Contains(err.Error(), tt.name) {
				t.Fatalf("got %d bytes, %v; want no output and ErrUnsupported naming %q", n, err, tt.name)
			}
			requireXZError(t, err, len(d))
		})
	}
}

// TestParallelCancel checks that cancelling the context or closing the
// reader mid-stream stops the workers and never hangs.
func TestParallelCancel(t *testing.T) {
	needXZ(t)
	c := xzCompress(t, testImage(), "-1", "-T2", "--block-size=128KiB")
	ctx, cancel := context.WithCancel(context.Background())
	r, err := NewParallelReader(ctx, bytes.NewReader(c), int64(len(c)), Options{Workers: 2, MaxInFlight: 512 << 10})
	if err != nil {
		t.Fatal(err)
	}
	buf := make([]byte, 300000)
	if _, err := io.ReadFull(r, buf); err != nil {
		t.Fatal(err)
	}
	cancel()
	for err == nil {
		_, err = r.Read(buf)
	}
	if !errors.Is(err, context.Canceled) {
		t.Fatalf("after cancel: %v", err)
	}
	r.Close()

	r, err = NewParallelReader(context.Background(), bytes.NewReader(c), int64(len(c)), Options{Workers: 2})
	if err != nil {
		t.Fatal(err)
	}
	io.ReadFull(r, buf)
	r.Close()
	if _, err := r.Read(buf); err == nil {
		t.Fatal("Read after Close succeeded")
	}
}

// stallReader returns (0, nil) forever, which io.Reader permits but a
// decoder must not spin on.
type stallReader struct{}

func (stallReader) Read([]byte) (int, error) { return 0, nil }

func TestAwkwardReaders(t *testing.T) {
	needXZ(t)
	data := testImage()[:300000]
	c := xzCompress(t, data, "-6", "--block-size=100000")
	tests := []struct {
		name string
		r    io.Reader
	}{
		{"one-byte", iotest.OneByteReader(bytes.NewReader(c))},
		{"data-err", iotest.DataErrReader(bytes.NewReader(c))},
		{"half", iotest.HalfReader(bytes.NewReader(c))},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r, err := NewReader(tt.r)
			if err != nil {
				t.Fatal(err)
			}
			got, err := io.ReadAll(r)
			if err != nil || !bytes.Equal(got, data) {
				t.Fatalf("got %d bytes, %v", len(got), err)
			}
		})
	}
	t.Run("stall", func(t *testing.T) {
		r, err := NewReader(io.MultiReader(bytes.NewReader(c[:100]), stallReader{}))
		if err == nil {
			_, err = io.ReadAll(r)
		}
		if !errors.Is(err, io.ErrNoProgress) {
			t.Fatalf("got %v, want io.ErrNoProgress", err)
		}
		requireXZError(t, err, len(c))
	})
	t.Run("read-error", func(t *testing.T) {
		boom := errors.New("boom")
		r, err := NewReader(io.MultiReader(bytes.NewReader(c[:5000]), iotest.ErrReader(boom)))
		if err == nil {
			_, err = io.ReadAll(r)
		}
		if !errors.Is(err, boom) {
			t.Fatalf("got %v, want the reader's error", err)
		}
	})
}

// TestCutInsideNextStreamHeader: a download cut just after stream padding,
// inside the next stream's magic, is truncation (as xz says), not garbage.
func TestCutInsideNextStreamHeader(t *testing.T) {
	first := xzCompress(t, []byte("first stream"))
	for k := 1; k < len(headerMagic); k++ {
		in := append(append(append([]byte{}, first...), 0, 0, 0, 0), headerMagic[:k]...)
		z, err := NewReader(bytes.NewReader(in))
		if err == nil {
			_, err = io.Copy(io.Discard, z)
		}
		if !errors.Is(err, ErrTruncated) {
			t.Errorf("cut %d bytes into the next header: %v, want ErrTruncated", k, err)
		}
	}
	junk := append(append([]byte{}, first...), 'j', 'u', 'n')
	z, err := NewReader(bytes.NewReader(junk))
	if err == nil {
		_, err = io.Copy(io.Discard, z)
	}
	if !errors.Is(err, ErrFormat) {
		t.Errorf("trailing junk: %v, want ErrFormat", err)
	}
}
