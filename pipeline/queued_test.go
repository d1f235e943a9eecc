package pipeline

import (
	"bytes"
	"context"
	"errors"
	"io"
	"testing"

	"github.com/usbflash/usbflash/pipeline/blockdev"
)

// queuedDevice is a recordingDevice that is a QueuedWriter: it records
// each WriteBlocksQueued's buffers (by LBA) and writes them one by one.
type queuedDevice struct {
	recordingDevice
	depth   int
	batches [][]int64 // the LBAs of each call's buffers
	fail    int64     // a call holding a buffer at this LBA fails it (-1: none)
}

func (d *queuedDevice) WriteQueueDepth() int { return d.depth }

func (d *queuedDevice) WriteBlocksQueued(ctx context.Context, lba int64, bufs [][]byte) error {
	var lbas []int64
	at := lba
	for _, p := range bufs {
		lbas = append(lbas, at)
		at += int64(len(p) / d.BlockSize())
	}
	d.mu.Lock()
	d.batches = append(d.batches, lbas)
	d.mu.Unlock()
	at = lba
	for _, p := range bufs {
		if at == d.fail {
			return &rangeError{lba: at, blocks: int64(len(p) / d.BlockSize())}
		}
		if err := d.WriteBlocks(ctx, at, p); err != nil {
			return err
		}
		at += int64(len(p) / d.BlockSize())
	}
	return nil
}

// rangeError is a failed command that names its blocks.
type rangeError struct{ lba, blocks int64 }

func (e *rangeError) Error() string                   { return "medium error" }
func (e *rangeError) BlockRange() (lba, blocks int64) { return e.lba, e.blocks }

// gateReader holds the writer's first WRITE (the zeroing of the first
// transfer) until the filler has asked for the byte at offset at: the
// transfers before it are then waiting in the ring, so the batches the
// writer makes do not depend on timing.
type gateReader struct {
	r      io.Reader
	off    int64
	at     int64
	open   chan struct{}
	opened bool // only the filler reads: no lock
}

func (g *gateReader) Read(p []byte) (int, error) {
	if g.off >= g.at {
		g.release()
	}
	n, err := g.r.Read(p)
	g.off += int64(n)
	if err != nil {
		g.release()
	}
	return n, err
}

func (g *gateReader) release() {
	if !g.opened {
		g.opened = true
		close(g.open)
	}
}

// TestWriteQueued: to a QueuedWriter the full transfers waiting in the
// ring go together, up to its depth, in the order of the image; the
// short last one goes alone, the first transfer is still written last,
// and the card holds the image. A command of a batch that fails is
// reported at its own blocks.
func TestWriteQueued(t *testing.T) {
	const bpt = testTransfer / testBS
	img := testImage(9*testTransfer+700, 7)
	for _, tc := range []struct {
		name    string
		fail    int64
		buffers int
		gate    int64 // transfers read before the first WRITE
		batch   int   // the first batch's transfers (the depth, or the buffers less one)
	}{
		{"written", -1, 7, 5, 3},
		{"a command fails", 3 * bpt, 7, 5, 3},
		{"one buffer left to the filler", -1, 3, 3, 2},
	} {
		t.Run(tc.name, func(t *testing.T) {
			mem := newTestDevice(t, 64*bpt, testBS, 0xEE)
			dev := &queuedDevice{recordingDevice: recordingDevice{Device: mem}, depth: 3, fail: tc.fail}
			gate := &gateReader{r: bytes.NewReader(img), at: tc.gate * testTransfer, open: make(chan struct{})}
			dev.beforeWrite = func(n int, lba int64) error {
				if n == 0 {
					<-gate.open
				}
				return nil
			}
			opts := WriteOptions{TransferSize: testTransfer, Buffers: tc.buffers, ExpectedSize: int64(len(img))}
			_, err := Write(context.Background(), dev, gate, opts)
			if tc.fail >= 0 {
				var de *DeviceError
				if !errors.As(err, &de) || de.LBA != tc.fail || de.Count != bpt {
					t.Fatalf("Write: %v; want a DeviceError at LBA %d, %d blocks", err, tc.fail, bpt)
				}
				return
			}
			if err != nil {
				t.Fatalf("Write: %v", err)
			}
			if got := devContents(t, mem)[:len(img)]; !bytes.Equal(got, img) {
				t.Fatal("the card does not hold the image")
			}
			// Transfers from 1 on were waiting: the first batch is as
			// many as it may hold.
			if len(dev.batches) == 0 || len(dev.batches[0]) != tc.batch || dev.batches[0][0] != bpt {
				t.Fatalf("batches %v; want the first of %d transfers from 1", dev.batches, tc.batch)
			}
			next := int64(bpt)
			for _, b := range dev.batches {
				if len(b) > tc.batch {
					t.Errorf("batch %v: more than %d", b, tc.batch)
				}
				for _, lba := range b {
					if lba != next {
						t.Fatalf("batches %v: not in the order of the image", dev.batches)
					}
					next += bpt
				}
			}
			w := dev.writes
			if last := w[len(w)-1]; last.lba != 0 || last.zeros {
				t.Errorf("last write %+v: want the first transfer", last)
			}
			if tail := w[len(w)-2]; tail.lba != 9*bpt {
				t.Errorf("write before the first %+v: want the short last transfer at LBA %d", tail, 9*bpt)
			}
		})
	}
}

var _ blockdev.QueuedWriter = (*queuedDevice)(nil)
