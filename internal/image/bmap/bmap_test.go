package bmap

import (
	"bytes"
	"crypto/sha1"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"testing/iotest"

	"github.com/usbflash/usbflash/internal/testkit/factsonly"
)

// testImage is an image of blocks 4096-byte blocks where the listed blocks
// hold random bytes and the rest are zero, plus a short tail when tail > 0.
func testImage(blocks int64, data []int64, tail int) []byte {
	img := make([]byte, blocks*4096+int64(tail))
	rng := rand.New(rand.NewPCG(uint64(blocks), 7))
	for _, b := range data {
		end := min((b+1)*4096, int64(len(img)))
		for i := b * 4096; i < end; i++ {
			img[i] = byte(rng.Uint32() | 1)
		}
	}
	return img
}

// writeSparse writes img to a new file, leaving its zero blocks as holes so
// that bmaptool create (which maps what is allocated) sees what we mean.
func writeSparse(t *testing.T, path string, img []byte) {
	t.Helper()
	f, err := os.Create(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if err := f.Truncate(int64(len(img))); err != nil {
		t.Fatal(err)
	}
	zero := make([]byte, 4096)
	for off := 0; off < len(img); off += 4096 {
		blk := img[off:min(off+4096, len(img))]
		if bytes.Equal(blk, zero[:len(blk)]) {
			continue
		}
		if _, err := f.WriteAt(blk, int64(off)); err != nil {
			t.Fatal(err)
		}
	}
}

func bmaptool(t *testing.T, args ...string) {
	t.Helper()
	if _, err := exec.LookPath("bmaptool"); err != nil {
		t.Fatal("bmaptool is needed to prove compatibility with it: apt-get install bmap-tools")
	}
	out, err := exec.Command("bmaptool", args...).CombinedOutput()
	if err != nil {
		t.Fatalf("bmaptool %s: %v\n%s", strings.Join(args, " "), err, out)
	}
}

func sum256(p []byte) string { s := sha256.Sum256(p); return hex.EncodeToString(s[:]) }

func TestParseMapsOfBmaptoolCreate(t *testing.T) {
	img := testImage(300, []int64{0, 1, 2, 40, 41, 299}, 1000)
	dir := t.TempDir()
	path := filepath.Join(dir, "os.img")
	writeSparse(t, path, img)
	for _, tc := range []struct {
		name     string
		args     []string
		checksum bool
	}{
		{"checksums", nil, true},
		{"no checksums", []string{"--no-checksum"}, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			out := filepath.Join(dir, tc.name+".bmap")
			bmaptool(t, append(append([]string{"create"}, tc.args...), "-o", out, path)...)
			data, err := os.ReadFile(out)
			if err != nil {
				t.Fatal(err)
			}
			m, err := Parse(data)
			if err != nil {
				t.Fatalf("Parse: %v\n%s", err, data)
			}
			if m.ImageSize != int64(len(img)) || m.BlockSize != 4096 {
				t.Fatalf("size %d block %d, want %d and 4096", m.ImageSize, m.BlockSize, len(img))
			}
			// The short tail block 300 holds the last 1000 bytes (block 299's
			// data ends at 300*4096); bmaptool maps every allocated block.
			var got []string
			for _, r := range m.Ranges {
				got = append(got, r.String())
				if (r.Checksum != "") != tc.checksum {
					t.Errorf("range %s checksum %q, want one: %v", r, r.Checksum, tc.checksum)
				}
			}
			if want := "0-2 40-41 299-299"; strings.Join(got, " ") != want {
				t.Errorf("ranges %q, want %q", strings.Join(got, " "), want)
			}
			if _, err := io.Copy(io.Discard, NewChecker(m, bytes.NewReader(img))); err != nil {
				t.Errorf("checking the image it was made from: %v", err)
			}
		})
	}
}

