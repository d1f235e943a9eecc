package usbms_test

import (
	"bytes"
	"context"
	"errors"
	"sync"
	"testing"
	"time"

	"github.com/usbflash/usbflash/usbms"
	"github.com/usbflash/usbflash/usbms/sim"
)

// Options for tests: no waiting worth the name, and a per-command timeout
// short enough that NeverAnswer tests finish quickly. The timeout is a bound
// on how long a test may take, never something a test asserts on.
var (
	testTransport = usbms.TransportOptions{Name: "sim", Timeout: 200 * time.Millisecond, ResetTimeout: time.Second, ResetSettle: time.Millisecond}
	testLUN       = usbms.LUNOptions{RetryBackoff: time.Millisecond, ReadyWait: 50 * time.Millisecond}
)

// wire wraps an Endpoint and counts bulk transfers; it can make ResetPort
// fail, to reach the end of the recovery ladder.
type wire struct {
	usbms.Endpoint
	mu            sync.Mutex
	bulkOut       int
	bulkIn        int
	maxOut        int
	failPortReset bool
}

func (w *wire) BulkOut(ctx context.Context, p []byte) (int, error) {
	w.mu.Lock()
	w.bulkOut++
	w.maxOut = max(w.maxOut, len(p))
	w.mu.Unlock()
	return w.Endpoint.BulkOut(ctx, p)
}

func (w *wire) BulkIn(ctx context.Context, p []byte) (int, error) {
	w.mu.Lock()
	w.bulkIn++
	w.mu.Unlock()
	return w.Endpoint.BulkIn(ctx, p)
}

func (w *wire) ResetPort(ctx context.Context) error {
	if w.failPortReset {
		return errors.New("test: port reset refused")
	}
	return w.Endpoint.ResetPort(ctx)
}

func (w *wire) counts() (out, in int) {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.bulkOut, w.bulkIn
}

// rig is a simulated reader with LUN 0 open on it.
type rig struct {
	dev  *sim.Device
	wire *wire
	t    *usbms.Transport
	lun  *usbms.LUN
}

func newRig(t *testing.T, cfg sim.Config, topts usbms.TransportOptions) *rig {
	t.Helper()
	dev, err := sim.New(cfg)
	if err != nil {
		t.Fatalf("sim.New: %v", err)
	}
	t.Cleanup(func() { dev.Close() })
	w := &wire{Endpoint: dev}
	tr := usbms.NewTransport(w, topts)
	l, err := usbms.OpenLUN(context.Background(), tr, 0, testLUN)
	if err != nil {
		t.Fatalf("OpenLUN: %v", err)
	}
	return &rig{dev: dev, wire: w, t: tr, lun: l}
}

func oneLUN(blocks int64) sim.Config {
	return sim.Config{LUNs: []sim.LUN{{Blocks: blocks}}}
}

// pattern returns n bytes that differ from block to block and from run to
// run of seed, so a misplaced block cannot pass for the right one.
func pattern(n int, seed byte) []byte {
	p := make([]byte, n)
	for i := range p {
		p[i] = byte(i/512) ^ byte(i) ^ seed
	}
	return p
}

// readBack reads what the LUN holds at lba and compares it with want.
func (r *rig) readBack(t *testing.T, lba int64, want []byte) {
	t.Helper()
	got := make([]byte, len(want))
	if err := r.lun.ReadBlocks(context.Background(), lba, got); err != nil {
		t.Fatalf("ReadBlocks(%d): %v", lba, err)
	}
	if !bytes.Equal(got, want) {
		t.Fatalf("data at LBA %d differs from what was written", lba)
	}
}
