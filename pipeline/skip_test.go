package pipeline

import (
	"bytes"
	"context"
	"crypto/sha256"
	"errors"
	"fmt"
	"testing"
)

// TestWriteSkip: skipped transfers keep the card's old bytes and are not
// sent, the first transfer is written whatever Skip says, Written and
// WrittenSHA256 describe exactly what was sent, and a verify limited to it
// passes, ignores the skipped parts and still catches a bad written byte.
func TestWriteSkip(t *testing.T) {
	const n = 8*testTransfer + 700
	for _, tc := range []struct {
		name    string
		skipped []int // transfer indices Skip says yes to
		want    []Extent
	}{
		{"none", nil, []Extent{{0, n}}},
		{"first is never skipped", []int{0}, []Extent{{0, n}}},
		{"middle run", []int{2, 3, 4}, []Extent{{0, 2 * testTransfer}, {5 * testTransfer, n - 5*testTransfer}}},
		{"second and last", []int{1, 8}, []Extent{{0, testTransfer}, {2 * testTransfer, 6 * testTransfer}}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			img := testImage(n, 3)
			dev := &recordingDevice{BlockDevice: newTestDevice(t, 16*testTransfer/512, 512, 0xAA)}
			skip := map[int64]bool{}
			for _, i := range tc.skipped {
				skip[int64(i)*testTransfer] = true
			}
			res, err := Write(context.Background(), dev, bytes.NewReader(img), WriteOptions{
				TransferSize: testTransfer, ExpectedSize: n, Sync: true,
				Skip: func(off int64, p []byte) bool {
					if !bytes.Equal(p[:min(len(p), n-int(off))], img[off:min(off+int64(len(p)), n)]) {
						t.Errorf("Skip at %d got bytes that are not the image's", off)
					}
					return skip[off]
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
			for i := 0; i*testTransfer < n; i++ {
				off := i * testTransfer
				end := min(off+testTransfer, n)
				written := !skip[int64(off)] || i == 0
				if written {
					h.Write(img[off:end])
				}
				switch {
				case written && !bytes.Equal(card[off:end], img[off:end]):
					t.Errorf("transfer %d: not the image's bytes", i)
				case !written && !bytes.Equal(card[off:end], bytes.Repeat([]byte{0xAA}, end-off)):
					t.Errorf("transfer %d was skipped but the card's bytes changed", i)
				}
			}
			if got := [32]byte(h.Sum(nil)); got != res.WrittenSHA256 || res.SHA256 != sha256.Sum256(img) {
				t.Fatalf("WrittenSHA256 %x want %x; SHA256 must stay the image's", res.WrittenSHA256, got)
			}
			sent := 0
			for _, w := range dev.writes {
				if !w.zeros {
					sent += w.blocks * 512
				}
			}
			if want := int(extentsLen(tc.want)); sent < want || sent >= want+testTransfer {
				t.Errorf("sent %d image bytes in writes, want %d (+ padding)", sent, want)
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
			for _, i := range tc.skipped {
				if i > 0 {
					corrupt(t, dev, int64(i)*testTransfer+5)
				}
			}
			if _, err := Verify(context.Background(), dev, bytes.NewReader(img), n, opts); err != nil {
				t.Fatalf("Verify looked outside Written: %v", err)
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
	list := []Extent{{0, 10}, {20, 5}, {40, 100}}
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
