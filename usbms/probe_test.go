package usbms_test

import (
	"context"
	"testing"

	"github.com/usbflash/usbflash/usbms"
	"github.com/usbflash/usbflash/usbms/sim"
)

// TestProbeLUNs: a reader with a card, an empty slot and a write-protected
// card is described slot by slot; the empty slot by INQUIRY alone.
func TestProbeLUNs(t *testing.T) {
	cfg := sim.Config{LUNs: []sim.LUN{
		{Blocks: 64, Vendor: "CARD", Product: "SLOT0"},
		{NoMedium: true, Vendor: "EMPTY", Product: "SLOT1"},
		{Blocks: 32, WriteProtected: true, Vendor: "WP", Product: "SLOT2"},
	}}
	dev, err := sim.New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	defer dev.Close()
	tr := usbms.NewTransport(dev, testTransport)
	got, err := usbms.ProbeLUNs(context.Background(), tr, testLUN)
	if err != nil {
		t.Fatal(err)
	}
	want := []struct {
		opened, noMedium bool
		vendor           string
		blocks           int64
	}{
		{true, false, "CARD", 64},
		{false, true, "EMPTY", 0},
		{true, false, "WP", 32},
	}
	if len(got) != len(want) {
		t.Fatalf("%d summaries, want %d", len(got), len(want))
	}
	for i, w := range want {
		s := got[i]
		if s.Number != i || (s.LUN != nil) != w.opened || s.NoMedium != w.noMedium || !s.HasInquiry || s.Inquiry.Vendor != w.vendor {
			t.Errorf("LUN %d: %+v, want opened %v, no medium %v, vendor %s", i, s, w.opened, w.noMedium, w.vendor)
			continue
		}
		if s.LUN != nil && s.LUN.BlockCount() != w.blocks {
			t.Errorf("LUN %d: %d blocks, want %d", i, s.LUN.BlockCount(), w.blocks)
		}
		if (s.Err != nil) == w.opened {
			t.Errorf("LUN %d: err %v with opened %v", i, s.Err, w.opened)
		}
	}
}
