package sim

import (
	"bytes"
	"context"
	"encoding/binary"
	"errors"
	"testing"
	"time"

	"github.com/usbflash/usbflash/usbms"
)

// TestDataFaults checks the faults that change a data phase or the sense
// of a command, as a host sees them on the wire.
func TestDataFaults(t *testing.T) {
	tests := []struct {
		name        string
		fault       Fault
		in          bool
		cdb         []byte
		length      uint32
		wantMoved   int
		wantStall   bool
		wantStatus  byte
		wantResidue uint32
		wantSense   [3]byte
		wantInfo    uint32 // INFORMATION; VALID=1 is expected for MEDIUM ERROR only
		wantWritten int64
	}{
		{"stall-out part-way", Fault{Kind: StallDataOut, AfterBytes: 1024}, false, cdbWrite10(0, 8), 4096,
			1024, true, 1, 3072, [3]byte{0xB, 0x4B, 0}, 0, 2},
		{"stall-out at once", Fault{Kind: StallDataOut}, false, cdbWrite10(0, 8), 4096,
			0, true, 1, 4096, [3]byte{0xB, 0x4B, 0}, 0, 0},
		{"stall-in at once", Fault{Kind: StallDataIn}, true, cdbRead10(0, 4), 2048,
			0, true, 1, 2048, [3]byte{0xB, 0x4B, 0}, 0, 0},
		{"stall-in part-way", Fault{Kind: StallDataIn, AfterBytes: 512}, true, cdbRead10(0, 4), 2048,
			512, true, 1, 1536, [3]byte{0xB, 0x4B, 0}, 0, 0},
		{"short-in half", Fault{Kind: ShortDataIn}, true, cdbRead10(0, 4), 2048,
			1024, false, 0, 1024, [3]byte{}, 0, 0},
		{"short-in after 512", Fault{Kind: ShortDataIn, AfterBytes: 512}, true, cdbRead10(0, 4), 2048,
			512, false, 0, 1536, [3]byte{}, 0, 0},
		{"medium error on write", Fault{Kind: MediumError, LBA: 5}, false, cdbWrite10(0, 8), 4096,
			4096, false, 1, 4096 - 5*512, [3]byte{3, 0x0C, 0}, 5, 5},
		{"medium error on read", Fault{Kind: MediumError, LBA: 5}, true, cdbRead10(0, 8), 4096,
			5 * 512, true, 1, 4096 - 5*512, [3]byte{3, 0x11, 0}, 5, 0},
		{"medium error on first block", Fault{Kind: MediumError, LBA: 0}, true, cdbRead10(0, 8), 4096,
			0, true, 1, 4096, [3]byte{3, 0x11, 0}, 0, 0},
		{"medium error outside the command", Fault{Kind: MediumError, LBA: 100}, false, cdbWrite10(0, 8), 4096,
			4096, false, 0, 0, [3]byte{}, 0, 8},
		{"not-ready", Fault{Kind: NotReady}, true, cdbRead10(0, 1), 512,
			0, true, 1, 512, [3]byte{2, 0x04, 0x01}, 0, 0},
		{"unit attention", Fault{Kind: UnitAttention}, false, cdbWrite10(0, 1), 512,
			0, true, 1, 512, [3]byte{6, 0x28, 0}, 0, 0},
		{"fault on another LUN", Fault{Kind: NotReady, LUN: 1}, false, cdbWrite10(0, 1), 512,
			512, false, 0, 0, [3]byte{}, 0, 1},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			h := newHost(t, Config{LUNs: []LUN{{Blocks: 64}, {Blocks: 64}}})
			h.d.Inject(tt.fault)
			data := pattern(int(tt.length), 9)
			ex := h.run(0, tt.in, tt.length, tt.cdb, data)
			if ex.moved != tt.wantMoved || ex.dataStall != tt.wantStall {
				t.Errorf("moved %d stall %v, want %d stall %v", ex.moved, ex.dataStall, tt.wantMoved, tt.wantStall)
			}
			if ex.csw.status != tt.wantStatus || ex.csw.residue != tt.wantResidue {
				t.Errorf("CSW status %d residue %d, want %d residue %d", ex.csw.status, ex.csw.residue, tt.wantStatus, tt.wantResidue)
			}
			k, asc, ascq, raw := h.sense(0)
			if [3]byte{k, asc, ascq} != tt.wantSense {
				t.Errorf("sense %X/%02X/%02X, want %X/%02X/%02X", k, asc, ascq, tt.wantSense[0], tt.wantSense[1], tt.wantSense[2])
			}
			valid, info := raw[0]&0x80 != 0, binary.BigEndian.Uint32(raw[3:7])
			if wantValid := tt.wantSense[0] == keyMediumError; valid != wantValid || info != tt.wantInfo {
				t.Errorf("VALID %v INFORMATION %d, want VALID %v INFORMATION %d", valid, info, wantValid, tt.wantInfo)
			}
			if got := h.d.Stats().LUNs[0].BlocksWritten; got != tt.wantWritten {
				t.Errorf("%d blocks written, want %d", got, tt.wantWritten)
			}
			if !tt.in {
				// What was written is exactly the blocks counted.
				back := h.run(0, true, 64*512, cdbRead10(0, 64), nil).data
				n := int(tt.wantWritten) * 512
				if !bytes.Equal(back[:n], data[:n]) || !bytes.Equal(back[n:], make([]byte, len(back)-n)) {
					t.Error("medium does not hold exactly the written blocks")
				}
			}
			// One-shot faults are gone: the same command passes now.
			if ex := h.run(0, tt.in, tt.length, tt.cdb, data); ex.csw.status != 0 || ex.csw.residue != 0 {
				t.Errorf("retry: status %d residue %d", ex.csw.status, ex.csw.residue)
			}
		})
	}
}

