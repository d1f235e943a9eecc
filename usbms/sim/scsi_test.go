package sim

import (
	"bytes"
	"testing"
)

// TestCommands checks each command's status, residue, data and sense at
// the wire.
func TestCommands(t *testing.T) {
	type want struct {
		status   byte
		residue  uint32
		stall    bool   // data phase stalled
		data     []byte // prefix of data-in, nil: not checked
		dataLen  int    // -1: not checked
		senseKey byte
		asc      byte
		ascq     byte
	}
	big := LUN{Blocks: 1 << 33} // last LBA does not fit READ CAPACITY(10)
	tests := []struct {
		name   string
		lun    LUN
		cbwLUN byte
		in     bool
		length uint32
		cdb    []byte
		want   want
	}{
		{"TUR ready", LUN{}, 0, false, 0, cdbTUR(), want{dataLen: -1}},
		{"TUR no medium", LUN{NoMedium: true}, 0, false, 0, cdbTUR(),
			want{status: 1, dataLen: -1, senseKey: 2, asc: 0x3A}},
		{"unknown opcode", LUN{}, 0, false, 0, []byte{0xC7, 0, 0, 0, 0, 0},
			want{status: 1, dataLen: -1, senseKey: 5, asc: 0x20}},
		{"CDB shorter than opcode needs", LUN{}, 0, true, 512, []byte{opRead10, 0, 0, 0, 0, 0},
			want{status: 1, residue: 512, stall: true, dataLen: 0, senseKey: 5, asc: 0x24}},
		{"bad LUN", LUN{}, 3, false, 0, cdbTUR(),
			want{status: 1, dataLen: -1}},
		{"INQUIRY standard", LUN{Removable: true, Vendor: "ACME"}, 0, true, 36, cdbInquiry(false, 0, 36),
			want{dataLen: 36, data: append([]byte{0, 0x80, 6, 2, 31, 0, 0, 0}, "ACME    SIM CARD READER 1.0 "...)}},
		{"INQUIRY page not with EVPD=0", LUN{}, 0, true, 36, cdbInquiry(false, 0x80, 36),
			want{status: 1, residue: 36, stall: true, dataLen: 0, senseKey: 5, asc: 0x24}},
		{"INQUIRY VPD 00", LUN{}, 0, true, 64, cdbInquiry(true, 0, 64),
			want{residue: 64 - 7, dataLen: 7, data: []byte{0, 0, 0, 3, 0, 0x80, 0xB0}}},
		{"INQUIRY VPD 80", LUN{Serial: "XYZ123"}, 0, true, 64, cdbInquiry(true, 0x80, 64),
			want{residue: 64 - 10, dataLen: 10, data: append([]byte{0, 0x80, 0, 6}, "XYZ123"...)}},
		{"INQUIRY VPD B0", LUN{MaxTransferBlocks: 2048}, 0, true, 64, cdbInquiry(true, 0xB0, 64),
			want{dataLen: 64, data: []byte{0, 0xB0, 0, 0x3C, 0, 0, 0, 0, 0, 0, 0x08, 0}}},
		{"INQUIRY VPD unknown", LUN{}, 0, true, 64, cdbInquiry(true, 0x83, 64),
			want{status: 1, residue: 64, stall: true, dataLen: 0, senseKey: 5, asc: 0x24}},
		{"INQUIRY bad LUN says no device", LUN{}, 5, true, 36, cdbInquiry(false, 0, 36),
			want{dataLen: 36, data: []byte{0x7F}}},
		{"READ CAPACITY(10)", LUN{Blocks: 1000}, 0, true, 8, []byte{opReadCapacity10, 0, 0, 0, 0, 0, 0, 0, 0, 0},
			want{dataLen: 8, data: []byte{0, 0, 0x03, 0xE7, 0, 0, 0x02, 0}}},
		{"READ CAPACITY(10) too big", big, 0, true, 8, []byte{opReadCapacity10, 0, 0, 0, 0, 0, 0, 0, 0, 0},
			want{dataLen: 8, data: []byte{0xFF, 0xFF, 0xFF, 0xFF, 0, 0, 0x02, 0}}},
		{"READ CAPACITY(16)", LUN{Blocks: 1 << 33, BlockSize: 4096}, 0, true, 32,
			[]byte{opServiceIn16, 0x10, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 32, 0, 0},
			want{dataLen: 32, data: []byte{0, 0, 0, 1, 0xFF, 0xFF, 0xFF, 0xFF, 0, 0, 0x10, 0}}},
		{"SERVICE ACTION IN other action", LUN{}, 0, true, 32,
			[]byte{opServiceIn16, 0x11, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 32, 0, 0},
			want{status: 1, residue: 32, stall: true, dataLen: 0, senseKey: 5, asc: 0x24}},
		{"READ CAPACITY no medium", LUN{NoMedium: true}, 0, true, 8, []byte{opReadCapacity10, 0, 0, 0, 0, 0, 0, 0, 0, 0},
			want{status: 1, residue: 8, stall: true, dataLen: 0, senseKey: 2, asc: 0x3A}},
		{"MODE SENSE WP", LUN{WriteProtected: true}, 0, true, 4, []byte{opModeSense6, 0, 0x3F, 0, 4, 0},
			want{dataLen: 4, data: []byte{23, 0, 0x80, 0}}},
		{"MODE SENSE writable", LUN{}, 0, true, 192, []byte{opModeSense6, 0, 0x3F, 0, 192, 0},
			want{residue: 192 - 24, dataLen: 24, data: []byte{23, 0, 0, 0, 0x08, 18}}},
		{"MODE SENSE rejected", LUN{RejectModeSense: true}, 0, true, 192, []byte{opModeSense6, 0, 0x3F, 0, 192, 0},
			want{status: 1, residue: 192, stall: true, dataLen: 0, senseKey: 5, asc: 0x20}},
		{"SYNC CACHE", LUN{}, 0, false, 0, make10(opSyncCache10), want{dataLen: -1}},
		{"SYNC CACHE rejected", LUN{RejectSyncCache: true}, 0, false, 0, make10(opSyncCache10),
			want{status: 1, dataLen: -1, senseKey: 5, asc: 0x20}},
		{"READ past end", LUN{Blocks: 100}, 0, true, 1024, cdbRead10(99, 2),
			want{status: 1, residue: 1024, stall: true, dataLen: 0, senseKey: 5, asc: 0x21}},
		{"READ(16) LBA overflow", LUN{Blocks: 100}, 0, true, 512, cdbRW16(opRead16, 1<<63, 1),
			want{status: 1, residue: 512, stall: true, dataLen: 0, senseKey: 5, asc: 0x21}},
		{"WRITE write-protected", LUN{WriteProtected: true}, 0, false, 512, cdbWrite10(0, 1),
			want{status: 1, residue: 512, stall: true, dataLen: -1, senseKey: 7, asc: 0x27}},
		{"WRITE no medium", LUN{NoMedium: true}, 0, false, 512, cdbWrite10(0, 1),
			want{status: 1, residue: 512, stall: true, dataLen: -1, senseKey: 2, asc: 0x3A}},
		{"READ(10) zero blocks", LUN{}, 0, false, 0, cdbRead10(5, 0), want{dataLen: -1}},
		{"PREVENT", LUN{}, 0, false, 0, []byte{opPreventAllow, 0, 0, 0, 1, 0}, want{dataLen: -1}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			h := newHost(t, oneLUN(tt.lun))
			ex := h.run(tt.cbwLUN, tt.in, tt.length, tt.cdb, make([]byte, tt.length))
			w := tt.want
			if ex.csw.sig != cswSignature || ex.csw.tag != h.tag {
				t.Fatalf("CSW signature %#x tag %d, want %#x tag %d", ex.csw.sig, ex.csw.tag, uint32(cswSignature), h.tag)
			}
			if ex.csw.status != w.status || ex.csw.residue != w.residue {
				t.Errorf("CSW status %d residue %d, want %d residue %d", ex.csw.status, ex.csw.residue, w.status, w.residue)
			}
			if ex.dataStall != w.stall {
				t.Errorf("data stall %v, want %v", ex.dataStall, w.stall)
			}
			if w.dataLen >= 0 && tt.in && len(ex.data) != w.dataLen {
				t.Errorf("got %d data bytes, want %d", len(ex.data), w.dataLen)
			}
			if w.data != nil && !bytes.HasPrefix(ex.data, w.data) {
				t.Errorf("data % x, want prefix % x", ex.data, w.data)
			}
			key, asc, ascq, _ := h.sense(tt.cbwLUN)
			if tt.cbwLUN >= 1 {
				w.senseKey, w.asc = 5, 0x25 // REQUEST SENSE to a LUN that does not exist
			}
			if key != w.senseKey || asc != w.asc || ascq != w.ascq {
				t.Errorf("sense %X/%02X/%02X, want %X/%02X/%02X", key, asc, ascq, w.senseKey, w.asc, w.ascq)
			}
		})
	}
}

