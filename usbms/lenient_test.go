package usbms_test

import (
	"bytes"
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/usbflash/usbflash/internal/testkit/factsonly"
	"github.com/usbflash/usbflash/scsi"
	"github.com/usbflash/usbflash/usbms"
	"github.com/usbflash/usbflash/usbms/sim"
)

const opStartStop, opModeSense6, opModeSense10, opSync10, opInquiry, opTUR, opRC10 = 0x1B, 0x1A, 0x5A, 0x35, 0x12, 0x00, 0x25

// writeReadBack writes n bytes of a pattern at lba in 1 MiB pieces and
// reads them back the same way.
func writeReadBack(t *testing.T, l *usbms.LUN, lba int64, n int) {
	t.Helper()
	ctx := context.Background()
	data := pattern(n, 5)
	piece := min(n, 1<<20)
	for off := 0; off < n; off += piece {
		if err := l.WriteBlocks(ctx, lba+int64(off/512), data[off:off+piece]); err != nil {
			t.Fatalf("WriteBlocks at byte %d: %v", off, err)
		}
	}
	got := make([]byte, n)
	for off := 0; off < n; off += piece {
		if err := l.ReadBlocks(ctx, lba+int64(off/512), got[off:off+piece]); err != nil {
			t.Fatalf("ReadBlocks at byte %d: %v", off, err)
		}
	}
	if !bytes.Equal(got, data) {
		t.Fatal("what was read back differs from what was written")
	}
}

// TestLenientTransport: readers whose CSWs Linux's usb-storage tolerates
// open, write and read without a single reset.
func TestLenientTransport(t *testing.T) {
	tests := []struct {
		name    string
		mis     sim.Misbehaviour
		lun     sim.LUN
		learned string // a fact Learned must hold
	}{
		{name: "residue past the length", mis: sim.Misbehaviour{Residue: sim.ResidueOver}, learned: "INQUIRY moved all 36 bytes"},
		{name: "residue unrelated to what moved", mis: sim.Misbehaviour{Residue: sim.ResidueGarbage}, learned: "INQUIRY moved all 36 bytes"},
		{name: "residue the whole length", mis: sim.Misbehaviour{Residue: sim.ResidueLength}, learned: "INQUIRY moved all 36 bytes"},
		{name: "CSW signed USBU", mis: sim.Misbehaviour{CSWSignature: 0x55425355}, learned: `CSW signature "USBU"`},
		{name: "CSW in the data phase", mis: sim.Misbehaviour{CSWInData: true}, lun: sim.LUN{RejectModeSense: true}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			tt.lun.Blocks = 8192
			dev, l, got := virtualRig(t, sim.Config{LUNs: []sim.LUN{tt.lun}, Misbehaviour: tt.mis}, 0)
			writeReadBack(t, l, 0, 2<<20)
			if s := dev.Stats(); s.BOTResets != 0 || s.PortResets != 0 || len(got.all) != 0 {
				t.Errorf("%d resets, %d port resets, notices %v; want none", s.BOTResets, s.PortResets, got.all)
			}
			if tt.learned == "" {
				return
			}
			var facts []string
			for _, x := range l.Learned() {
				facts = append(facts, x.What)
				factsonly.Check(t, x.What)
			}
			if !strings.Contains(strings.Join(facts, "; "), tt.learned) {
				t.Errorf("learned %q, want %q", facts, tt.learned)
			}
		})
	}
}