// TestCountAndPersistence checks Count and Persistent.
func TestCountAndPersistence(t *testing.T) {
	h := newHost(t, oneLUN(LUN{}))
	h.d.Inject(Fault{Kind: NotReady, Count: 3})
	var statuses []byte
	for range 4 {
		statuses = append(statuses, h.run(0, false, 0, cdbTUR(), nil).csw.status)
	}
	if !bytes.Equal(statuses, []byte{1, 1, 1, 0}) {
		t.Fatalf("TUR statuses %v, want 1 1 1 0", statuses)
	}
	h.d.Inject(Fault{Kind: MediumError, LBA: 3, Persistent: true})
	for i := range 3 {
		if ex := h.run(0, true, 512, cdbRead10(3, 1), nil); ex.csw.status != 1 {
			t.Fatalf("read %d of a persistent bad block passed", i)
		}
	}
	// INQUIRY is never held up by UNIT ATTENTION or NOT READY.
	h.d.Inject(Fault{Kind: UnitAttention})
	h.d.Inject(Fault{Kind: NotReady})
	if ex := h.run(0, true, 36, cdbInquiry(false, 0, 36), nil); ex.csw.status != 0 {
		t.Fatal("INQUIRY failed under UA")
	}
	// REQUEST SENSE reports the pending UNIT ATTENTION and clears it.
	if k, asc, _, _ := h.sense(0); k != 6 || asc != 0x28 {
		t.Fatalf("sense %X/%02X, want 6/28", k, asc)
	}
	if ex := h.run(0, false, 0, cdbTUR(), nil); ex.csw.status != 1 {
		t.Fatal("NOT READY not reported after the UA")
	}
	if ex := h.run(0, false, 0, cdbTUR(), nil); ex.csw.status != 0 {
		t.Fatal("TUR still failing")
	}
}

