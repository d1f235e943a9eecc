package pipeline

import (
	"bytes"
	"context"
	"crypto/sha256"
	"errors"
	"fmt"
	"testing"

	"github.com/usbflash/usbflash/pipeline/blockdev"
)

// TestWritePieces: parts of transfers that Pieces leaves out keep the
// card's old bytes and are not sent, pieces are widened to whole blocks,
// the first transfer is written whole whatever Pieces says, Written and
// WrittenSHA256 describe exactly what was sent, and a verify limited to it
// passes, ignores the rest and still catches a bad written byte.
func TestWritePieces(t *testing.T) {
	const n = 8*testTransfer + 700
	type rel struct{ lo, hi int } // within a transfer
	for _, tc := range []struct {
		name     string
		pieces   map[int][]rel // by transfer; missing: the whole transfer
		want     []blockdev.Extent
		commands int // with image bytes
	}{
		{"all", nil, []blockdev.Extent{{Off: 0, Len: n}}, 9},
		{"first is never cut", map[int][]rel{0: {}}, []blockdev.Extent{{Off: 0, Len: n}}, 9},
		{"middle run skipped", map[int][]rel{2: {}, 3: {}, 4: {}}, []blockdev.Extent{{Off: 0, Len: 2 * testTransfer}, {Off: 5 * testTransfer, Len: n - 5*testTransfer}}, 6},
		{"second and last skipped", map[int][]rel{1: {}, 8: {}}, []blockdev.Extent{{Off: 0, Len: testTransfer}, {Off: 2 * testTransfer, Len: 6 * testTransfer}}, 7},
		{"pieces widened to blocks", map[int][]rel{3: {{100, 600}, {2000, 2100}}}, []blockdev.Extent{
			{Off: 0, Len: 3*testTransfer + 1024}, {Off: 3*testTransfer + 1536, Len: 1024}, {Off: 4 * testTransfer, Len: n - 4*testTransfer}}, 10},
		{"pieces that meet are merged", map[int][]rel{5: {{0, 1000}, {1000, 1500}, {4096, testTransfer}}}, []blockdev.Extent{
			{Off: 0, Len: 5*testTransfer + 1536}, {Off: 5*testTransfer + 4096, Len: n - 5*testTransfer - 4096}}, 10},
		{"last piece past the image end", map[int][]rel{8: {{0, 5000}}}, []blockdev.Extent{{Off: 0, Len: n}}, 9},
	} {
		t.Run(tc.name, func(t *testing.T) {
			img := testImage(n, 3)
			dev := &recordingDevice{Device: newTestDevice(t, 16*testTransfer/512, 512, 0xAA)}
			res, err := Write(context.Background(), dev, bytes.NewReader(img), WriteOptions{
				TransferSize: testTransfer, ExpectedSize: n, Sync: true,
				Pieces: func(off int64, p []byte, into []blockdev.Extent) []blockdev.Extent {
					if !bytes.Equal(p, img[off:off+int64(len(p))]) {
						t.Errorf("Pieces at %d got bytes that are not the image's", off)
					}
					rs, ok := tc.pieces[int(off/testTransfer)]
					if !ok {
						return append(into, blockdev.Extent{Off: off, Len: int64(len(p))})
					}
					for _, r := range rs {
						into = append(into, blockdev.Extent{Off: off + int64(r.lo), Len: int64(r.hi - r.lo)})
					}
					return into
				},
			})
			if err != nil {
				t.Fatal(err)
			}
			if fmt.Sprint(res.Written) != fmt.Sprint(tc.want) {
				t.Fatalf("Written %v, want %v", res.Written, tc.want)
			}
			card := devContents(t, dev)
			h := sha256.New()
			at := int64(0)
			for _, e := range tc.want {
				if !bytes.Equal(card[at:e.Off], bytes.Repeat([]byte{0xAA}, int(e.Off-at))) {
					t.Errorf("bytes %d-%d were not to be written but changed", at, e.Off)
				}
				if !bytes.Equal(card[e.Off:e.End()], img[e.Off:e.End()]) {
					t.Errorf("bytes %d-%d: not the image's", e.Off, e.End())
				}
				h.Write(img[e.Off:e.End()])
				at = e.End()
			}
			if got := [32]byte(h.Sum(nil)); got != res.WrittenSHA256 || res.SHA256 != sha256.Sum256(img) {
				t.Fatalf("WrittenSHA256 %x want %x; SHA256 must stay the image's", res.WrittenSHA256, got)
			}
			commands := 0
			for _, w := range dev.writes {
				if !w.zeros {
					commands++
				}
			}
			if commands != tc.commands {
				t.Errorf("%d commands with image bytes, want %d", commands, tc.commands)
			}

			opts := VerifyOptions{TransferSize: testTransfer, Only: res.Written}
			v, err := VerifyHash(context.Background(), dev, n, res.WrittenSHA256, opts)
			if err != nil || v.Bytes != extentsLen(tc.want) {
				t.Fatalf("VerifyHash limited to Written: %d bytes, %v", v.Bytes, err)
			}
			if _, err := Verify(context.Background(), dev, bytes.NewReader(img), n, opts); err != nil {
				t.Fatalf("Verify limited to Written: %v", err)
			}
			// A byte outside what was written is not the write's business;
			// one inside is caught by both verifies, at its offset.
			if len(tc.want) > 1 {
				corrupt(t, dev, tc.want[1].Off-1)
				if _, err := Verify(context.Background(), dev, bytes.NewReader(img), n, opts); err != nil {
					t.Fatalf("Verify looked outside Written: %v", err)
				}
			}
			bad := tc.want[len(tc.want)-1].End() - 1
			corrupt(t, dev, bad)
			var ve *VerifyError
			if _, err := VerifyHash(context.Background(), dev, n, res.WrittenSHA256, opts); !errors.As(err, &ve) {
				t.Fatalf("VerifyHash after corrupting byte %d: %v", bad, err)
			}
			if _, err := Verify(context.Background(), dev, bytes.NewReader(img), n, opts); !errors.As(err, &ve) || ve.Offset != bad {
				t.Fatalf("Verify after corrupting byte %d: %v", bad, err)
			}
		})
	}
}

func TestNextInExtents(t *testing.T) {
	list := []blockdev.Extent{{Off: 0, Len: 10}, {Off: 20, Len: 5}, {Off: 40, Len: 100}}
	for _, tc := range []struct {
		off, limit, want, left int64
	}{
		{0, 200, 0, 10},
		{5, 200, 5, 5},
		{10, 200, 20, 5},
		{25, 200, 40, 100},
		{30, 60, 40, 20},
		{140, 200, 200, 0},
		{30, 40, 40, 0},
	} {
		got, left := nextInExtents(list, tc.off, tc.limit)
		if got != tc.want || left != tc.left {
			t.Errorf("nextInExtents(%d, %d) = %d, %d; want %d, %d", tc.off, tc.limit, got, left, tc.want, tc.left)
		}
	}
}
