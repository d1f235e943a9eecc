package pipeline

import (
	"bytes"
	"context"
	"crypto/sha256"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/usbflash/usbflash/internal/lib/units"
	"github.com/usbflash/usbflash/pipeline/blockdev"
)

// failingWriter fails its Write number n (0-based).
type failingWriter struct {
	n, calls int
	buf      bytes.Buffer
}

func (w *failingWriter) Write(p []byte) (int, error) {
	if w.calls++; w.calls-1 == w.n {
		return 0, errors.New("disk full")
	}
	return w.buf.Write(p)
}

func TestReadCopiesTheCard(t *testing.T) {
	card := testImage(64*testTransfer, 9)
	for _, size := range []int64{0, 1, testBS - 1, testTransfer, 5*testTransfer + 700, int64(len(card))} {
		t.Run(fmt.Sprint(size), func(t *testing.T) {
			dev := newTestDevice(t, int64(len(card)/testBS), testBS, 0)
			if err := dev.WriteBlocks(context.Background(), 0, card); err != nil {
				t.Fatal(err)
			}
			var out bytes.Buffer
			var phases []Phase
			res, err := Read(context.Background(), dev, &out, size, ReadOptions{
				TransferSize: testTransfer,
				Progress:     func(p Progress) { phases = append(phases, p.Phase) },
			})
			if err != nil {
				t.Fatal(err)
			}
			if !bytes.Equal(out.Bytes(), card[:size]) || res.Bytes != size || res.SHA256 != sha256.Sum256(card[:size]) {
				t.Fatalf("read %d bytes (result %d), want the card's first %d", out.Len(), res.Bytes, size)
			}
			if want := int((size + testTransfer - 1) / testTransfer); res.Reads != want {
				t.Errorf("%d READ commands, want %d", res.Reads, want)
			}
			if len(phases) == 0 || phases[0] != PhaseRead {
				t.Errorf("progress phases %v, want %q", phases, PhaseRead)
			}
		})
	}
}

func TestReadFailures(t *testing.T) {
	card := testImage(16*testTransfer, 9)
	newDev := func(t *testing.T) blockdev.Device {
		dev := newTestDevice(t, int64(len(card)/testBS), testBS, 0)
		if err := dev.WriteBlocks(context.Background(), 0, card); err != nil {
			t.Fatal(err)
		}
		return dev
	}
	t.Run("device", func(t *testing.T) {
		dev := &readFaultDevice{Device: newDev(t), bad: 5*testTransfer/testBS + 3}
		_, err := Read(context.Background(), dev, &bytes.Buffer{}, int64(len(card)), ReadOptions{TransferSize: testTransfer})
		var de *DeviceError
		if !errors.As(err, &de) || de.LBA != 5*testTransfer/testBS {
			t.Fatalf("err = %v, want a DeviceError at LBA %d", err, 5*testTransfer/testBS)
		}
	})
	t.Run("destination", func(t *testing.T) {
		_, err := Read(context.Background(), newDev(t), &failingWriter{n: 3}, int64(len(card)), ReadOptions{TransferSize: testTransfer})
		if err == nil || !strings.Contains(err.Error(), "disk full") || !strings.Contains(err.Error(), fmt.Sprint(3*testTransfer)) {
			t.Fatalf("err = %v, want the writer's error at byte offset %d", err, 3*testTransfer)
		}
	})
	t.Run("cancelled", func(t *testing.T) {
		ctx, cancel := context.WithCancel(context.Background())
		defer cancel()
		_, err := Read(ctx, newDev(t), &bytes.Buffer{}, int64(len(card)), ReadOptions{
			TransferSize: testTransfer, Progress: func(Progress) { cancel() },
		})
		// Once, in the units every amount of data is given in.
		var ce *CancelledError
		if !errors.Is(err, context.Canceled) || !errors.As(err, &ce) ||
			err.Error() != fmt.Sprintf("read of mem cancelled after %s (up to LBA %d)", units.FormatBytes(ce.Bytes), ce.LBA) {
			t.Fatalf("err = %v, want a cancelled read that says so once", err)
		}
	})
	t.Run("larger than the card", func(t *testing.T) {
		_, err := Read(context.Background(), newDev(t), &bytes.Buffer{}, int64(len(card))+1, ReadOptions{})
		if err == nil || !strings.Contains(err.Error(), "which holds") {
			t.Fatalf("err = %v", err)
		}
	})
}

// TestReadAddSinkTime: a sink's time after the read (a compressor's flush)
// can turn which side bounded it.
func TestReadAddSinkTime(t *testing.T) {
	r := ReadResult{Elapsed: time.Second, DeviceBusy: 900 * time.Millisecond, SinkBusy: 300 * time.Millisecond, Bound: BoundDevice, BoundRatio: 3}
	r.AddSinkTime(1500 * time.Millisecond)
	if r.Bound != BoundSink || r.Elapsed != 2500*time.Millisecond || r.BoundRatio != 2 {
		t.Errorf("after a 1.5 s flush: %+v, want the sink bound 2x over 2.5 s", r)
	}
}

// limitedDMADevice offers its memory and takes at most limit blocks per
// command, as a reader that reports a small maximum transfer.
type limitedDMADevice struct {
	*dmaDevice
	limit int64
}

func (d *limitedDMADevice) MaxTransfer() int64 { return d.limit }

// TestReadBuffers: with no buffer count given, a backup gets as many
// buffers as a write of the transfer size the device allows: a reader
// capped below the default READ size gets more, smaller ones, not the
// count of the size it cannot take.
func TestReadBuffers(t *testing.T) {
	for _, tc := range []struct {
		name          string
		limit         int64 // blocks per command; 0: none
		transfer, bfs int   // asked for
		wantSize      int
		wantCount     int
	}{
		{name: "default", wantSize: DefaultReadSize, wantCount: BuffersFor(DefaultReadSize)},
		{name: "capped reader", limit: 240, wantSize: 240 * testBS, wantCount: BuffersFor(240 * testBS)},
		{name: "capped reader, count asked", limit: 240, bfs: 3, wantSize: 240 * testBS, wantCount: 3},
		{name: "size asked", transfer: 8 * testTransfer, wantSize: 8 * testTransfer, wantCount: BuffersFor(8 * testTransfer)},
	} {
		t.Run(tc.name, func(t *testing.T) {
			d := &limitedDMADevice{dmaDevice: newDMADevice(t), limit: tc.limit}
			size := d.BlockCount() * int64(d.BlockSize())
			var out bytes.Buffer
			if _, err := Read(context.Background(), d, &out, size, ReadOptions{TransferSize: tc.transfer, Buffers: tc.bfs}); err != nil {
				t.Fatal(err)
			}
			if d.count != tc.wantCount || d.size != tc.wantSize {
				t.Errorf("asked for %d buffers of %d bytes, want %d of %d", d.count, d.size, tc.wantCount, tc.wantSize)
			}
			if out.Len() != int(size) {
				t.Errorf("read %d bytes, want %d", out.Len(), size)
			}
		})
	}
	if BuffersFor(240*testBS) <= BuffersFor(DefaultReadSize) {
		t.Fatalf("the table cannot tell the two counts apart: %d and %d", BuffersFor(240*testBS), BuffersFor(DefaultReadSize))
	}
}