// TestMaxLUNLikeLinux: every failure of Get Max LUN means one LUN, and
// SINGLE_LUN readers are not asked.
func TestMaxLUNLikeLinux(t *testing.T) {
	for _, mode := range []sim.MaxLUNMode{sim.MaxLUNHang, sim.MaxLUNError} {
		dev, err := sim.New(sim.Config{LUNs: []sim.LUN{{Blocks: 64}}, VirtualClock: true, Misbehaviour: sim.Misbehaviour{MaxLUN: mode}})
		if err != nil {
			t.Fatal(err)
		}
		defer dev.Close()
		n, err := usbms.NewTransport(dev, usbms.TransportOptions{}).MaxLUN(context.Background())
		if n != 0 || err != nil {
			t.Errorf("maxlun=%s: %d, %v; want 0, nil", mode, n, err)
		}
	}
	dev, _ := sim.New(sim.Config{LUNs: []sim.LUN{{Blocks: 64}}, Misbehaviour: sim.Misbehaviour{MaxLUN: sim.MaxLUNReport, MaxLUNValue: 3}})
	defer dev.Close()
	if n, err := usbms.NewTransport(dev, usbms.TransportOptions{Quirks: usbms.QuirkSingleLUN}).MaxLUN(context.Background()); n != 0 || err != nil {
		t.Errorf("SINGLE_LUN: %d, %v", n, err)
	}
	if n, _ := usbms.NewTransport(dev, usbms.TransportOptions{}).MaxLUN(context.Background()); n != 3 {
		t.Errorf("without SINGLE_LUN: %d, want the device's 3", n)
	}
}

// TestSenseLikeLinux: RECOVERED ERROR is success; HARDWARE ERROR, empty and
// unreadable sense are repeated (up to 5 times, as sd), then reported.
func TestSenseLikeLinux(t *testing.T) {
	tests := []struct {
		mode    sim.SenseMode
		count   int // 0: every command
		wantErr string
	}{
		{sim.SenseRecovered, 0, ""},
		{sim.SenseHardware, 5, ""},
		{sim.SenseEmpty, 3, ""},
		{sim.SenseGarbage, 2, ""},
		{sim.SenseHardware, 0, "hardware error"},
		{sim.SenseEmpty, 0, "without sense data"},
		{sim.SenseGarbage, 0, "unreadable sense data"},
	}
	for _, tt := range tests {
		cfg := sim.Config{LUNs: []sim.LUN{{Blocks: 8192}}, Misbehaviour: sim.Misbehaviour{Sense: tt.mode, SenseCount: tt.count}}
		dev, l, _ := virtualRig(t, cfg, 0)
		data := pattern(64<<10, 1)
		err := l.WriteBlocks(context.Background(), 100, data)
		if tt.wantErr == "" {
			if err != nil {
				t.Errorf("sense=%s:count=%d: %v", tt.mode, tt.count, err)
				continue
			}
			got := make([]byte, len(data))
			if err := l.ReadBlocks(context.Background(), 100, got); err != nil || !bytes.Equal(got, data) {
				t.Errorf("sense=%s:count=%d: read back: %v", tt.mode, tt.count, err)
			}
			continue
		}
		if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
			t.Errorf("sense=%s every time: %v, want %q", tt.mode, err, tt.wantErr)
		}
		if n := dev.Stats().Opcodes[opWrite10]; n != 1+usbms.DefaultRetries {
			t.Errorf("sense=%s every time: %d WRITEs, want %d", tt.mode, n, 1+usbms.DefaultRetries)
		}
		factsonly.Check(t, err.Error())
	}
}