func make10(op byte) []byte { c := make([]byte, 10); c[0] = op; return c }

// TestReadWrite writes blocks and reads them back through READ(10) and
// READ(16), for both block sizes, including a LUN past 2^32 blocks.
func TestReadWrite(t *testing.T) {
	tests := []struct {
		name   string
		lun    LUN
		lba    uint64
		blocks uint32
	}{
		{"512 at 0", LUN{Blocks: 4096}, 0, 64},
		{"512 at end", LUN{Blocks: 4096}, 4096 - 3, 3},
		{"4096", LUN{Blocks: 256, BlockSize: 4096}, 10, 16},
		{"huge sparse LUN, high LBA", LUN{Blocks: 1 << 40}, 1<<40 - 8, 8},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			h := newHost(t, oneLUN(tt.lun))
			bs := tt.lun.BlockSize
			if bs == 0 {
				bs = 512
			}
			n := uint32(bs) * tt.blocks
			data := pattern(int(n), 7)
			ex := h.run(0, false, n, cdbRW16(opWrite16, tt.lba, tt.blocks), data)
			if ex.csw.status != 0 || ex.csw.residue != 0 || ex.moved != int(n) {
				t.Fatalf("WRITE(16): status %d residue %d moved %d", ex.csw.status, ex.csw.residue, ex.moved)
			}
			ex = h.run(0, true, n, cdbRW16(opRead16, tt.lba, tt.blocks), nil)
			if ex.csw.status != 0 || !bytes.Equal(ex.data, data) {
				t.Fatalf("READ(16): status %d, data equal %v", ex.csw.status, bytes.Equal(ex.data, data))
			}
			if tt.lba < 1<<32 {
				ex = h.run(0, true, n, cdbRead10(uint32(tt.lba), uint16(tt.blocks)), nil)
				if ex.csw.status != 0 || !bytes.Equal(ex.data, data) {
					t.Fatalf("READ(10): status %d", ex.csw.status)
				}
			}
			all := h.d.Stats()
			st := all.LUNs[0]
			if st.BlocksWritten != int64(tt.blocks) || st.WrittenFirst != int64(tt.lba) || st.WrittenEnd != int64(tt.lba)+int64(tt.blocks) {
				t.Errorf("stats %+v", st)
			}
			reads := int64(1)
			if tt.lba < 1<<32 {
				reads = 2
			}
			if st.BlocksRead != reads*int64(tt.blocks) || all.BytesOut != int64(n) || all.BytesIn != reads*int64(n) ||
				all.Opcodes[opWrite16] != 1 || all.Opcodes[opRead16] != 1 || all.Commands != 1+reads {
				t.Errorf("stats %+v", all)
			}
		})
	}
}

