package sim

import (
	"context"
	"errors"
	"testing"

	"github.com/usbflash/usbflash/usbms"
)

// TestThirteenCases walks BOT 1.0 section 6.7: what the host announces in
// the CBW against what the command implies.
func TestThirteenCases(t *testing.T) {
	tests := []struct {
		name        string
		in          bool
		length      uint32
		cdb         []byte
		wantStatus  byte
		wantResidue uint32
		wantMoved   int
		wantStall   bool
		wantWritten int64 // blocks that reached the medium
	}{
		{"1 Hn=Dn", false, 0, cdbTUR(), 0, 0, 0, false, 0},
		{"2 Hn<Di", false, 0, cdbInquiry(false, 0, 36), 2, 0, 0, false, 0},
		{"3 Hn<Do", false, 0, cdbWrite10(0, 1), 2, 0, 0, false, 0},
		{"4 Hi>Dn", true, 512, cdbTUR(), 0, 512, 0, false, 0},
		{"5 Hi>Di", true, 512, cdbInquiry(false, 0, 36), 0, 476, 36, false, 0},
		{"6 Hi=Di", true, 512, cdbRead10(0, 1), 0, 0, 512, false, 0},
		{"7 Hi<Di", true, 512, cdbRead10(0, 2), 2, 0, 512, false, 0},
		{"8 Hi<>Do", true, 512, cdbWrite10(0, 1), 2, 512, 0, true, 0},
		{"9 Ho>Dn", false, 512, cdbTUR(), 0, 512, 0, true, 0},
		{"10 Ho<>Di", false, 512, cdbRead10(0, 1), 2, 512, 0, true, 0},
		{"11 Ho>Do", false, 1024, cdbWrite10(0, 1), 0, 512, 1024, false, 1},
		{"12 Ho=Do", false, 512, cdbWrite10(0, 1), 0, 0, 512, false, 1},
		{"13 Ho<Do", false, 512, cdbWrite10(0, 2), 2, 512, 512, false, 0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			h := newHost(t, oneLUN(LUN{}))
			ex := h.run(0, tt.in, tt.length, tt.cdb, pattern(int(tt.length), 1))
			if ex.csw.status != tt.wantStatus || ex.csw.residue != tt.wantResidue {
				t.Errorf("CSW status %d residue %d, want %d residue %d", ex.csw.status, ex.csw.residue, tt.wantStatus, tt.wantResidue)
			}
			if ex.moved != tt.wantMoved || ex.dataStall != tt.wantStall {
				t.Errorf("moved %d stall %v, want %d stall %v", ex.moved, ex.dataStall, tt.wantMoved, tt.wantStall)
			}
			if got := h.d.Stats().LUNs[0].BlocksWritten; got != tt.wantWritten {
				t.Errorf("%d blocks written, want %d", got, tt.wantWritten)
			}
			// Whatever happened, the device takes the next command.
			if ex := h.run(0, false, 0, cdbTUR(), nil); ex.csw.status != 0 {
				t.Errorf("TUR afterwards: status %d", ex.csw.status)
			}
		})
	}
}

// TestHaltedEndpointStallsUntilCleared checks that a halt is sticky: every
// transfer on that endpoint stalls until ClearHalt for it, and clearing the
// other endpoint does not help.
func TestHaltedEndpointStallsUntilCleared(t *testing.T) {
	h := newHost(t, oneLUN(LUN{WriteProtected: true}))
	ctx := context.Background()
	h.d.BulkOut(ctx, buildCBW(1, 512, false, 0, cdbWrite10(0, 1)))
	for range 3 {
		if _, err := h.d.BulkOut(ctx, make([]byte, 512)); !errors.Is(err, usbms.ErrStall) {
			t.Fatalf("bulk-out on a halted endpoint: %v, want ErrStall", err)
		}
	}
	h.d.ClearHalt(ctx, true) // the wrong one
	if _, err := h.d.BulkOut(ctx, make([]byte, 512)); !errors.Is(err, usbms.ErrStall) {
		t.Fatalf("bulk-out after clearing bulk-in: %v, want ErrStall", err)
	}
	if err := h.d.ClearHalt(ctx, false); err != nil {
		t.Fatal(err)
	}
	b := make([]byte, 13)
	n, err := h.d.BulkIn(ctx, b)
	if err != nil {
		t.Fatal(err)
	}
	if c := decodeCSW(t, b[:n]); c.status != 1 || c.residue != 512 || c.tag != 1 {
		t.Fatalf("CSW %+v", c)
	}
	if s := h.d.Stats(); s.ClearHaltsOut != 1 || s.ClearHaltsIn != 1 {
		t.Fatalf("stats %+v", s)
	}
}