// oldMap writes a map of an older format by hand, with its file checksum
// when the format has one.
func oldMap(version, typeTag, fileTag, attr string, ranges []Range, imageSize int64) []byte {
	var b strings.Builder
	fmt.Fprintf(&b, "<?xml version=\"1.0\" ?>\n<bmap version=\"%s\">\n<ImageSize>%d</ImageSize>\n<BlockSize>4096</BlockSize>\n"+
		"<BlocksCount>%d</BlocksCount>\n", version, imageSize, (imageSize+4095)/4096)
	var mapped int64
	for _, r := range ranges {
		mapped += r.Last - r.First + 1
	}
	fmt.Fprintf(&b, "<MappedBlocksCount>%d</MappedBlocksCount>\n", mapped)
	sumLen := 0
	if typeTag != "" {
		fmt.Fprintf(&b, "<ChecksumType>%s</ChecksumType>\n", typeTag)
	}
	if fileTag != "" {
		sumLen = sha256.Size * 2
		if typeTag != SHA256 {
			sumLen = sha1.Size * 2
		}
		fmt.Fprintf(&b, "<%s>%s</%s>\n", fileTag, strings.Repeat("0", sumLen), fileTag)
	}
	b.WriteString("<BlockMap>\n")
	for _, r := range ranges {
		text := r.String()
		if r.First == r.Last {
			text = fmt.Sprint(r.First)
		}
		if attr != "" {
			fmt.Fprintf(&b, "<Range %s=\"%s\">%s</Range>\n", attr, r.Checksum, text)
		} else {
			fmt.Fprintf(&b, "<Range>%s</Range>\n", text)
		}
	}
	b.WriteString("</BlockMap>\n</bmap>\n")
	out := []byte(b.String())
	if fileTag != "" {
		h := newHash(typeTag)
		if typeTag == "" {
			h = sha1.New()
		}
		h.Write(out)
		i := bytes.Index(out, []byte(strings.Repeat("0", sumLen)))
		copy(out[i:], hex.EncodeToString(h.Sum(nil)))
	}
	return out
}

func TestParseEveryVersion(t *testing.T) {
	img := testImage(20, []int64{1, 2, 7}, 0)
	sums := func(h func([]byte) string) []Range {
		return []Range{{1, 2, h(img[4096 : 3*4096])}, {7, 7, h(img[7*4096 : 8*4096])}}
	}
	sha1s := func(p []byte) string { s := sha1.Sum(p); return hex.EncodeToString(s[:]) }
	noSums := []Range{{First: 1, Last: 2}, {First: 7, Last: 7}}
	for _, tc := range []struct {
		version, typeTag, fileTag, attr string
		ranges                          []Range
		wantType                        string
	}{
		{"1.0", "", "", "", noSums, ""},
		{"1.2", "", "", "", noSums, ""},
		{"1.3", "", "BmapFileSHA1", "sha1", sums(sha1s), SHA1},
		{"1.4", SHA256, "BmapFileChecksum", "chksum", sums(sum256), SHA256},
		{"2.0", SHA256, "BmapFileChecksum", "chksum", sums(sum256), SHA256},
		{"2.0", SHA1, "BmapFileChecksum", "chksum", sums(sha1s), SHA1},
		{"2.7", SHA256, "", "chksum", sums(sum256), SHA256}, // a later minor version: compatible by rule
	} {
		t.Run(tc.version+tc.typeTag, func(t *testing.T) {
			m, err := Parse(oldMap(tc.version, tc.typeTag, tc.fileTag, tc.attr, tc.ranges, int64(len(img))))
			if err != nil {
				t.Fatal(err)
			}
			if m.ChecksumType != tc.wantType || len(m.Ranges) != 2 || m.Ranges[1] != tc.ranges[1] {
				t.Fatalf("parsed %+v", m)
			}
			if _, err := io.Copy(io.Discard, NewChecker(m, bytes.NewReader(img))); err != nil {
				t.Fatal(err)
			}
		})
	}
}

func TestParseRefuses(t *testing.T) {
	img := testImage(20, []int64{1, 2, 7}, 0)
	good := []Range{{1, 2, sum256(img[4096 : 3*4096])}, {7, 7, sum256(img[7*4096 : 8*4096])}}
	v2 := func(ranges []Range, size int64) []byte {
		return oldMap("2.0", SHA256, "BmapFileChecksum", "chksum", ranges, size)
	}
	tampered := v2(good, int64(len(img)))
	tampered = bytes.Replace(tampered, []byte("<Range "), []byte("<Range  "), 1)
	for _, tc := range []struct {
		name string
		data []byte
		want string
	}{
		{"garbage", []byte("this is not XML <<<"), "not a bmap XML file"},
		{"other XML", []byte("<html><body/></html>"), "not a bmap XML file"},
		{"unknown major version", bytes.Replace(v2(good, int64(len(img))), []byte(`"2.0"`), []byte(`"3.0"`), 1), "newer than this usbflash"},
		{"bad version", bytes.Replace(v2(good, int64(len(img))), []byte(`"2.0"`), []byte(`"two"`), 1), "want major.minor"},
		{"overlapping", v2([]Range{{1, 3, sum256(nil)}, {3, 7, sum256(nil)}}, int64(len(img))), "overlaps"},
		{"out of order", v2([]Range{{7, 7, sum256(nil)}, {1, 2, sum256(nil)}}, int64(len(img))), "overlaps or precedes"},
		{"past the end", v2([]Range{{1, 2, sum256(nil)}, {19, 20, sum256(nil)}}, int64(len(img))), "ends past the image's last block 19"},
		{"blocks count", bytes.Replace(v2(good, int64(len(img))), []byte("<BlocksCount>20<"), []byte("<BlocksCount>21<"), 1), "BlocksCount is 21"},
		{"mapped count", bytes.Replace(v2(good, int64(len(img))), []byte("<MappedBlocksCount>3<"), []byte("<MappedBlocksCount>4<"), 1), "MappedBlocksCount is 4"},
		{"short checksum", v2([]Range{{1, 2, "abcd"}}, int64(len(img))), "is not a sha256"},
		{"no image size", bytes.Replace(v2(good, int64(len(img))), []byte("<ImageSize>81920</ImageSize>"), nil, 1), "no ImageSize"},
		{"altered", tampered, "altered or damaged"},
		{"unknown checksum", oldMap("2.0", "md5", "", "chksum", good, int64(len(img))), `ChecksumType "md5"`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			m, err := Parse(tc.data)
			var be *Error
			if !errors.As(err, &be) || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("Parse = %v, %v; want an *Error containing %q", m, err, tc.want)
			}
			factsonly.Check(t, err.Error())
		})
	}
}

