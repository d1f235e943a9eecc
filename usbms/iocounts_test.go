package usbms_test

import (
	"context"
	"testing"

	"github.com/usbflash/usbflash/pipeline/blockdev"
	"github.com/usbflash/usbflash/usbms"
	"github.com/usbflash/usbflash/usbms/sim"
)

// countingWire is an Endpoint that counts as a backend does (one submit,
// one reap and one wait per bulk transfer), so that the LUN's counts can
// be told apart from the transport's.
type countingWire struct {
	usbms.Endpoint
	c usbms.IOCounts
}

func (w *countingWire) BulkOut(ctx context.Context, p []byte) (int, error) {
	w.c.Submits++
	w.c.Reaps++
	w.c.Waits++
	return w.Endpoint.BulkOut(ctx, p)
}

func (w *countingWire) BulkIn(ctx context.Context, p []byte) (int, error) {
	w.c.Submits++
	w.c.Reaps++
	return w.Endpoint.BulkIn(ctx, p)
}

func (w *countingWire) IOCounts() usbms.IOCounts { return w.c }

// TestLUNIOCounts: a LUN counts every command sent to its reader (each
// attempt: the step-down's failed command and its REQUEST SENSE alike)
// and passes on what its Endpoint counted; an Endpoint that does not count
// gives the commands alone.
func TestLUNIOCounts(t *testing.T) {
	for _, tc := range []struct {
		name     string
		counting bool
		choke    int64 // blocks; 0: none
		// The write of 64 blocks: its commands.
		commands int64
	}{
		{"one WRITE, endpoint counts", true, 0, 1},
		{"one WRITE, endpoint does not count", false, 0, 1},
		// The 64-block WRITE fails; the step below 64 blocks is 8, so
		// the range goes again as 8 WRITEs.
		{"WRITE stepped down to 8 blocks", true, 16, 1 + 8},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cfg := sim.Config{LUNs: []sim.LUN{{Blocks: 4096}}, VirtualClock: true}
			if tc.choke > 0 {
				cfg.Misbehaviour = sim.Misbehaviour{ChokeBlocks: tc.choke, ChokeMode: sim.ChokeStall}
			}
			dev, err := sim.New(cfg)
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { dev.Close() })
			var ep usbms.Endpoint = dev
			w := &countingWire{Endpoint: dev}
			if tc.counting {
				ep = w
			}
			tr := usbms.NewTransport(ep, usbms.TransportOptions{Name: "sim", ResetSettle: -1})
			l, err := usbms.OpenLUN(context.Background(), tr, 0, usbms.LUNOptions{})
			if err != nil {
				t.Fatal(err)
			}
			before := l.IOCounts()
			if before.Commands < 4 {
				t.Errorf("opening the LUN counted %d commands; it sends INQUIRY, TEST UNIT READY, READ CAPACITY, READ and MODE SENSE", before.Commands)
			}
			if err := l.WriteBlocks(context.Background(), 64, make([]byte, 64*512)); err != nil {
				t.Fatal(err)
			}
			got := l.IOCounts().Sub(before)
			if got.Commands != tc.commands {
				t.Errorf("%d commands counted for the write, want %d", got.Commands, tc.commands)
			}
			var want blockdev.IOCounts
			if tc.counting {
				want = w.c
			}
			if all := l.IOCounts(); all.Submits != want.Submits || all.Reaps != want.Reaps || all.Waits != want.Waits {
				t.Errorf("IOCounts %+v: the endpoint counted %+v", all, want)
			}
		})
	}
}