// TestInvalidCBW checks that a CBW that is not valid or not meaningful
// stalls both endpoints, that ClearHalt alone does not recover, and that
// reset recovery does.
func TestInvalidCBW(t *testing.T) {
	good := buildCBW(9, 0, false, 0, cdbTUR())
	mut := func(f func(b []byte) []byte) []byte { return f(append([]byte(nil), good...)) }
	tests := []struct {
		name string
		cbw  []byte
	}{
		{"short", good[:30]},
		{"long", append(append([]byte(nil), good...), 0)},
		{"bad signature", mut(func(b []byte) []byte { b[0] = 'X'; return b })},
		{"CB length 0", mut(func(b []byte) []byte { b[14] = 0; return b })},
		{"CB length 17", mut(func(b []byte) []byte { b[14] = 17; return b })},
		{"reserved LUN bits", mut(func(b []byte) []byte { b[13] = 0x10; return b })},
		{"empty", nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			h := newHost(t, oneLUN(LUN{}))
			ctx := context.Background()
			if _, err := h.d.BulkOut(ctx, tt.cbw); err != nil {
				t.Fatalf("CBW transfer itself: %v", err)
			}
			if _, err := h.d.BulkIn(ctx, make([]byte, 13)); !errors.Is(err, usbms.ErrStall) {
				t.Fatalf("bulk-in after bad CBW: %v, want ErrStall", err)
			}
			h.d.ClearHalt(ctx, true)
			h.d.ClearHalt(ctx, false)
			if _, err := h.d.BulkOut(ctx, good); !errors.Is(err, usbms.ErrStall) {
				t.Fatalf("bulk-out after ClearHalt without reset: %v, want ErrStall", err)
			}
			// Reset recovery: Mass Storage Reset, then clear both halts.
			if _, err := h.d.ClassRequest(ctx, false, 0xFF, 0, nil); err != nil {
				t.Fatal(err)
			}
			if _, err := h.d.BulkOut(ctx, good); !errors.Is(err, usbms.ErrStall) {
				t.Fatalf("reset keeps halts until cleared: %v", err)
			}
			h.d.ClearHalt(ctx, true)
			h.d.ClearHalt(ctx, false)
			if ex := h.run(0, false, 0, cdbTUR(), nil); ex.csw.status != 0 {
				t.Fatalf("TUR after recovery: %d", ex.csw.status)
			}
			if s := h.d.Stats(); s.BadCBWs != 1 || s.BOTResets != 1 {
				t.Fatalf("stats %+v", s)
			}
		})
	}
}

// TestResetMidCommand checks that a Mass Storage Reset in the middle of a
// data phase returns the device to waiting for a CBW.
func TestResetMidCommand(t *testing.T) {
	h := newHost(t, oneLUN(LUN{}))
	ctx := context.Background()
	h.d.BulkOut(ctx, buildCBW(1, 4096, true, 0, cdbRead10(0, 8)))
	h.d.BulkIn(ctx, make([]byte, 512))
	if _, err := h.d.ClassRequest(ctx, false, 0xFF, 0, nil); err != nil {
		t.Fatal(err)
	}
	if ex := h.run(0, true, 36, cdbInquiry(false, 0, 36), nil); ex.csw.status != 0 || len(ex.data) != 36 {
		t.Fatalf("INQUIRY after reset: status %d, %d bytes", ex.csw.status, len(ex.data))
	}
}