// TestNotReadyLikeLinux: a unit NOT READY at open gets one START UNIT and
// is polled, unless its state says START cannot help.
func TestNotReadyLikeLinux(t *testing.T) {
	tests := []struct {
		name   string
		mis    sim.Misbehaviour
		starts int64
		fails  bool
	}{
		{"04/02 until START UNIT", sim.Misbehaviour{NotReady: true, NotReadyASC: 4, NotReadyASCQ: 2, NotReadyUntilStart: true}, 1, false},
		{"04/00 for 5 commands", sim.Misbehaviour{NotReady: true, NotReadyASC: 4, NotReadyCount: 5}, 1, false},
		{"04/01 for 5 commands: waited out", sim.Misbehaviour{NotReady: true, NotReadyASC: 4, NotReadyASCQ: 1, NotReadyCount: 5}, 0, false},
		{"04/03 manual intervention: no START", sim.Misbehaviour{NotReady: true, NotReadyASC: 4, NotReadyASCQ: 3, NotReadyUntilStart: true}, 0, true},
		{"04/02 forever", sim.Misbehaviour{NotReady: true, NotReadyASC: 4, NotReadyASCQ: 2, NotReadyCount: 1 << 20}, 1, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			dev, err := sim.New(sim.Config{LUNs: []sim.LUN{{Blocks: 64}}, VirtualClock: true, Misbehaviour: tt.mis})
			if err != nil {
				t.Fatal(err)
			}
			defer dev.Close()
			start := time.Now()
			_, err = usbms.OpenLUN(context.Background(), usbms.NewTransport(dev, usbms.TransportOptions{}), 0, usbms.LUNOptions{})
			if (err != nil) != tt.fails {
				t.Fatalf("OpenLUN: %v", err)
			}
			if err != nil {
				factsonly.Check(t, err.Error())
			}
			s := dev.Stats()
			if s.Opcodes[opStartStop] != tt.starts {
				t.Errorf("%d START STOP UNIT, want %d", s.Opcodes[opStartStop], tt.starts)
			}
			if tt.name == "04/02 forever" && (s.ModelTime < usbms.DefaultSpinUpWait || s.ModelTime > usbms.DefaultSpinUpWait+20*time.Second) {
				t.Errorf("polled for %v of modelled time, want about %v", s.ModelTime, usbms.DefaultSpinUpWait)
			}
			if time.Since(start) > 5*time.Second {
				t.Errorf("%v of wall time on the virtual clock", time.Since(start))
			}
		})
	}
}

// TestOpenSendsWhatLinuxSends: opening a well-behaved reader sends what
// Linux sends a USB disk (INQUIRY, TEST UNIT READY, READ CAPACITY, a READ
// of block 0, MODE SENSE), and one READ of the last block more, and no
// VPD page; a card without a write cache gets no SYNCHRONIZE CACHE.
func TestOpenSendsWhatLinuxSends(t *testing.T) {
	dev, l, _ := virtualRig(t, sim.Config{LUNs: []sim.LUN{{Blocks: 8192}}}, 0)
	want := map[byte]int64{opInquiry: 1, opTUR: 1, opRC10: 1, opRead10: 2, opModeSense6: 1}
	if got := dev.Stats().Opcodes; len(got) != len(want) {
		t.Errorf("open sent %v, want %v", got, want)
	} else {
		for op, n := range want {
			if got[op] != n {
				t.Errorf("open sent %v, want %v", got, want)
			}
		}
	}
	if err := l.Sync(context.Background()); err != nil || dev.Stats().Opcodes[opSync10] != 0 {
		t.Errorf("Sync: %v, %d SYNCHRONIZE CACHE", err, dev.Stats().Opcodes[opSync10])
	}
	// A card whose caching page says write-back is flushed.
	dev, l, _ = virtualRig(t, sim.Config{LUNs: []sim.LUN{{Blocks: 8192}}, Misbehaviour: sim.Misbehaviour{WriteCache: true}}, 0)
	if err := l.Sync(context.Background()); err != nil || dev.Stats().Opcodes[opSync10] != 1 || !l.WriteCache() {
		t.Errorf("write-back card: Sync %v, %d SYNCHRONIZE CACHE", err, dev.Stats().Opcodes[opSync10])
	}
	// ALWAYS_SYNC and WRITE_CACHE flush whatever the page says.
	dev, l, _ = virtualRig(t, sim.Config{LUNs: []sim.LUN{{Blocks: 8192}}}, usbms.QuirkAlwaysSync)
	if err := l.Sync(context.Background()); err != nil || dev.Stats().Opcodes[opSync10] != 1 {
		t.Errorf("ALWAYS_SYNC: Sync %v, %d SYNCHRONIZE CACHE", err, dev.Stats().Opcodes[opSync10])
	}
}

