package scsi

import (
	"bytes"
	"testing"
)

func TestCDBBuilders(t *testing.T) {
	tests := []struct {
		name string
		cdb  CDB
		want []byte
	}{
		{"TestUnitReady", TestUnitReady(), []byte{0x00, 0, 0, 0, 0, 0}},
		{"RequestSense", RequestSense(18), []byte{0x03, 0, 0, 0, 18, 0}},
		{"Inquiry", Inquiry(36), []byte{0x12, 0, 0, 0, 36, 0}},
		{"InquiryVPD serial", InquiryVPD(VPDUnitSerial, 0x1FC), []byte{0x12, 1, 0x80, 0x01, 0xFC, 0}},
		{"ModeSense6 all pages", ModeSense6(0x3F, 0, false, 192), []byte{0x1A, 0, 0x3F, 0, 192, 0}},
		{"ModeSense6 dbd page masked", ModeSense6(0xFF, 0, true, 4), []byte{0x1A, 0x08, 0x3F, 0, 4, 0}},
		{"StartStopUnit eject", StartStopUnit(false, true), []byte{0x1B, 0, 0, 0, 0x02, 0}},
		{"StartStopUnit load", StartStopUnit(true, true), []byte{0x1B, 0, 0, 0, 0x03, 0}},
		{"PreventAllow prevent", PreventAllowMediumRemoval(true), []byte{0x1E, 0, 0, 0, 1, 0}},
		{"PreventAllow allow", PreventAllowMediumRemoval(false), []byte{0x1E, 0, 0, 0, 0, 0}},
		{"ReadCapacity10", ReadCapacity10(), []byte{0x25, 0, 0, 0, 0, 0, 0, 0, 0, 0}},
		{"ReadCapacity16", ReadCapacity16(32), []byte{0x9E, 0x10, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 32, 0, 0}},
		{"Read10", Read10(0x01020304, 0x0506), []byte{0x28, 0, 1, 2, 3, 4, 0, 5, 6, 0}},
		{"Write10", Write10(0xFFFFFFFF, 0xFFFF, false), []byte{0x2A, 0, 0xFF, 0xFF, 0xFF, 0xFF, 0, 0xFF, 0xFF, 0}},
		{"Write10 FUA", Write10(1, 2, true), []byte{0x2A, 0x08, 0, 0, 0, 1, 0, 0, 2, 0}},
		{"Read16", Read16(0x0102030405060708, 0x090A0B0C), []byte{0x88, 0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 0xA, 0xB, 0xC, 0, 0}},
		{"Write16 FUA", Write16(1<<32, 65536, true), []byte{0x8A, 0x08, 0, 0, 0, 1, 0, 0, 0, 0, 0, 1, 0, 0, 0, 0}},
		{"SynchronizeCache10 all", SynchronizeCache10(0, 0), []byte{0x35, 0, 0, 0, 0, 0, 0, 0, 0, 0}},
		{"Unmap", Unmap(UnmapParamLen), []byte{0x42, 0, 0, 0, 0, 0, 0, 0, 24, 0}},
		{"WriteSame16 unmap", WriteSame16(1<<32+2, 0x01020304, true), []byte{0x93, 0x08, 0, 0, 0, 1, 0, 0, 0, 2, 1, 2, 3, 4, 0, 0}},
		{"WriteSame16", WriteSame16(5, 6, false), []byte{0x93, 0, 0, 0, 0, 0, 0, 0, 0, 5, 0, 0, 0, 6, 0, 0}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := tt.cdb.Bytes(); !bytes.Equal(got, tt.want) {
				t.Errorf("Bytes() = % X, want % X", got, tt.want)
			}
			if tt.cdb.Len() != len(tt.want) || tt.cdb.Opcode() != tt.want[0] {
				t.Errorf("Len, Opcode = %d, %#x; want %d, %#x", tt.cdb.Len(), tt.cdb.Opcode(), len(tt.want), tt.want[0])
			}
		})
	}
}

func TestCDBBuildDoesNotAllocate(t *testing.T) {
	var sink byte
	n := testing.AllocsPerRun(100, func() {
		c := Write10(1234, 2048, false)
		sink ^= c.Bytes()[0]
		c = Write16(1<<40, 1<<20, true)
		sink ^= c.Bytes()[0]
	})
	if n != 0 {
		t.Errorf("building READ/WRITE CDBs allocates %v times per run, want 0", n)
	}
	_ = sink
}

func TestOpName(t *testing.T) {
	for _, tt := range []struct {
		op   byte
		want string
	}{{OpWrite10, "WRITE(10)"}, {OpServiceActionIn16, "READ CAPACITY(16)"}, {0xC5, "opcode 0xC5"}} {
		if got := OpName(tt.op); got != tt.want {
			t.Errorf("OpName(%#x) = %q, want %q", tt.op, got, tt.want)
		}
	}
}
