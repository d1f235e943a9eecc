package sim

import (
	"context"
	"encoding/binary"
	"errors"
	"testing"

	"github.com/usbflash/usbflash/usbms"
)

// FuzzCBW feeds arbitrary bytes as a CBW, then plays a correct host for
// whatever the device asks (data phase, CSW, halts, reset recovery). The
// device must never panic, and every CSW it sends must be one a host can
// trust: 13 bytes, signature, the CBW's tag, status <= 2, residue <=
// dCBWDataTransferLength.
func FuzzCBW(f *testing.F) {
	seeds := [][]byte{
		buildCBW(1, 0, false, 0, cdbTUR()),
		buildCBW(2, 36, true, 0, cdbInquiry(false, 0, 36)),
		buildCBW(3, 4096, false, 0, cdbWrite10(0, 8)),
		buildCBW(4, 4096, true, 1, cdbRead10(60, 8)),
		buildCBW(5, 32, true, 0, []byte{opServiceIn16, 0x10, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 32, 0, 0}),
		buildCBW(6, 1<<31, true, 0, cdbRW16(opRead16, 0, 1<<30)),
		buildCBW(7, 512, false, 2, cdbWrite10(0, 1)),
		buildCBW(8, 0, false, 0, []byte{opStartStopUnit, 0, 0, 0, 2, 0}),
		{},
	}
	for i, s := range seeds {
		f.Add(s, uint8(i), uint8(i%3), uint16(i*700))
	}
	f.Fuzz(func(t *testing.T, cbwBytes []byte, kind, lun uint8, after uint16) {
		d, err := New(Config{LUNs: []LUN{{Blocks: 64}, {Blocks: 64, WriteProtected: true, BlockSize: 4096}}})
		if err != nil {
			t.Fatal(err)
		}
		defer d.Close()
		// Any fault, on any LUN, real or not, except the two that end the
		// conversation (tested on their own).
		if k := FaultKind(kind % 14); k != Disconnect && k != NeverAnswer {
			d.Inject(Fault{Kind: k, LUN: int(lun % 17), AfterBytes: int64(after), LBA: int64(after % 80)})
		}
		ctx := context.Background()
		if _, err := d.BulkOut(ctx, cbwBytes); err != nil {
			t.Fatalf("CBW transfer: %v", err)
		}
		c, valid := parseCBW(cbwBytes)
		buf := make([]byte, 4096)
		for range 8 {
			d.mu.Lock()
			b := d.bot
			d.mu.Unlock()
			switch {
			case b.haltIn || b.haltOut:
				d.ClearHalt(ctx, true)
				d.ClearHalt(ctx, false)
				if b.wedged {
					if valid {
						t.Fatal("a valid CBW wedged the device")
					}
					d.ClassRequest(ctx, false, reqMassStorageReset, 0, nil)
					d.ClearHalt(ctx, true)
					d.ClearHalt(ctx, false)
				}
			case b.phase == phaseDataIn:
				d.BulkIn(ctx, buf)
			case b.phase == phaseDataOut:
				d.BulkOut(ctx, buf[:min(int64(len(buf)), b.host-b.done)])
			case b.phase == phaseCSW:
				out := make([]byte, 64)
				n, err := d.BulkIn(ctx, out)
				if errors.Is(err, usbms.ErrStall) {
					continue // a stall-csw fault: clear the halt and read again
				}
				if err != nil {
					t.Fatalf("CSW: %v", err)
				}
				got := decodeCSW(t, out[:n])
				if (got.sig != cswSignature || got.tag != c.tag) && !csFault(FaultKind(kind%14)) || got.status > 2 || got.residue > c.length {
					t.Fatalf("CSW %+v for CBW tag %d length %d", got, c.tag, c.length)
				}
			default:
				return
			}
		}
		// A data phase too long to finish here: reset recovery must bring
		// the device back to taking CBWs.
		d.ClassRequest(ctx, false, reqMassStorageReset, 0, nil)
		d.ClearHalt(ctx, true)
		d.ClearHalt(ctx, false)
		tur := buildCBW(99, 0, false, 0, cdbTUR())
		if _, err := d.BulkOut(ctx, tur); err != nil {
			t.Fatalf("CBW after recovery: %v", err)
		}
		out := make([]byte, 13)
		_, err = d.BulkIn(ctx, out)
		if errors.Is(err, usbms.ErrStall) { // a stall-csw fault not used yet
			d.ClearHalt(ctx, true)
			_, err = d.BulkIn(ctx, out)
		}
		if err != nil || binary.LittleEndian.Uint32(out[4:8]) != 99 && !csFault(FaultKind(kind%14)) {
			t.Fatalf("CSW after recovery: %v", err)
		}
	})
}

// csFault reports the faults that spoil a CSW on purpose.
func csFault(k FaultKind) bool { return k == BadCSWSignature || k == BadCSWTag }
