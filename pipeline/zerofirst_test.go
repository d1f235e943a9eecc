package pipeline

import (
	"bytes"
	"context"
	"errors"
	"testing"
)

// TestZeroFirst (issue 41): the first transfer's region of a card is
// zeroed in commands the device takes and synced, and nothing past it is
// touched; a region larger than the card stops at its end; a failed
// command names its range and says how much was zeroed before it; a
// cancelled context still zeroes the whole region.
func TestZeroFirst(t *testing.T) {
	t.Parallel()
	const bs = 512
	for _, tc := range []struct {
		name     string
		blocks   int64 // the card's
		size     int   // asked; 0: DefaultTransferSize
		limit    int64 // blocks per command; 0: none
		failAt   int   // the write that fails, -1: none
		want     int64 // bytes zeroed
		commands int
	}{
		{name: "the default", blocks: 8192, failAt: -1, want: DefaultTransferSize, commands: 1},
		{name: "a reader that takes 64 KiB", blocks: 8192, limit: 128, failAt: -1, want: DefaultTransferSize, commands: 16},
		{name: "a card smaller than the region", blocks: 1000, size: 1 << 20, failAt: -1, want: 1000 * bs, commands: 1},
		{name: "a size not of whole blocks", blocks: 8192, size: 4096 + 100, failAt: -1, want: 4096, commands: 1},
		{name: "the second command fails", blocks: 8192, limit: 128, failAt: 1, want: 128 * bs, commands: 2},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			rec := &recordingDevice{Device: newTestDevice(t, tc.blocks, bs, oldByte)}
			rec.beforeWrite = func(n int, _ int64) error {
				if n == tc.failAt {
					return errors.New("the medium failed")
				}
				return nil
			}
			d := &limitedDevice{recordingDevice: recordingDevice{Device: rec}, limit: tc.limit}
			ctx, cancel := context.WithCancel(context.Background())
			cancel() // a stop request does not leave it half done
			n, err := ZeroFirst(ctx, d, "card", tc.size)
			if n != tc.want || len(rec.writes) != tc.commands {
				t.Fatalf("ZeroFirst = %d, %v in %d commands; want %d bytes in %d", n, err, len(rec.writes), tc.want, tc.commands)
			}
			data := devContents(t, rec)
			if !bytes.Equal(data[:n], make([]byte, n)) || bytes.Count(data[n:], []byte{oldByte}) != len(data)-int(n) {
				t.Error("the card is not zeroed up to the region's end and as it was after it")
			}
			var de *DeviceError
			if tc.failAt >= 0 {
				if !errors.As(err, &de) || de.Op != OpWrite || de.LBA != int64(tc.failAt)*tc.limit || rec.syncs != 0 {
					t.Errorf("err %v, syncs %d: want the failed command's range and no sync", err, rec.syncs)
				}
				return
			}
			if err != nil || rec.syncs != 1 {
				t.Errorf("err %v, %d syncs: want none and one", err, rec.syncs)
			}
		})
	}
}
