package usbms

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"time"

	"github.com/usbflash/usbflash/scsi"
)

// result is the outcome of one command that reached its CSW.
type result struct {
	n      int // valid data bytes
	status uint8
}

// attempt runs one command once: CBW, data phase, CSW. It handles the
// recoveries BOT allows without a reset (a stalled data phase, one stalled
// CSW read); every other failure is returned for the ladder in run.
func (t *Transport) attempt(ctx context.Context, r request) (result, error) {
	if t.uas != nil {
		return t.uasAttempt(ctx, r)
	}
	t.tag++
	tag := t.tag
	length := uint32(len(r.data))
	encodeCBW((*[cbwLen]byte)(t.cbw[:cbwLen]), tag, uint8(r.lun), t.padCDB(r.cdb), r.dir, length)
	cbw := t.cbw[:cbwLen]
	if t.opts.Quirks&QuirkBulk32 != 0 {
		cbw = t.cbw[:cbwLen+1] // the extra byte stays 0
	}
	n, err := t.ep.BulkOut(ctx, cbw)
	if err != nil {
		return result{}, fmt.Errorf("send CBW: %w", err)
	}
	if n != len(cbw) {
		return result{}, fmt.Errorf("send CBW: device took %d of %d bytes", n, len(cbw))
	}
	if t.opts.Quirks&QuirkGoSlow != 0 && r.dir != NoData {
		time.Sleep(goSlowPause)
	}
	moved, err := t.dataPhase(ctx, r.dir, r.data)
	if err != nil {
		return result{}, err
	}
	c, inData := t.cswInData(r, tag, moved)
	if inData {
		moved = 0 // the 13 bytes were the CSW: no data came
	} else if c, err = t.readCSW(ctx, tag, length); err != nil {
		return result{}, err
	}
	if t.sig == 0 {
		t.learnSignature(c.sig)
	}
	if c.status == statusPhase {
		return result{status: c.status}, ErrPhaseError
	}
	if c.residue != 0 && !t.ignoreResidue {
		t.checkResidue(r, c, moved)
	}
	if t.ignoreResidue {
		c.residue = 0
	}
	return result{n: validBytes(length, moved, c.residue), status: c.status}, nil
}

// goSlowPause is the pause QuirkGoSlow puts between a CBW and its data
// phase: the kernel waits 125 to 150 µs for bridges that lose a data phase
// that follows the CBW at once.
const goSlowPause = 150 * time.Microsecond

// cswInData recognises a device that failed a data-in command by sending
// its CSW in the data phase, as Linux's usb-storage does: exactly 13 bytes
// came of a longer phase, and they are a valid CSW of this command. It
// returns that CSW, with the residue of the whole length, and true; false
// when the data is data. Only the signature the device is known to use
// (or the standard one) and the command's own tag count here.
func (t *Transport) cswInData(r request, tag uint32, moved int) (csw, bool) {
	if r.dir != DataIn || moved != cswLen || len(r.data) <= cswLen {
		return csw{}, false
	}
	want := t.cswCheck(tag, uint32(len(r.data)))
	want.anySig, want.anyTag = false, false
	c, err := parseCSW(r.data[:cswLen], want)
	if err != nil {
		return csw{}, false
	}
	c.residue = uint32(len(r.data))
	return c, true
}

// cswCheck is what the CSW of the command with tag and length must match.
func (t *Transport) cswCheck(tag, length uint32) cswCheck {
	return cswCheck{tag: tag, length: length, sig: t.sigOrDefault(), anySig: t.sig == 0, anyTag: t.opts.Quirks&QuirkIgnoreTag != 0}
}

func (t *Transport) sigOrDefault() uint32 {
	if t.sig != 0 {
		return t.sig
	}
	return cswSignature
}

// learnSignature keeps the signature of the device's first valid CSW:
// Linux's usb-storage requires that one from then on, which covers
// readers that sign every CSW "USBU" or another constant. The standard
// signature is always accepted too.
func (t *Transport) learnSignature(sig uint32) {
	t.sig = sig
	if sig != cswSignature {
		var b [4]byte
		binary.LittleEndian.PutUint32(b[:], sig)
		t.learn(0, fmt.Sprintf("CSW signature %q (0x%08X) instead of \"USBS\"", b[:], sig))
	}
}

// checkResidue switches the residue off for the session when the device
// is caught lying, as Linux's usb-storage does: an INQUIRY of 36 bytes or
// a READ CAPACITY(10) of 8 passed, every byte moved, and the CSW still
// reports a residue.
func (t *Transport) checkResidue(r request, c csw, moved int) {
	if c.status != statusPassed || moved != len(r.data) {
		return
	}
	switch {
	case r.cdb[0] == scsi.OpInquiry && len(r.data) == 36,
		r.cdb[0] == scsi.OpReadCapacity10 && len(r.data) == 8:
		t.ignoreResidue = true
		t.learn(QuirkIgnoreResidue, fmt.Sprintf("%s moved all %d bytes and the CSW said %d were left", opName(r.cdb), len(r.data), c.residue))
	}
}

// dataPhase moves data in chunks of at most ChunkSize bytes. A stall ends
// the phase early: the halt is cleared and the CSW will tell what happened.
// A short IN transfer also ends it, as a short packet does on the bus.
func (t *Transport) dataPhase(ctx context.Context, dir Direction, data []byte) (int, error) {
	moved := 0
	for moved < len(data) {
		chunk := data[moved:min(len(data), moved+t.opts.ChunkSize)]
		var n int
		var err error
		if dir == DataIn {
			n, err = t.ep.BulkIn(ctx, chunk)
		} else {
			n, err = t.ep.BulkOut(ctx, chunk)
		}
		moved += max(0, min(n, len(chunk)))
		if errors.Is(err, ErrStall) {
			if cerr := t.ep.ClearHalt(ctx, dir == DataIn); cerr != nil {
				return moved, fmt.Errorf("clear halt on bulk-%s after data stall: %w", dir, cerr)
			}
			return moved, nil
		}
		if err != nil {
			return moved, fmt.Errorf("data %s at byte %d of %d: %w", dir, moved, len(data), err)
		}
		if n < len(chunk) {
			return moved, nil
		}
	}
	return moved, nil
}

// readCSW reads and checks the CSW. A stall is cleared and the read tried
// once more (BOT 6.7.2); a zero-length packet is skipped once, as Linux does
// for devices that send one after the data.
func (t *Transport) readCSW(ctx context.Context, tag, length uint32) (csw, error) {
	want := t.cswCheck(tag, length)
	stalled, empty := false, false
	for {
		n, err := t.ep.BulkIn(ctx, t.csw[:])
		switch {
		case errors.Is(err, ErrStall) && !stalled:
			stalled = true
			if cerr := t.ep.ClearHalt(ctx, true); cerr != nil {
				return csw{}, fmt.Errorf("clear halt on bulk-in after CSW stall: %w", cerr)
			}
			continue
		case err != nil:
			return csw{}, fmt.Errorf("read CSW: %w", err)
		case n == 0 && !empty:
			empty = true
			continue
		}
		return parseCSW(t.csw[:max(0, min(n, cswLen))], want)
	}
}
