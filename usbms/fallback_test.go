package usbms

import (
	"context"
	"encoding/binary"
	"testing"

	"github.com/usbflash/usbflash/scsi"
)

// TestFallbackTo10 checks that a device rejecting WRITE(16) as an unknown
// opcode gets the same blocks as WRITE(10) commands, and keeps getting (10)
// afterwards.
func TestFallbackTo10(t *testing.T) {
	const blocks = 65536 // one more than WRITE(10) can carry
	s := &script{t: t, steps: seq(
		cbw, dataAll, dataAll, dataAll, dataAll, step{call: "csw", status: 1, residue: blocks * 512},
		cbw, senseStep(scsi.IllegalRequest, scsi.ASCInvalidOpcode, 0), passed,
		cbw, dataAll, dataAll, dataAll, dataAll, passed,
		cbw, dataAll, passed,
		cbw, dataAll, passed,
	)}
	l := &LUN{t: NewTransport(s, TransportOptions{}), opts: LUNOptions{}.withDefaults(), blockSize: 512, blocks: 1 << 20}
	ctx := context.Background()
	if err := l.WriteBlocks(ctx, 0, make([]byte, blocks*512)); err != nil {
		t.Fatal(err)
	}
	if err := l.WriteBlocks(ctx, 100, make([]byte, 512)); err != nil {
		t.Fatal(err)
	}
	s.done()
	type cmd struct {
		op         byte
		lba, count uint32
	}
	want := []cmd{{scsi.OpWrite16, 0, blocks}, {scsi.OpRequestSense, 0, 0}, {scsi.OpWrite10, 0, 65535}, {scsi.OpWrite10, 65535, 1}, {scsi.OpWrite10, 100, 1}}
	if len(s.cbws) != len(want) {
		t.Fatalf("%d commands, want %d", len(s.cbws), len(want))
	}
	for i, c := range s.cbws {
		cdb := c[15:]
		got := cmd{op: cdb[0]}
		switch cdb[0] {
		case scsi.OpWrite10:
			got.lba, got.count = binary.BigEndian.Uint32(cdb[2:6]), uint32(binary.BigEndian.Uint16(cdb[7:9]))
		case scsi.OpWrite16:
			got.lba, got.count = uint32(binary.BigEndian.Uint64(cdb[2:10])), binary.BigEndian.Uint32(cdb[10:14])
		}
		if got != want[i] {
			t.Errorf("command %d = %+v, want %+v", i, got, want[i])
		}
	}
}

func FuzzParseCSW(f *testing.F) {
	f.Add(cswBytes(cswSignature, 1, 0, 0), uint32(1), uint32(512))
	f.Add(cswBytes(cswSignature, 9, 4096, 1), uint32(9), uint32(4096))
	f.Add(cswBytes(cswSignature, 2, 0, 2), uint32(2), uint32(0))
	f.Fuzz(func(t *testing.T, b []byte, tag, length uint32) {
		c, err := parseCSW(b, cswCheck{tag: tag, length: length, sig: cswSignature})
		if err != nil {
			return
		}
		if c.tag != tag || c.status > statusPhase || c.residue > length || len(b) != cswLen || c.sig != cswSignature {
			t.Errorf("parseCSW accepted %X for tag %d, length %d: %+v", b, tag, length, c)
		}
		if n := validBytes(length, int(length), c.residue); n < 0 || n > int(length) {
			t.Errorf("validBytes = %d outside [0, %d]", n, length)
		}
	})
}