// TestOpenQuirkFlags: the flags that change what Open sends.
func TestOpenQuirkFlags(t *testing.T) {
	ctx := context.Background()
	// NO_WP_DETECT: no MODE SENSE (a reader that hangs on it).
	dev, l, _ := virtualRig(t, sim.Config{LUNs: []sim.LUN{{Blocks: 64}}, Misbehaviour: sim.Misbehaviour{Hang: []sim.HangCommand{sim.HangModeSense}}}, usbms.QuirkNoWPDetect)
	if s := dev.Stats(); s.Opcodes[opModeSense6] != 0 || s.BOTResets != 0 || l.WriteProtected() {
		t.Errorf("NO_WP_DETECT: %d MODE SENSE, %d resets", s.Opcodes[opModeSense6], s.BOTResets)
	}
	// Without it, a hung MODE SENSE costs one timeout and a reset, and
	// the card is taken as writable.
	dev, l, got := virtualRig(t, sim.Config{LUNs: []sim.LUN{{Blocks: 64}}, Misbehaviour: sim.Misbehaviour{Hang: []sim.HangCommand{sim.HangModeSense}}}, 0)
	if s := dev.Stats(); s.Opcodes[opModeSense6] != 1 || s.BOTResets != 1 || l.WriteProtected() || s.ModelTime > 27*time.Second || len(got.all) != 1 {
		t.Errorf("hung MODE SENSE: %d sent, %d resets, %v, notices %v", s.Opcodes[opModeSense6], s.BOTResets, s.ModelTime, got.all)
	}
	// Placeholder mode data: block 0 is read first, so it is not taken
	// for write protection.
	_, l, _ = virtualRig(t, sim.Config{LUNs: []sim.LUN{{Blocks: 64}}, Misbehaviour: sim.Misbehaviour{ModePlaceholder: true}}, 0)
	if l.WriteProtected() {
		t.Error("placeholder mode data taken for write protection")
	}
	// FIX_INQUIRY: a reader that hangs on INQUIRY is not asked.
	inq := scsi.InquiryData{Removable: true, Vendor: "Datafab", Product: "KECF-USB", Revision: "0113"}
	cfg := sim.Config{LUNs: []sim.LUN{{Blocks: 64}}, VirtualClock: true, Misbehaviour: sim.Misbehaviour{Hang: []sim.HangCommand{sim.HangInquiry}}}
	dev, _ = sim.New(cfg)
	defer dev.Close()
	l, err := usbms.OpenLUN(ctx, usbms.NewTransport(dev, usbms.TransportOptions{Quirks: usbms.QuirkFixInquiry, Inquiry: inq}), 0, usbms.LUNOptions{})
	if err != nil || l.Inquiry() != inq || dev.Stats().Opcodes[opInquiry] != 0 {
		t.Errorf("FIX_INQUIRY: %v, %+v, %d INQUIRY", err, l.Inquiry(), dev.Stats().Opcodes[opInquiry])
	}
	dev2, _ := sim.New(cfg)
	defer dev2.Close()
	if _, err := usbms.OpenLUN(ctx, usbms.NewTransport(dev2, usbms.TransportOptions{}), 0, usbms.LUNOptions{}); !errors.Is(err, usbms.ErrRecoveryFailed) {
		t.Errorf("INQUIRY hangs, no FIX_INQUIRY: %v, want the ladder's failure", err)
	}
	// NOT_LOCKABLE: eject without PREVENT ALLOW.
	dev, l, _ = virtualRig(t, sim.Config{LUNs: []sim.LUN{{Blocks: 64}}, Misbehaviour: sim.Misbehaviour{Hang: []sim.HangCommand{sim.HangPrevent}}}, usbms.QuirkNotLockable)
	if err := l.Eject(ctx); err != nil || dev.Stats().Opcodes[0x1E] != 0 {
		t.Errorf("NOT_LOCKABLE: Eject %v, %d PREVENT ALLOW", err, dev.Stats().Opcodes[0x1E])
	}
}