// TestClassRequests covers Get Max LUN and requests the device refuses.
func TestClassRequests(t *testing.T) {
	tests := []struct {
		name      string
		cfg       Config
		in        bool
		req       uint8
		value     uint16
		data      []byte
		wantStall bool
		wantByte  byte
	}{
		{"max LUN of one", oneLUN(LUN{}), true, 0xFE, 0, make([]byte, 1), false, 0},
		{"max LUN of three", Config{LUNs: []LUN{{Blocks: 1}, {Blocks: 1}, {Blocks: 1}}}, true, 0xFE, 0, make([]byte, 1), false, 2},
		{"max LUN stalls", Config{LUNs: []LUN{{Blocks: 1}}, StallGetMaxLUN: true}, true, 0xFE, 0, make([]byte, 1), true, 0},
		{"max LUN with no buffer", oneLUN(LUN{}), true, 0xFE, 0, nil, true, 0},
		{"reset with value", oneLUN(LUN{}), false, 0xFF, 1, nil, true, 0},
		{"reset as in", oneLUN(LUN{}), true, 0xFF, 0, nil, true, 0},
		{"unknown request", oneLUN(LUN{}), false, 0x01, 0, nil, true, 0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			h := newHost(t, tt.cfg)
			n, err := h.d.ClassRequest(context.Background(), tt.in, tt.req, tt.value, tt.data)
			if tt.wantStall {
				if !errors.Is(err, usbms.ErrStall) {
					t.Fatalf("err %v, want ErrStall", err)
				}
				// A control stall does not halt the bulk endpoints.
				if ex := h.run(0, false, 0, cdbTUR(), nil); ex.csw.status != 0 {
					t.Fatal("TUR after control stall failed")
				}
				return
			}
			if err != nil || n != 1 || tt.data[0] != tt.wantByte {
				t.Fatalf("n=%d err=%v byte=%d, want 1 byte %d", n, err, tt.data[0], tt.wantByte)
			}
		})
	}
}

// TestResetPort checks re-enumeration: halts, faults and ejection cleared,
// then one UNIT ATTENTION 6/29/00 per LUN.
func TestResetPort(t *testing.T) {
	h := newHost(t, oneLUN(LUN{}))
	ctx := context.Background()
	h.d.Inject(Fault{Kind: NotReady, Persistent: true})
	h.run(0, false, 0, []byte{opStartStopUnit, 0, 0, 0, 0x02, 0}, nil)
	h.d.BulkOut(ctx, []byte("garbage")) // wedge the device
	if err := h.d.ResetPort(ctx); err != nil {
		t.Fatal(err)
	}
	if ex := h.run(0, false, 0, cdbTUR(), nil); ex.csw.status != 1 {
		t.Fatal("first command after port reset passed; want UNIT ATTENTION")
	}
	if k, asc, _, _ := h.sense(0); k != 6 || asc != 0x29 {
		t.Fatalf("sense %X/%02X, want 6/29", k, asc)
	}
	if ex := h.run(0, false, 0, cdbTUR(), nil); ex.csw.status != 0 {
		t.Fatalf("TUR after UA: status %d (fault or ejection survived the reset)", ex.csw.status)
	}
	if s := h.d.Stats(); s.PortResets != 1 {
		t.Fatalf("PortResets %d", s.PortResets)
	}
}

// TestBlockedTransfers checks that a transfer the device NAKs returns when
// ctx is done, wrapping ctx.Err(), and that Close releases it.
func TestBlockedTransfers(t *testing.T) {
	h := newHost(t, oneLUN(LUN{}))
	ctx, cancel := context.WithCancel(context.Background())
	go cancel()
	if _, err := h.d.BulkIn(ctx, make([]byte, 13)); !errors.Is(err, context.Canceled) {
		t.Fatalf("bulk-in with no command: %v, want context.Canceled", err)
	}
	go h.d.Close()
	if _, err := h.d.BulkIn(context.Background(), make([]byte, 13)); !errors.Is(err, usbms.ErrNoDevice) {
		t.Fatalf("bulk-in across Close: %v, want ErrNoDevice", err)
	}
}

// TestCSWBufferTooSmall checks that a CSW read into a short buffer fails
// and the CSW stays pending.
func TestCSWBufferTooSmall(t *testing.T) {
	h := newHost(t, oneLUN(LUN{}))
	ctx := context.Background()
	h.d.BulkOut(ctx, buildCBW(4, 0, false, 0, cdbTUR()))
	if _, err := h.d.BulkIn(ctx, make([]byte, 12)); err == nil {
		t.Fatal("12-byte CSW read succeeded")
	}
	b := make([]byte, 13)
	if n, err := h.d.BulkIn(ctx, b); err != nil || decodeCSW(t, b[:n]).tag != 4 {
		t.Fatalf("CSW after overflow: %v", err)
	}
}