// TestCSWFaults checks faults in the status phase.
func TestCSWFaults(t *testing.T) {
	h := newHost(t, oneLUN(LUN{}))
	h.d.Inject(Fault{Kind: BadCSWSignature})
	if c := h.run(0, false, 0, cdbTUR(), nil).csw; c.sig == cswSignature {
		t.Error("bad-csw-signature: signature intact")
	}
	h.d.Inject(Fault{Kind: BadCSWTag})
	if c := h.run(0, false, 0, cdbTUR(), nil).csw; c.tag == h.tag || c.sig != cswSignature {
		t.Errorf("bad-csw-tag: CSW %+v, tag of the CBW %d", c, h.tag)
	}
	h.d.Inject(Fault{Kind: PhaseError})
	if c := h.run(0, false, 0, cdbTUR(), nil).csw; c.status != 2 {
		t.Errorf("phase-error: status %d", c.status)
	}
	h.d.Inject(Fault{Kind: StallCSW})
	ex := h.run(0, false, 0, cdbTUR(), nil)
	if ex.cswStalls != 1 || ex.csw.status != 0 || ex.csw.tag != h.tag {
		t.Errorf("stall-csw: %d stalls, CSW %+v", ex.cswStalls, ex.csw)
	}
	if c := h.run(0, false, 0, cdbTUR(), nil).csw; c.status != 0 || c.sig != cswSignature || c.tag != h.tag {
		t.Errorf("faults outlived their count: %+v", c)
	}

	// Two CSW stalls: the retry after ClearHalt stalls too; reset recovery
	// then brings the device back.
	ctx := context.Background()
	h.d.Inject(Fault{Kind: StallCSW, Count: 2})
	h.d.BulkOut(ctx, buildCBW(77, 0, false, 0, cdbTUR()))
	for i := range 2 {
		if _, err := h.d.BulkIn(ctx, make([]byte, 13)); !errors.Is(err, usbms.ErrStall) {
			t.Fatalf("CSW read %d: %v, want ErrStall", i, err)
		}
		h.d.ClearHalt(ctx, true)
	}
	h.d.ClassRequest(ctx, false, 0xFF, 0, nil)
	h.d.ClearHalt(ctx, true)
	h.d.ClearHalt(ctx, false)
	if c := h.run(0, false, 0, cdbTUR(), nil).csw; c.status != 0 {
		t.Errorf("after reset recovery: %+v", c)
	}
}

// TestDisconnect checks that the device drops off after the given number
// of data bytes and stays gone.
func TestDisconnect(t *testing.T) {
	h := newHost(t, oneLUN(LUN{}))
	ctx := context.Background()
	h.d.Inject(Fault{Kind: Disconnect, AfterBytes: 1024})
	h.d.BulkOut(ctx, buildCBW(1, 2048, false, 0, cdbWrite10(0, 4)))
	n, err := h.d.BulkOut(ctx, make([]byte, 2048))
	if n != 1024 || !errors.Is(err, usbms.ErrNoDevice) {
		t.Fatalf("data-out across the disconnect: n=%d err=%v", n, err)
	}
	calls := map[string]func() error{
		"BulkIn":       func() error { _, err := h.d.BulkIn(ctx, make([]byte, 13)); return err },
		"BulkOut":      func() error { _, err := h.d.BulkOut(ctx, make([]byte, 31)); return err },
		"ClassRequest": func() error { _, err := h.d.ClassRequest(ctx, true, 0xFE, 0, make([]byte, 1)); return err },
		"ClearHalt":    func() error { return h.d.ClearHalt(ctx, true) },
		"ResetPort":    func() error { return h.d.ResetPort(ctx) },
	}
	for name, call := range calls {
		if err := call(); !errors.Is(err, usbms.ErrNoDevice) {
			t.Errorf("%s after disconnect: %v, want ErrNoDevice", name, err)
		}
	}

	// AfterBytes 0: the very next call fails.
	h2 := newHost(t, oneLUN(LUN{}))
	h2.d.Inject(Fault{Kind: Disconnect})
	if _, err := h2.d.BulkOut(ctx, buildCBW(1, 0, false, 0, cdbTUR())); !errors.Is(err, usbms.ErrNoDevice) {
		t.Fatalf("disconnect after 0 bytes: %v", err)
	}
}