// TestEndOfMedium: the last blocks go one per command, which readers with
// the last-sector bug need; a capacity one block too big is corrected by
// FIX_CAPACITY (and by the heuristics for an odd count), and otherwise
// named when the reader refuses the last block.
func TestEndOfMedium(t *testing.T) {
	ctx := context.Background()
	const blocks = 4096
	dev, l, _ := virtualRig(t, sim.Config{LUNs: []sim.LUN{{Blocks: blocks}}, Misbehaviour: sim.Misbehaviour{LastSectorBug: 8}}, 0)
	writeReadBack(t, l, 0, blocks*512)
	if s := dev.Stats(); s.Opcodes[opWrite10] != 2+8 || s.Opcodes[opRead10] != 2+2+8 {
		t.Errorf("%d WRITEs, %d READs; want 2 of 1 MiB, the last one cut before the last 8 blocks, and 8 of one block (and the open's 2)", s.Opcodes[opWrite10], s.Opcodes[opRead10])
	}

	offByOne := sim.Config{LUNs: []sim.LUN{{Blocks: blocks - 1}}, Misbehaviour: sim.Misbehaviour{CapacityOffByOne: true}}
	_, l, _ = virtualRig(t, offByOne, usbms.QuirkFixCapacity)
	if l.BlockCount() != blocks-1 || l.ReportedBlocks() != blocks {
		t.Errorf("FIX_CAPACITY: %d blocks of %d reported", l.BlockCount(), l.ReportedBlocks())
	}
	writeReadBack(t, l, blocks-1-2048, 2048*512)
	_, l, _ = virtualRig(t, sim.Config{LUNs: []sim.LUN{{Blocks: blocks}}, Misbehaviour: sim.Misbehaviour{CapacityOffByOne: true}}, usbms.QuirkCapacityHeuristics)
	if l.BlockCount() != blocks || l.ReportedBlocks() != blocks+1 {
		t.Errorf("CAPACITY_HEURISTICS, odd count: %d blocks", l.BlockCount())
	}
	_, l, _ = virtualRig(t, sim.Config{LUNs: []sim.LUN{{Blocks: blocks}}}, usbms.QuirkCapacityHeuristics)
	if l.BlockCount() != blocks {
		t.Errorf("CAPACITY_HEURISTICS, even count: %d blocks", l.BlockCount())
	}
	_, l, _ = virtualRig(t, offByOne, 0)
	if !l.LastBlockRefused() {
		t.Error("the phantom block was not found when the LUN was opened")
	}
	err := l.ReadBlocks(ctx, blocks-1, make([]byte, 512))
	if !errors.Is(err, usbms.ErrCapacityOffByOne) || !scsi.IsLBAOutOfRange(err) || !strings.Contains(err.Error(), "refuses block 4095, the last") {
		t.Errorf("reading the phantom block: %v", err)
	}
	factsonly.Check(t, err.Error())
}

// cbwRecorder records the length and CDB length of every CBW and passes
// on the first 31 bytes (the simulator takes exactly 31).
type cbwRecorder struct {
	usbms.Endpoint
	lens, cdbLens []int
}

func (c *cbwRecorder) BulkOut(ctx context.Context, p []byte) (int, error) {
	if len(p) >= 31 && string(p[:4]) == "USBC" {
		c.lens, c.cdbLens = append(c.lens, len(p)), append(c.cdbLens, int(p[14]))
		n, err := c.Endpoint.BulkOut(ctx, p[:31])
		return n + len(p) - 31, err
	}
	return c.Endpoint.BulkOut(ctx, p)
}