// TestChunkedDataPhase moves one command's data in several transfers, as a
// host past the usbfs limit does, and checks that a transfer ending exactly
// where the device's data ends is followed by a zero-length packet.
func TestChunkedDataPhase(t *testing.T) {
	h := newHost(t, oneLUN(LUN{}))
	data := pattern(8192, 3)
	ctx := t.Context()
	h.d.BulkOut(ctx, buildCBW(1, 8192, false, 0, cdbWrite10(0, 16)))
	for off := 0; off < len(data); off += 3000 {
		end := min(off+3000, len(data))
		if n, err := h.d.BulkOut(ctx, data[off:end]); err != nil || n != end-off {
			t.Fatalf("chunk at %d: n=%d err=%v", off, n, err)
		}
	}
	b := make([]byte, 13)
	if n, err := h.d.BulkIn(ctx, b); err != nil || decodeCSW(t, b[:n]).status != 0 {
		t.Fatalf("CSW after write: %v", err)
	}
	// INQUIRY of 36 bytes in a 96-byte phase, read with a 36-byte buffer:
	// the next read is the zero-length packet, then the CSW.
	h.d.BulkOut(ctx, buildCBW(2, 96, true, 0, cdbInquiry(false, 0, 36)))
	if n, err := h.d.BulkIn(ctx, make([]byte, 36)); n != 36 || err != nil {
		t.Fatalf("INQUIRY data: n=%d err=%v", n, err)
	}
	if n, err := h.d.BulkIn(ctx, make([]byte, 60)); n != 0 || err != nil {
		t.Fatalf("zero-length packet: n=%d err=%v", n, err)
	}
	n, err := h.d.BulkIn(ctx, b)
	if err != nil {
		t.Fatal(err)
	}
	if c := decodeCSW(t, b[:n]); c.residue != 60 || c.status != 0 {
		t.Fatalf("CSW %+v, want residue 60", c)
	}
	ex := h.run(0, true, 8192, cdbRead10(0, 16), nil)
	if !bytes.Equal(ex.data, data) {
		t.Fatal("data read back differs")
	}
}

