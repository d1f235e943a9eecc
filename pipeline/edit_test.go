package pipeline

import (
	"bytes"
	"context"
	"errors"
	"testing"

	"github.com/usbflash/usbflash/pipeline/blockdev"
)

// TestWriteFirstEdit: a write whose first transfer is written by an Edit
// leaves on the card the image with the Edit's changes (in the first
// transfer, in a transfer the stream wrote, past the image's end), writes
// the first transfer last, and its digests verify the card as it is.
func TestWriteFirstEdit(t *testing.T) {
	const imgSize = 10*testTransfer + 3*testBS
	type patch struct {
		off  int64
		data string
	}
	tests := []struct {
		name    string
		digests bool
		patches []patch
	}{
		{"digests", true, []patch{{100, "in the first transfer"}, {3*testTransfer + 700, "in the middle, across blocks"}, {imgSize + 5*testBS, "past the image"}}},
		{"digests, a transfer's every block", true, []patch{{4 * testTransfer, string(bytes.Repeat([]byte{7}, testTransfer))}}},
		{"no digests", false, []patch{{testBS - 3, "across the first block"}, {9 * testTransfer, "late"}}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			img := testImage(imgSize, 3)
			dev := &recordingDevice{Device: newTestDevice(t, 64*16, testBS, 0xEE)}
			want := bytes.Clone(img) // whole blocks: no padding
			want = append(want, bytes.Repeat([]byte{0xEE}, 64*16*testBS-len(want))...)
			var edited *Digests
			opts := WriteOptions{TransferSize: testTransfer, ExpectedSize: imgSize, Digests: tc.digests,
				WriteFirst: func(ctx context.Context, d2 blockdev.Device, first []byte, d *Digests) error {
					e := NewEdit(ctx, d2, first, d)
					for _, p := range tc.patches {
						got := make([]byte, len(p.data))
						if _, err := e.ReadAt(got, p.off); err != nil {
							t.Fatal(err)
						}
						if !bytes.Equal(got, want[p.off:p.off+int64(len(p.data))]) {
							t.Fatalf("the Edit reads %q at %d, the card holds %q", got[:8], p.off, want[p.off:p.off+8])
						}
						if _, err := e.WriteAt([]byte(p.data), p.off); err != nil {
							t.Fatal(err)
						}
						copy(want[p.off:], p.data)
					}
					edited = d
					return e.Commit()
				}}
			res, err := Write(context.Background(), dev, bytes.NewReader(img), opts)
			if err != nil {
				t.Fatal(err)
			}
			if got := devContents(t, dev); !bytes.Equal(got, want) {
				i := 0
				for got[i] == want[i] {
					i++
				}
				t.Fatalf("the card does not hold the image with the changes: byte %d is %#x, want %#x", i, got[i], want[i])
			}
			if last := dev.writes[len(dev.writes)-1]; last.lba != 0 {
				t.Fatalf("the last write was at LBA %d, not the first transfer", last.lba)
			}
			if !tc.digests {
				return
			}
			res.Digests = *edited
			if _, err := VerifyDigests(context.Background(), dev, res.Digests, VerifyOptions{}); err != nil {
				t.Fatalf("the digests do not verify the edited card: %v", err)
			}
			// A byte changed anywhere the edit wrote is found.
			for _, p := range tc.patches {
				if err := dev.Device.WriteBlocks(context.Background(), p.off/testBS, bytes.Repeat([]byte{1}, testBS)); err != nil {
					t.Fatal(err)
				}
				var ve *VerifyError
				if _, err := VerifyDigests(context.Background(), dev, res.Digests, VerifyOptions{}); !errors.As(err, &ve) {
					t.Fatalf("a changed block at %d: verify says %v", p.off, err)
				}
				if err := dev.Device.WriteBlocks(context.Background(), p.off/testBS, want[p.off/testBS*testBS:][:testBS]); err != nil {
					t.Fatal(err)
				}
			}
		})
	}
}

// TestEditChecksWhatItReads: an Edit never builds on bytes the card did
// not keep: a range that reads back unlike its digest fails the edit, and
// the first transfer stays zeroed.
func TestEditChecksWhatItReads(t *testing.T) {
	img := testImage(8*testTransfer, 5)
	dev := &recordingDevice{Device: newTestDevice(t, 16*16, testBS, 0)}
	opts := WriteOptions{TransferSize: testTransfer, ExpectedSize: int64(len(img)), Digests: true,
		WriteFirst: func(ctx context.Context, d2 blockdev.Device, first []byte, d *Digests) error {
			// The card lost a block the stream wrote.
			if err := dev.Device.WriteBlocks(ctx, 5*16+2, make([]byte, testBS)); err != nil {
				t.Fatal(err)
			}
			e := NewEdit(ctx, d2, first, d)
			if _, err := e.WriteAt([]byte("x"), 5*testTransfer); err != nil {
				return err
			}
			return e.Commit()
		}}
	_, err := Write(context.Background(), dev, bytes.NewReader(img), opts)
	var ve *VerifyError
	if !errors.As(err, &ve) || ve.LBA != 5*16 {
		t.Fatalf("Write = %v, want the range at LBA 80 refused", err)
	}
	if got := devContents(t, dev); !isZero(got[:testTransfer]) {
		t.Fatal("the first transfer was written")
	}
}
