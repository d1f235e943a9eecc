package pipeline

import (
	"context"
	"crypto/sha256"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/usbflash/usbflash/internal/testkit/testpattern"
	"github.com/usbflash/usbflash/pipeline/blockdev"
)

// The tests talk to devices only through blockdev.Device plus the wrappers
// below, so memDevice can be replaced by the usbms/sim LUN by changing
// newTestDevice alone.

// speedModel makes a fake device as slow as a real one: every writeCmd costs
// a fixed latency plus its bytes at a fixed rate. The zero value is instant.
type speedModel struct {
	Latency     time.Duration
	BytesPerSec float64
}

func (s speedModel) cost(n int) time.Duration {
	d := s.Latency
	if s.BytesPerSec > 0 {
		d += time.Duration(float64(n) / s.BytesPerSec * float64(time.Second))
	}
	return d
}

// memDevice is a blockdev.Device in memory.
type memDevice struct {
	bs    int
	data  []byte
	speed speedModel
	syncs int
}

func newMemDevice(blocks int64, bs int, speed speedModel) *memDevice {
	return &memDevice{bs: bs, data: make([]byte, blocks*int64(bs)), speed: speed}
}

func (d *memDevice) String() string    { return "mem" }
func (d *memDevice) BlockSize() int    { return d.bs }
func (d *memDevice) BlockCount() int64 { return int64(len(d.data) / d.bs) }

func (d *memDevice) span(lba int64, p []byte) ([]byte, error) {
	if len(p)%d.bs != 0 || len(p) == 0 {
		return nil, fmt.Errorf("transfer of %d bytes is not whole blocks", len(p))
	}
	off := lba * int64(d.bs)
	if lba < 0 || off+int64(len(p)) > int64(len(d.data)) {
		return nil, fmt.Errorf("LBA %d+%d out of range", lba, len(p)/d.bs)
	}
	return d.data[off : off+int64(len(p))], nil
}

func (d *memDevice) ReadBlocks(ctx context.Context, lba int64, p []byte) error {
	s, err := d.span(lba, p)
	if err != nil {
		return err
	}
	if c := d.speed.cost(len(p)); c > 0 {
		time.Sleep(c)
	}
	copy(p, s)
	return nil
}

func (d *memDevice) WriteBlocks(ctx context.Context, lba int64, p []byte) error {
	s, err := d.span(lba, p)
	if err != nil {
		return err
	}
	if c := d.speed.cost(len(p)); c > 0 {
		time.Sleep(c)
	}
	copy(s, p)
	return nil
}

func (d *memDevice) Sync(ctx context.Context) error { d.syncs++; return nil }

// newTestDevice is the one place that decides what backs the tests: an
// instant memory device filled with old, a recognisable pattern.
func newTestDevice(t testing.TB, blocks int64, bs int, old byte) blockdev.Device {
	t.Helper()
	d := newMemDevice(blocks, bs, speedModel{})
	for i := range d.data {
		d.data[i] = old
	}
	return d
}

// devContents reads the whole device back through the seam.
func devContents(t testing.TB, dev blockdev.Device) []byte {
	t.Helper()
	p := make([]byte, dev.BlockCount()*int64(dev.BlockSize()))
	if len(p) == 0 {
		return p
	}
	if err := dev.ReadBlocks(context.Background(), 0, p); err != nil {
		t.Fatalf("reading the device back: %v", err)
	}
	return p
}

func deviceHash(t testing.TB, dev blockdev.Device) [32]byte {
	return sha256.Sum256(devContents(t, dev))
}

// writeCmd is one WriteBlocks call seen by a recordingDevice.
type writeCmd struct {
	lba    int64
	blocks int
	zeros  bool
}

// recordingDevice wraps a device, records every write and sync, and can
// run a hook before each write: to fail it or to cancel the caller.
type recordingDevice struct {
	blockdev.Device
	mu     sync.Mutex
	writes []writeCmd
	syncs  int
	// beforeWrite runs before write number n (0-based); an error fails it.
	beforeWrite func(n int, lba int64) error
}

func (d *recordingDevice) WriteBlocks(ctx context.Context, lba int64, p []byte) error {
	d.mu.Lock()
	n := len(d.writes)
	d.writes = append(d.writes, writeCmd{lba: lba, blocks: len(p) / d.BlockSize(), zeros: isZero(p)})
	hook := d.beforeWrite
	d.mu.Unlock()
	if hook != nil {
		if err := hook(n, lba); err != nil {
			return err
		}
	}
	return d.Device.WriteBlocks(ctx, lba, p)
}

func (d *recordingDevice) Sync(ctx context.Context) error {
	d.mu.Lock()
	d.syncs++
	d.mu.Unlock()
	return d.Device.Sync(ctx)
}

func isZero(p []byte) bool {
	for _, b := range p {
		if b != 0 {
			return false
		}
	}
	return true
}

// testImage is the shared test pattern.
func testImage(n int, seed byte) []byte { return testpattern.Bytes(n, seed) }