// TestEject checks START STOP UNIT and PREVENT ALLOW MEDIUM REMOVAL.
func TestEject(t *testing.T) {
	h := newHost(t, oneLUN(LUN{Removable: true}))
	eject := []byte{opStartStopUnit, 0, 0, 0, 0x02, 0}
	h.run(0, false, 0, []byte{opPreventAllow, 0, 0, 0, 1, 0}, nil)
	if ex := h.run(0, false, 0, eject, nil); ex.csw.status != 1 {
		t.Fatalf("eject while prevented: status %d", ex.csw.status)
	}
	if k, asc, ascq, _ := h.sense(0); k != 5 || asc != 0x53 || ascq != 2 {
		t.Fatalf("sense %X/%02X/%02X, want 5/53/02", k, asc, ascq)
	}
	h.run(0, false, 0, []byte{opPreventAllow, 0, 0, 0, 0, 0}, nil)
	if ex := h.run(0, false, 0, eject, nil); ex.csw.status != 0 {
		t.Fatalf("eject: status %d", ex.csw.status)
	}
	if ex := h.run(0, false, 0, cdbTUR(), nil); ex.csw.status != 1 {
		t.Fatal("TUR after eject passed")
	}
	if k, asc, _, _ := h.sense(0); k != 2 || asc != 0x3A {
		t.Fatalf("sense after eject %X/%02X, want 2/3A", k, asc)
	}
	h.run(0, false, 0, []byte{opStartStopUnit, 0, 0, 0, 0x03, 0}, nil) // load
	if ex := h.run(0, false, 0, cdbTUR(), nil); ex.csw.status != 0 {
		t.Fatal("TUR after load failed")
	}
}

// TestSenseIsPerCommand checks that REQUEST SENSE reports the last
// command's sense once, in fixed format, and that a passing command
// replaces it.
func TestSenseIsPerCommand(t *testing.T) {
	h := newHost(t, oneLUN(LUN{Blocks: 10}))
	h.run(0, true, 512, cdbRead10(20, 1), nil)
	_, _, _, raw := h.sense(0)
	if raw[0] != 0x70 || raw[7] != 10 || raw[2] != 5 || raw[12] != 0x21 {
		t.Fatalf("fixed sense % x", raw)
	}
	if k, _, _, _ := h.sense(0); k != 0 {
		t.Fatalf("second REQUEST SENSE key %X, want NO SENSE", k)
	}
	h.run(0, true, 512, cdbRead10(20, 1), nil)
	h.run(0, false, 0, cdbTUR(), nil)
	if k, _, _, _ := h.sense(0); k != 0 {
		t.Fatalf("sense after a passing command: key %X", k)
	}
	// Allocation length cuts sense data.
	ex := h.run(0, true, 8, []byte{opRequestSense, 0, 0, 0, 8, 0}, nil)
	if len(ex.data) != 8 || ex.csw.residue != 0 {
		t.Fatalf("REQUEST SENSE alloc 8: %d bytes residue %d", len(ex.data), ex.csw.residue)
	}
}

// TestIdentityDefaults checks the identity a device has when none is given.
func TestIdentityDefaults(t *testing.T) {
	h := newHost(t, Config{LUNs: []LUN{{Blocks: 1}, {Blocks: 1}}})
	m, p, s := h.d.Identity()
	if m != DefaultManufacturer || p != DefaultProduct || s != DefaultSerial {
		t.Errorf("identity %q %q %q", m, p, s)
	}
	ex := h.run(1, true, 64, cdbInquiry(true, 0x80, 64), nil)
	if got := string(ex.data[4:]); got != DefaultSerial+"-1" {
		t.Errorf("LUN 1 serial %q", got)
	}
}

// TestNewRejects checks configurations New refuses.
func TestNewRejects(t *testing.T) {
	tests := []struct {
		name string
		cfg  Config
	}{
		{"no LUNs", Config{}},
		{"17 LUNs", Config{LUNs: make([]LUN, 17)}},
		{"zero blocks", Config{LUNs: []LUN{{}}}},
		{"block size 1024", Config{LUNs: []LUN{{Blocks: 1, BlockSize: 1024}}}},
		{"capacity past 63 bits", Config{LUNs: []LUN{{Blocks: 1 << 60, BlockSize: 4096}}}},
		{"negative speed", Config{LUNs: []LUN{{Blocks: 1}}, Speed: -1}},
	}
	for _, tt := range tests {
		if _, err := New(tt.cfg); err == nil {
			t.Errorf("%s: New succeeded", tt.name)
		}
	}
}
