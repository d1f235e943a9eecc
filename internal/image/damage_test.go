package image

import (
	"archive/zip"
	"errors"
	"os/exec"
	"strings"
	"testing"

	"github.com/usbflash/usbflash/internal/testkit/factsonly"
)

// srcDamageInputs returns one small compressed image per format, single
// stream/member/frame so that no cut point lands on a valid boundary.
func srcDamageInputs(t *testing.T, size int64) (img []byte, encs map[string][]byte) {
	img = genOSImage(size, 11)
	encs = map[string][]byte{}
	for _, c := range srcFastCodecs() {
		if c.goEnc == nil {
			if _, err := exec.LookPath(c.cli[0]); err != nil {
				t.Logf("%s: skipped, the %s CLI is not installed", c.format, c.cli[0])
				continue
			}
		}
		encs[c.format.String()] = srcCompress(t, c, img)
	}
	if b, err := srcXzGo(img); err == nil {
		encs["xz-go"] = b
	}
	if b, err := srcZstdGo(img); err == nil {
		encs["zstd-go"] = b
	}
	encs["zip-deflate"] = srcZip(t, zip.Deflate, "os.img", img)
	encs["zip-store"] = srcZip(t, zip.Store, "os.img", img)
	return img, encs
}

// srcWantSourceError checks that err is a *SourceError with an offset no
// further than the input, and returns it.
func srcWantSourceError(t *testing.T, what string, err error, inputLen int) *Error {
	t.Helper()
	var se *Error
	if !errors.As(err, &se) {
		t.Fatalf("%s: error %v (%T), want *SourceError", what, err, err)
	}
	if se.Offset < 0 || se.Offset > int64(inputLen) {
		t.Errorf("%s: offset %d outside the %d-byte input", what, se.Offset, inputLen)
	}
	if se.Kind != ErrDamaged && se.Kind != ErrTruncated {
		t.Errorf("%s: kind %v, want damage", what, se.Kind)
	}
	factsonly.Check(t, se.Error())
	return se
}

// srcFastCodecs are srcCodecs with small dictionaries and blocks: the
// container structure is the same, but each of the thousands of decodes a
// cut test runs does not allocate megabytes.
func srcFastCodecs() []srcCodec {
	cs := append([]srcCodec(nil), srcCodecs...)
	for i := range cs {
		switch cs[i].format {
		case FormatXz:
			cs[i].cli = []string{"xz", "-c", "-T1", "--lzma2=preset=6,dict=64KiB"}
		case FormatBzip2:
			cs[i].cli = []string{"bzip2", "-c", "-1"}
		}
	}
	return cs
}

// srcCuts lists cut points in [from, to): all of them near both ends and
// every stride-th in between.
func srcCuts(from, to, stride int) []int {
	var cuts []int
	for c := from; c < to; c++ {
		if c < from+80 || c >= to-80 || (c-from)%stride == 0 {
			cuts = append(cuts, c)
		}
	}
	return cuts
}

// srcWantTruncated decodes enc[:cut] seekable and as a stream and requires a
// *SourceError that says truncated: never a clean EOF, never a panic.
func srcWantTruncated(t *testing.T, name string, enc []byte, cut int) {
	t.Helper()
	for _, how := range []string{"seekable", "stream"} {
		if how == "stream" && strings.HasPrefix(name, "zip") {
			continue // a zip from a pipe is refused before any data is read
		}
		_, out, err := srcDecode(t, enc[:cut], how)
		if err == nil {
			t.Fatalf("cut at %d of %d (%s): decoded %d bytes without error", cut, len(enc), how, len(out))
		}
		se := srcWantSourceError(t, "cut "+itoa(int64(cut))+" "+how, err, cut)
		if se.Kind != ErrTruncated || !strings.Contains(se.Error(), "truncated") {
			t.Fatalf("cut at %d of %d (%s): %v; want it called truncated", cut, len(enc), how, err)
		}
		if !isTruncation(err) && !errors.Is(err, errDecodedShort) && !strings.HasPrefix(name, "zip") {
			t.Errorf("cut at %d (%s): cause %v is not an unexpected EOF", cut, how, se.Err)
		}
	}
}

// TestSourceTruncated cuts every archive of a small image at every point,
// and of a larger, multi-block image at many points.
func TestSourceTruncated(t *testing.T) {
	for _, tc := range []struct {
		name   string
		size   int64
		stride int
	}{{"small", 6001, 1}, {"multiblock", 300_001, 997}} {
		if testing.Short() {
			tc.stride *= 10
		}
		_, encs := srcDamageInputs(t, tc.size)
		for name, enc := range encs {
			t.Run(tc.name+"/"+name, func(t *testing.T) {
				for _, cut := range srcCuts(1, len(enc), tc.stride) {
					srcWantTruncated(t, name, enc, cut)
				}
			})
		}
	}
}

// TestSourceTruncatedMulti cuts inside the second member, stream or frame of
// a concatenation, where a decoder could mistake the end of the first for
// the end of the input.
func TestSourceTruncatedMulti(t *testing.T) {
	a, b := genOSImage(20_001, 21), genOSImage(9_001, 22)
	for _, c := range srcFastCodecs() {
		if c.goEnc == nil {
			if _, err := exec.LookPath(c.cli[0]); err != nil {
				t.Logf("%s: skipped, the %s CLI is not installed", c.format, c.cli[0])
				continue
			}
		}
		first := srcCompress(t, c, a)
		if c.format == FormatXz {
			first = srcConcat(first, make([]byte, 4)) // stream padding
		}
		enc := srcConcat(first, srcCompress(t, c, b))
		stride := 7
		if testing.Short() {
			stride *= 10 // the first and last 80 cuts still, fewer between (make test-riscv64 and the other emulated runs)
		}
		t.Run(c.format.String(), func(t *testing.T) {
			for _, cut := range srcCuts(len(first)+1, len(enc), stride) {
				srcWantTruncated(t, c.format.String(), enc, cut)
			}
		})
	}
}

// TestSourceCorrupt flips bytes in the middle of every archive: the damage
// must surface as a *SourceError whose offset is at or past the damage.
func TestSourceCorrupt(t *testing.T) {
	_, encs := srcDamageInputs(t, 150_001)
	for name, enc := range encs {
		for _, at := range []int{len(enc) / 3, len(enc) / 2, len(enc) * 2 / 3} {
			t.Run(name+"/"+itoa(int64(at)), func(t *testing.T) {
				bad := append([]byte(nil), enc...)
				for i := at; i < at+4; i++ {
					bad[i] ^= 0x55
				}
				_, _, err := srcDecode(t, bad, "seekable")
				if err == nil {
					t.Fatalf("flipped bytes at %d of %d: decoded without error", at, len(enc))
				}
				se := srcWantSourceError(t, "flip", err, len(bad))
				if se.Offset < int64(at) {
					t.Errorf("offset %d is before the damage at %d", se.Offset, at)
				}
				t.Logf("%v", err)
			})
		}
	}
}