func TestCheckImageSize(t *testing.T) {
	m := &Map{ImageSize: 1000}
	for _, tc := range []struct {
		size int64
		ok   bool
	}{{1000, true}, {999, false}, {1001, false}} {
		if err := m.CheckImageSize(tc.size); (err == nil) != tc.ok {
			t.Errorf("CheckImageSize(%d) = %v", tc.size, err)
		}
	}
}

func TestMapped(t *testing.T) {
	m := &Map{ImageSize: 20 * 4096, BlockSize: 4096, Ranges: []Range{{First: 2, Last: 3}, {First: 10, Last: 10}}}
	for _, tc := range []struct {
		off, n int64
		want   bool
	}{
		{0, 8192, false},
		{0, 8193, true},
		{4 * 4096, 6 * 4096, false},
		{4*4096 - 1, 1, true},
		{10 * 4096, 1, true},
		{11 * 4096, 9 * 4096, false},
		{0, 20 * 4096, true},
	} {
		if got := m.Mapped(tc.off, tc.n); got != tc.want {
			t.Errorf("Mapped(%d, %d) = %v, want %v", tc.off, tc.n, got, tc.want)
		}
	}
}

// TestCheckerStopsBeforeTheBadRangeEnds: the Read holding the end of a
// range whose bytes were changed returns no bytes, only the error naming
// the range, whatever the read size.
func TestCheckerStopsBeforeTheBadRangeEnds(t *testing.T) {
	img := testImage(64, []int64{1, 2, 3, 4, 5, 40}, 0)
	m := NewBuilderMap(t, img)
	bad := bytes.Clone(img)
	bad[3*4096+17] ^= 0x40 // inside range 1-5
	for _, readSize := range []int{4096, 3 * 4096, 16 * 4096, len(img)} {
		t.Run(fmt.Sprint(readSize), func(t *testing.T) {
			c := NewChecker(m, iotest.HalfReader(bytes.NewReader(bad)))
			var delivered int64
			buf := make([]byte, readSize)
			for {
				n, err := c.Read(buf)
				delivered += int64(n)
				if err == nil {
					continue
				}
				var ce *ChecksumError
				if !errors.As(err, &ce) || ce.Range.String() != "1-5" || n != 0 {
					t.Fatalf("Read = %d, %v; want 0 and a ChecksumError for range 1-5", n, err)
				}
				break
			}
			// Everything delivered lies before the read that holds byte 6*4096-1.
			if limit := int64(6*4096-1) / int64(readSize) * int64(readSize); delivered != limit {
				t.Fatalf("delivered %d bytes before the error, want %d", delivered, limit)
			}
		})
	}
}

// NewBuilderMap builds the map of img with a Builder.
func NewBuilderMap(t *testing.T, img []byte) *Map {
	t.Helper()
	b := NewBuilder(0)
	b.Write(img)
	return b.Map()
}

func TestCheckerSize(t *testing.T) {
	img := testImage(8, []int64{1}, 0)
	m := NewBuilderMap(t, img)
	for _, tc := range []struct {
		name string
		img  []byte
		want string
	}{
		{"exact", img, ""},
		{"short", img[:len(img)-100], "ends after"},
		{"long", append(bytes.Clone(img), 1), "longer than"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := io.Copy(io.Discard, NewChecker(m, bytes.NewReader(tc.img)))
			if (tc.want == "" && err != nil) || (tc.want != "" && (err == nil || !strings.Contains(err.Error(), tc.want))) {
				t.Fatalf("err %v, want %q", err, tc.want)
			}
		})
	}
}