// TestCommandSetAndCBW: the ATAPI command sets get 12-byte CDBs, MODE
// SENSE(10) and one LUN; BULK32 readers get a 32-byte CBW.
func TestCommandSetAndCBW(t *testing.T) {
	ctx := context.Background()
	dev, _ := sim.New(sim.Config{LUNs: []sim.LUN{{Blocks: 64, WriteProtected: true}}, Misbehaviour: sim.Misbehaviour{MaxLUN: sim.MaxLUNReport, MaxLUNValue: 2}})
	defer dev.Close()
	rec := &cbwRecorder{Endpoint: dev}
	tr := usbms.NewTransport(rec, usbms.TransportOptions{CommandSet: usbms.SetATAPI})
	if n, _ := tr.MaxLUN(ctx); n != 0 {
		t.Errorf("ATAPI: MaxLUN %d, want 0", n)
	}
	l, err := usbms.OpenLUN(ctx, tr, 0, usbms.LUNOptions{})
	if err != nil || !l.WriteProtected() {
		t.Fatalf("ATAPI open: %v, WP %v (MODE SENSE(10) says it)", err, l.WriteProtected())
	}
	for i, n := range rec.cdbLens {
		if n != 12 {
			t.Errorf("CBW %d carries a %d-byte CDB, want 12", i, n)
		}
	}
	if s := dev.Stats(); s.Opcodes[opModeSense10] != 1 || s.Opcodes[opModeSense6] != 0 {
		t.Errorf("MODE SENSE(10) x%d, (6) x%d", s.Opcodes[opModeSense10], s.Opcodes[opModeSense6])
	}
	dev2, _ := sim.New(sim.Config{LUNs: []sim.LUN{{Blocks: 64}}})
	defer dev2.Close()
	rec = &cbwRecorder{Endpoint: dev2}
	if _, err := usbms.OpenLUN(ctx, usbms.NewTransport(rec, usbms.TransportOptions{Quirks: usbms.QuirkBulk32 | usbms.QuirkGoSlow}), 0, usbms.LUNOptions{}); err != nil {
		t.Fatal(err)
	}
	for i, n := range rec.lens {
		if n != 32 {
			t.Errorf("BULK32: CBW %d is %d bytes", i, n)
		}
	}
}

// TestResetSettle: after a Mass Storage Reset the reader is left alone for
// 6 s, as Linux leaves it: a reader still resetting takes the command
// that follows; without the pause it loses it, and the ladder goes on to
// the port reset.
func TestResetSettle(t *testing.T) {
	cfg := sim.Config{LUNs: []sim.LUN{{Blocks: 64}}, VirtualClock: true, Misbehaviour: sim.Misbehaviour{ResetSettle: 5 * time.Second}}
	for _, settle := range []time.Duration{0, -1} {
		dev, err := sim.New(cfg)
		if err != nil {
			t.Fatal(err)
		}
		defer dev.Close()
		l, err := usbms.OpenLUN(context.Background(), usbms.NewTransport(dev, usbms.TransportOptions{ResetSettle: settle}), 0, usbms.LUNOptions{})
		if err != nil {
			t.Fatal(err)
		}
		dev.Inject(sim.Fault{Kind: sim.NeverAnswer})
		err = l.WriteBlocks(context.Background(), 0, make([]byte, 4096))
		s := dev.Stats()
		switch settle {
		case 0: // the default, Linux's 6 s
			if err != nil || s.BOTResets != 1 || s.LostCBWs != 0 || s.PortResets != 0 {
				t.Errorf("with the pause: %v, %d resets, %d CBWs lost, %d port resets", err, s.BOTResets, s.LostCBWs, s.PortResets)
			}
		default:
			if err != nil || s.LostCBWs == 0 || s.PortResets != 1 {
				t.Errorf("without it: %v, %d CBWs lost, %d port resets; want the port reset to bring it back", err, s.LostCBWs, s.PortResets)
			}
		}
	}
}

