package usbms

import (
	"context"
	"errors"
	"testing"

	"github.com/usbflash/usbflash/pipeline/blockdev"
	"github.com/usbflash/usbflash/scsi"
)

// TestSensePolicy checks what one command does about each sense condition,
// as QEMU and real readers report them.
func TestSensePolicy(t *testing.T) {
	failed := step{call: "csw", status: 1}
	tests := []struct {
		name    string
		wrote   bool
		steps   []step
		wantErr func(error) bool
	}{
		{name: "6/3A once after a card goes in: repeat", steps: seq(
			cbw, failed, cbw, senseStep(scsi.UnitAttention, 0x3A, 0), passed,
			cbw, passed)},
		{name: "6/3A then 2/3A: no medium", wantErr: scsi.IsNoMedium, steps: seq(
			cbw, failed, cbw, senseStep(scsi.UnitAttention, 0x3A, 0), passed,
			cbw, failed, cbw, senseStep(scsi.NotReady, 0x3A, 0), passed)},
		{name: "6/3A after writing: medium changed", wrote: true, wantErr: func(err error) bool { return errors.Is(err, ErrMediumChanged) }, steps: seq(
			cbw, failed, cbw, senseStep(scsi.UnitAttention, 0x3A, 0), passed)},
		{name: "6/29 after writing: repeat", wrote: true, steps: seq(
			cbw, failed, cbw, senseStep(scsi.UnitAttention, 0x29, 0), passed,
			cbw, passed)},
		{name: "ABORTED COMMAND: repeat up to Retries, then fail", wantErr: func(err error) bool {
			se, ok := scsi.AsSense(err)
			// QEMU's failed backing store: a bad block, as the kernel's EIO.
			return ok && se.Key == scsi.AbortedCommand && !errors.Is(err, blockdev.ErrWriteProtected) && errors.Is(err, blockdev.ErrBadBlock)
		}, steps: seq(
			cbw, failed, cbw, senseStep(scsi.AbortedCommand, 0, 6), passed,
			cbw, failed, cbw, senseStep(scsi.AbortedCommand, 0, 6), passed,
			cbw, failed, cbw, senseStep(scsi.AbortedCommand, 0, 6), passed,
			cbw, failed, cbw, senseStep(scsi.AbortedCommand, 0, 6), passed)},
		{name: "write protected: fail at once, as the sense and as write protection", wantErr: func(err error) bool {
			se, ok := scsi.AsSense(err)
			return ok && se.Key == scsi.DataProtect && errors.Is(err, blockdev.ErrWriteProtected)
		}, steps: seq(
			cbw, failed, cbw, senseStep(scsi.DataProtect, 0x27, 0), passed)},
		{name: "unrecovered read error: fail at once, as a bad block", wantErr: func(err error) bool {
			se, ok := scsi.AsSense(err)
			return ok && se.Key == scsi.MediumError && errors.Is(err, blockdev.ErrBadBlock) && !errors.Is(err, blockdev.ErrWriteProtected)
		}, steps: seq(
			cbw, failed, cbw, senseStep(scsi.MediumError, 0x11, 0), passed)},
		{name: "illegal request: not a bad block", wantErr: func(err error) bool {
			se, ok := scsi.AsSense(err)
			return ok && se.Key == scsi.IllegalRequest && !errors.Is(err, blockdev.ErrBadBlock)
		}, steps: seq(
			cbw, failed, cbw, senseStep(scsi.IllegalRequest, 0x24, 0), passed)},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s := &script{t: t, steps: tt.steps}
			l := &LUN{t: NewTransport(s, TransportOptions{Name: "fake"}), opts: LUNOptions{Retries: 3}.withDefaults(), wrote: tt.wrote}
			cdb := scsi.TestUnitReady()
			_, err := l.do(context.Background(), l.essential(cdb.Bytes(), NoData, nil), span{})
			s.done()
			if tt.wantErr == nil && err != nil {
				t.Fatalf("err = %v, want nil", err)
			}
			if tt.wantErr != nil && !tt.wantErr(err) {
				t.Fatalf("err = %v: not the error wanted", err)
			}
			var ce *CommandError
			if err != nil && !errors.As(err, &ce) {
				t.Errorf("err is %T, want *CommandError", err)
			}
		})
	}
}

// TestVPDTolerated checks that Open, asked to read VPD pages
// (QuirkTryVPDPages), goes on without pages a reader rejects, and reads
// each listed page once.
func TestVPDTolerated(t *testing.T) {
	limits := make([]byte, 64)
	limits[1], limits[3], limits[11] = 0xB0, 60, 0x80 // max transfer 128 blocks
	// A device failing a data-in command before any data stalls bulk-IN
	// and then answers the CSW (BOT case 4 with failure).
	failed := []step{{call: "in", err: errFakeStall}, clearIn, {call: "csw", status: 1, residue: vpdLen}}
	tests := []struct {
		name     string
		steps    []step
		serial   string
		transfer int64
	}{
		{"page list rejected", seq(cbw, failed, cbw, senseStep(scsi.IllegalRequest, 0x24, 0), passed), "", 0},
		{"serial rejected, limits read, duplicates skipped", seq(
			cbw, step{call: "in", data: []byte{0, 0, 0, 4, 0x00, 0x80, 0xB0, 0x80}}, passed,
			cbw, failed, cbw, senseStep(scsi.IllegalRequest, 0x24, 0), passed,
			cbw, step{call: "in", data: limits}, passed), "", 128},
		{"serial read", seq(
			cbw, step{call: "in", data: []byte{0, 0, 0, 2, 0x00, 0x80}}, passed,
			cbw, step{call: "in", data: []byte("\x00\x80\x00\x08SER 42  ")}, passed), "SER 42", 0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s := &script{t: t, steps: tt.steps}
			l := &LUN{t: NewTransport(s, TransportOptions{Quirks: QuirkTryVPDPages}), opts: LUNOptions{}.withDefaults(), inquiry: scsi.InquiryData{Version: 5}}
			if err := l.readVPD(context.Background()); err != nil {
				t.Fatal(err)
			}
			s.done()
			if l.Serial() != tt.serial || l.MaxTransfer() != tt.transfer {
				t.Errorf("Serial, MaxTransfer = %q, %d; want %q, %d", l.Serial(), l.MaxTransfer(), tt.serial, tt.transfer)
			}
		})
	}
}

// TestBlockLengthZero: a READ CAPACITY that says blocks of 0 bytes means
// 512, as Linux's sd takes it.
func TestBlockLengthZero(t *testing.T) {
	rc := []byte{0, 0, 0x0F, 0xFF, 0, 0, 0, 0} // last LBA 4095, block length 0
	s := &script{t: t, steps: seq(cbw, step{call: "in", data: rc}, passed)}
	l := &LUN{t: NewTransport(s, TransportOptions{}), opts: LUNOptions{}.withDefaults()}
	if err := l.readCapacity(context.Background()); err != nil {
		t.Fatal(err)
	}
	s.done()
	if l.BlockSize() != 512 || l.BlockCount() != 4096 {
		t.Errorf("%d blocks of %d bytes, want 4096 of 512", l.BlockCount(), l.BlockSize())
	}
}