// TestNeverAnswer checks that a hung command blocks until ctx is done,
// that reset recovery revives the device, and that a persistent hang
// needs ResetPort.
func TestNeverAnswer(t *testing.T) {
	tests := []struct {
		name       string
		persistent bool
		in         bool
		length     uint32
		cdb        []byte
	}{
		{"CSW", false, false, 0, cdbTUR()},
		{"data-in", false, true, 512, cdbRead10(0, 1)},
		{"data-out", false, false, 512, cdbWrite10(0, 1)},
		{"persistent", true, false, 0, cdbTUR()},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			h := newHost(t, oneLUN(LUN{}))
			h.d.Inject(Fault{Kind: NeverAnswer, Persistent: tt.persistent})
			hang := func() {
				t.Helper()
				ctx, cancel := context.WithCancel(context.Background())
				defer cancel()
				h.d.BulkOut(ctx, buildCBW(1, tt.length, tt.in, 0, tt.cdb))
				go cancel()
				var err error
				if tt.in || tt.length == 0 {
					_, err = h.d.BulkIn(ctx, make([]byte, max(tt.length, 13)))
				} else {
					_, err = h.d.BulkOut(ctx, make([]byte, tt.length))
				}
				if !errors.Is(err, context.Canceled) {
					t.Fatalf("hung transfer: %v, want context.Canceled", err)
				}
			}
			hang()
			ctx := context.Background()
			h.d.ClassRequest(ctx, false, 0xFF, 0, nil)
			if tt.persistent {
				hang()
				h.d.ResetPort(ctx)
				h.run(0, false, 0, cdbTUR(), nil) // the UNIT ATTENTION of the reset
			}
			if ex := h.run(0, tt.in, tt.length, tt.cdb, make([]byte, tt.length)); ex.csw.status != 0 {
				t.Fatalf("after recovery: status %d", ex.csw.status)
			}
		})
	}
}

// TestSpeedModel checks the speed model without timing anything: a slow
// transfer whose ctx ends while it is on the wire moves nothing and
// reports ctx.Err(), and a fast device completes.
func TestSpeedModel(t *testing.T) {
	h := newHost(t, Config{LUNs: []LUN{{Blocks: 8}}, Speed: 1}) // one byte per second
	ctx, cancel := context.WithCancel(context.Background())
	h.d.BulkOut(ctx, buildCBW(1, 512, true, 0, cdbRead10(0, 1)))
	go cancel()
	if _, err := h.d.BulkIn(ctx, make([]byte, 512)); !errors.Is(err, context.Canceled) {
		t.Fatalf("slow transfer: %v, want context.Canceled", err)
	}
	if s := h.d.Stats(); s.BytesIn != 0 {
		t.Fatalf("%d bytes moved by a cancelled transfer", s.BytesIn)
	}

	h = newHost(t, Config{LUNs: []LUN{{Blocks: 8}}, Latency: time.Hour})
	ctx, cancel = context.WithCancel(context.Background())
	h.d.BulkOut(ctx, buildCBW(1, 0, false, 0, cdbTUR()))
	go cancel()
	if _, err := h.d.BulkIn(ctx, make([]byte, 13)); !errors.Is(err, context.Canceled) {
		t.Fatalf("CSW behind an hour of latency: %v, want context.Canceled", err)
	}

	h = newHost(t, Config{LUNs: []LUN{{Blocks: 2048}}, Speed: 1e12, Latency: time.Nanosecond})
	if ex := h.run(0, true, 1<<20, cdbRead10(0, 2048), nil); ex.csw.status != 0 || len(ex.data) != 1<<20 {
		t.Fatalf("fast read: status %d, %d bytes", ex.csw.status, len(ex.data))
	}
}

// TestCorrupt: a corrupting WRITE succeeds and stores the block it names
// inverted, the others as sent; once it is used up a WRITE stores the
// block right, a persistent one never does.
func TestCorrupt(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name  string
		fault Fault
		bad   []bool // per WRITE of blocks 0-7: block 5 reads back inverted
	}{
		{"once", Fault{Kind: Corrupt, LBA: 5}, []bool{true, false}},
		{"twice", Fault{Kind: Corrupt, LBA: 5, Count: 2}, []bool{true, true, false}},
		{"persistent", Fault{Kind: Corrupt, LBA: 5, Persistent: true}, []bool{true, true, true}},
		{"outside the command", Fault{Kind: Corrupt, LBA: 100}, []bool{false}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			h := newHost(t, oneLUN(LUN{BlockSize: 512}))
			h.d.Inject(tc.fault)
			data := pattern(8*512, 3)
			for i, bad := range tc.bad {
				if ex := h.run(0, false, 4096, cdbWrite10(0, 8), data); ex.csw.status != 0 {
					t.Fatalf("write %d: status %d", i, ex.csw.status)
				}
				got := h.run(0, true, 4096, cdbRead10(0, 8), nil).data
				want := append([]byte(nil), data...)
				if bad {
					for j := 5 * 512; j < 6*512; j++ {
						want[j] = ^want[j]
					}
				}
				if !bytes.Equal(got, want) {
					t.Errorf("write %d: block 5 inverted should be %v, card differs", i, bad)
				}
			}
		})
	}
}