// TestInitialRead10: a reader that fails the first READ(10)s after a card
// goes in. The READ of block 0 at open takes the first; with
// INITIAL_READ10 a failed READ is repeated at once, as Linux does.
func TestInitialRead10(t *testing.T) {
	for _, q := range []usbms.Quirks{0, usbms.QuirkInitialRead10} {
		cfg := sim.Config{LUNs: []sim.LUN{{Blocks: 64}}, Misbehaviour: sim.Misbehaviour{InitialRead10: 2}}
		_, l, _ := virtualRig(t, cfg, q)
		err := l.ReadBlocks(context.Background(), 8, make([]byte, 4096))
		if q == 0 && !scsi.IsLBAOutOfRange(err) || q != 0 && err != nil {
			t.Errorf("quirks %v: the second READ(10): %v", q, err)
		}
	}
	_, l, _ := virtualRig(t, sim.Config{LUNs: []sim.LUN{{Blocks: 64}}, Misbehaviour: sim.Misbehaviour{InitialRead10: 1}}, 0)
	if err := l.ReadBlocks(context.Background(), 8, make([]byte, 4096)); err != nil {
		t.Errorf("the first READ(10) failing is taken by the READ of block 0 at open: %v", err)
	}
}

// TestCapacityCommands: READ CAPACITY(16) first for NEEDS_CAP16 bridges;
// a (16) that fails after (10) said 0xFFFFFFFF means 2^32 blocks, or no
// medium for NO_READ_CAPACITY_16 readers, as Linux's sd takes them.
func TestCapacityCommands(t *testing.T) {
	const big = 1<<32 + 4096
	const opRC16 = 0x9E
	dev, l, _ := virtualRig(t, sim.Config{LUNs: []sim.LUN{{Blocks: 8192}}}, usbms.QuirkNeedsCap16)
	if s := dev.Stats(); s.Opcodes[opRC16] != 1 || s.Opcodes[opRC10] != 0 || l.BlockCount() != 8192 {
		t.Errorf("NEEDS_CAP16: RC16 x%d, RC10 x%d, %d blocks", s.Opcodes[opRC16], s.Opcodes[opRC10], l.BlockCount())
	}
	_, l, _ = virtualRig(t, sim.Config{LUNs: []sim.LUN{{Blocks: big}}, Misbehaviour: sim.Misbehaviour{Hang: []sim.HangCommand{sim.HangRC16}}}, 0)
	if l.BlockCount() != 1<<32 {
		t.Errorf("READ CAPACITY(16) hangs after (10) said 0xFFFFFFFF: %d blocks, want 2^32", l.BlockCount())
	}
	dev2, _ := sim.New(sim.Config{LUNs: []sim.LUN{{Blocks: big}}, VirtualClock: true})
	defer dev2.Close()
	_, err := usbms.OpenLUN(context.Background(), usbms.NewTransport(dev2, usbms.TransportOptions{Quirks: usbms.QuirkNoReadCapacity16}), 0, usbms.LUNOptions{})
	if !usbms.IsNoMedium(err) || dev2.Stats().Opcodes[opRC16] != 0 {
		t.Errorf("NO_READ_CAPACITY_16: %v, %d RC16", err, dev2.Stats().Opcodes[opRC16])
	}
}

// TestSenseAfterSync: SENSE_AFTER_SYNC readers get a REQUEST SENSE right
// after the flush.
func TestSenseAfterSync(t *testing.T) {
	dev, l, _ := virtualRig(t, sim.Config{LUNs: []sim.LUN{{Blocks: 64}}, Misbehaviour: sim.Misbehaviour{WriteCache: true}}, usbms.QuirkSenseAfterSync)
	before := dev.Stats().Opcodes[opSense]
	if err := l.Sync(context.Background()); err != nil {
		t.Fatal(err)
	}
	if s := dev.Stats(); s.Opcodes[opSync10] != 1 || s.Opcodes[opSense] != before+1 {
		t.Errorf("SYNCHRONIZE CACHE x%d, REQUEST SENSE x%d after it", s.Opcodes[opSync10], s.Opcodes[opSense]-before)
	}
}