func TestBuilderMapsNonZeroBlocks(t *testing.T) {
	for _, tc := range []struct {
		name   string
		img    []byte
		ranges string
	}{
		{"empty", nil, ""},
		{"all zero", make([]byte, 5*4096+3), ""},
		{"runs", testImage(30, []int64{0, 1, 5, 6, 7, 29}, 0), "0-1 5-7 29-29"},
		{"short tail", testImage(3, []int64{3}, 100), "3-3"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			// Written in odd pieces: blocks straddle Write calls.
			b := NewBuilder(4096)
			for p := tc.img; len(p) > 0; {
				k := min(len(p), 1000+len(p)%3333)
				b.Write(p[:k])
				p = p[k:]
			}
			m := b.Map()
			var got []string
			for _, r := range m.Ranges {
				got = append(got, r.String())
			}
			if strings.Join(got, " ") != tc.ranges || m.ImageSize != int64(len(tc.img)) {
				t.Fatalf("ranges %q size %d, want %q and %d", strings.Join(got, " "), m.ImageSize, tc.ranges, len(tc.img))
			}
			data, err := Marshal(m)
			if err != nil {
				t.Fatal(err)
			}
			back, err := Parse(data)
			if err != nil {
				t.Fatalf("Parse(Marshal): %v\n%s", err, data)
			}
			if _, err := io.Copy(io.Discard, NewChecker(back, bytes.NewReader(tc.img))); err != nil {
				t.Fatal(err)
			}
		})
	}
}

// TestBmaptoolCopyTakesOurMaps: bmaptool copy, given the image and our map,
// writes a file identical to the image.
func TestBmaptoolCopyTakesOurMaps(t *testing.T) {
	img := testImage(500, []int64{0, 1, 2, 100, 101, 102, 103, 499}, 777)
	dir := t.TempDir()
	path := filepath.Join(dir, "backup.img")
	if err := os.WriteFile(path, img, 0o644); err != nil {
		t.Fatal(err)
	}
	data, err := Marshal(NewBuilderMap(t, img))
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path+".bmap", data, 0o644); err != nil {
		t.Fatal(err)
	}
	dest := filepath.Join(dir, "card.img")
	bmaptool(t, "copy", "--bmap", path+".bmap", path, dest)
	got, err := os.ReadFile(dest)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(got, img) {
		t.Fatalf("bmaptool copy wrote %d bytes that differ from the %d-byte image", len(got), len(img))
	}
}

// TestCheckerRefusesUnmappedData: a map that leaves out blocks holding data
// (the largest range dropped, as an edited map would) stops the stream at
// the first byte it leaves out that is not zero, whatever the reads' sizes.
func TestCheckerRefusesUnmappedData(t *testing.T) {
	img := testImage(40, []int64{0, 1, 5, 6, 7, 20, 39}, 100)
	full := &Map{ImageSize: int64(len(img)), BlockSize: 4096, Ranges: []Range{{0, 1, ""}, {5, 7, ""}, {20, 20, ""}, {39, 40, ""}}}
	tests := []struct {
		name   string
		ranges []Range
		want   int64 // first unmapped byte with data; -1: none
	}{
		{"every data block mapped", full.Ranges, -1},
		{"largest range dropped", []Range{{0, 1, ""}, {20, 20, ""}, {39, 40, ""}}, 5 * 4096},
		{"last range dropped", []Range{{0, 1, ""}, {5, 7, ""}, {20, 20, ""}}, 39 * 4096},
		{"zero blocks mapped too", []Range{{0, 40, ""}}, -1},
	}
	for _, tt := range tests {
		for _, read := range []int{4096, 64 << 10, 1000} {
			m := *full
			m.Ranges = tt.ranges
			_, err := io.CopyBuffer(io.Discard, struct{ io.Reader }{NewChecker(&m, bytes.NewReader(img))}, make([]byte, read))
			var ue *UnmappedDataError
			switch {
			case tt.want < 0 && err != nil:
				t.Errorf("%s, reads of %d: %v", tt.name, read, err)
			case tt.want >= 0 && (!errors.As(err, &ue) || ue.Off != tt.want):
				t.Errorf("%s, reads of %d: %v, want unmapped data at byte %d", tt.name, read, err, tt.want)
			}
		}
	}
}
