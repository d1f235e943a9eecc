package pipeline

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"testing"

	"github.com/usbflash/usbflash/pipeline/blockdev"
	"github.com/usbflash/usbflash/usbms"
	"github.com/usbflash/usbflash/usbms/sim"
)

// recording is a device that lists the WRITEs it was given, as byte
// extents.
type recording struct {
	blockdev.Device
	writes []blockdev.Extent
}

func (r *recording) WriteBlocks(ctx context.Context, lba int64, p []byte) error {
	bs := int64(r.BlockSize())
	r.writes = append(r.writes, blockdev.Extent{Off: lba * bs, Len: int64(len(p))})
	return r.Device.WriteBlocks(ctx, lba, p)
}

// TestRepair: a card that stores some blocks wrong once is written again
// in exactly those blocks (the first transfer's last) and then matches;
// one that keeps storing a block wrong is given up on after the rounds,
// naming it; a card that matches has nothing to repair. The card file
// holds the image after a repair that worked, and the reader was sent
// nothing outside the blocks that differed.
func TestRepair(t *testing.T) {
	t.Parallel()
	const size = 20*testTransfer + 100 // the last block padded
	const last = size / testBS         // the block holding the image's end
	block := func(lba int64) blockdev.Extent { return blockdev.Extent{Off: lba * testBS, Len: testBS} }
	for _, tc := range []struct {
		name   string
		faults string
		rounds int
		ranges []blockdev.Extent // the ranges repaired (in the order written)
		left   []blockdev.Extent // left differing: a *RepairError
		none   bool              // ErrNothingToRepair
	}{
		{name: "once", faults: "&fault=corrupt:lba=37", ranges: []blockdev.Extent{block(37)}},
		// Block 2 is written twice: zeroed first, then as the held first
		// transfer. 111 and 112 are of two commands, one range to repair.
		{name: "once in the first transfer and past it", faults: "&fault=corrupt:lba=2,count=2&fault=corrupt:lba=111&fault=corrupt:lba=112&fault=corrupt:lba=" + fmt.Sprint(last),
			ranges: []blockdev.Extent{{Off: 111 * testBS, Len: 2 * testBS}, block(last), block(2)}},
		{name: "twice, two rounds", faults: "&fault=corrupt:lba=37,count=2", rounds: 3, ranges: []blockdev.Extent{block(37), block(37)}},
		{name: "always", faults: "&fault=corrupt:lba=37,persistent&fault=corrupt:lba=90", rounds: 2,
			ranges: []blockdev.Extent{block(37), block(90), block(37)}, left: []blockdev.Extent{block(37)}},
		{name: "nothing differs", none: true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			card := filepath.Join(t.TempDir(), "card.img")
			dev, err := sim.Open("sim:" + card + "?size=1MiB" + tc.faults)
			if err != nil {
				t.Fatal(err)
			}
			defer dev.Close()
			ctx := context.Background()
			lun, err := usbms.OpenLUN(ctx, usbms.NewTransport(dev, usbms.TransportOptions{Name: "sim"}), 0, usbms.LUNOptions{})
			if err != nil {
				t.Fatal(err)
			}
			img := testImage(size, 21)
			res, err := Write(ctx, lun, bytes.NewReader(img), WriteOptions{TransferSize: testTransfer, ExpectedSize: size, Sync: true, Digests: true})
			if err != nil {
				t.Fatal(err)
			}
			open := func() (io.ReadCloser, error) { return io.NopCloser(bytes.NewReader(img)), nil }
			if _, err := VerifyWritten(ctx, lun, MethodDigests, res, VerifyOptions{TransferSize: testTransfer}, open); (err == nil) != tc.none {
				t.Fatalf("verify before the repair: %v", err)
			}
			rec := &recording{Device: lun}
			before := dev.Stats().LUNs[0].BlocksWritten
			rr, err := Repair(ctx, rec, open, size, RepairOptions{Verify: VerifyOptions{TransferSize: 4 * testTransfer}, TransferSize: testTransfer, Rounds: tc.rounds})
			var re *RepairError
			switch {
			case tc.none:
				if !errors.Is(err, ErrNothingToRepair) {
					t.Fatalf("err = %v, want nothing to repair", err)
				}
			case tc.left != nil:
				if !errors.As(err, &re) || !slices.Equal(re.Left, tc.left) || re.Rounds != tc.rounds {
					t.Fatalf("err = %v, want a RepairError leaving %v after %d rounds", err, tc.left, tc.rounds)
				}
				if re.First == nil || re.First.LBA != tc.left[0].Off/testBS {
					t.Errorf("first difference %+v, want at %v", re.First, tc.left[0])
				}
				t.Log(err)
			case err != nil:
				t.Fatalf("repair: %v", err)
			}
			if !slices.Equal(rec.writes, tc.ranges) {
				t.Errorf("writes %v, want %v", rec.writes, tc.ranges)
			}
			if got := dev.Stats().LUNs[0].BlocksWritten - before; got != extentsLen(tc.ranges)/testBS {
				t.Errorf("the card was written %d blocks, want %d", got, extentsLen(tc.ranges)/testBS)
			}
			if tc.left == nil && !tc.none {
				if rr.Ranges != len(tc.ranges)-rr.Rounds+1 || rr.Bytes != extentsLen(tc.ranges[:rr.Ranges]) {
					t.Errorf("result %+v for writes %v", rr, tc.ranges)
				}
				onCard, err := os.ReadFile(card)
				if err != nil {
					t.Fatal(err)
				}
				if !bytes.Equal(onCard[:size], img) {
					t.Error("the card file does not hold the image after the repair")
				}
			}
		})
	}
}
