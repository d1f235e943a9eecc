package usbms

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"time"

	"github.com/usbflash/usbflash/scsi"
)

// botTransport is Bulk-Only Transport (USB Mass Storage Class Bulk-Only
// Transport 1.0): each command is a Command Block Wrapper on bulk-OUT, its
// data phase on bulk-OUT or bulk-IN, and a Command Status Wrapper on
// bulk-IN, one command at a time. It keeps the leniencies of Linux's
// usb-storage (a learned CSW signature, a residue it stops believing, a CSW
// sent in the data phase) and the table-only flags of its quirk table
// (bot_quirktable.go): BULK_IGNORE_TAG, GO_SLOW, BULK32.
type botTransport struct {
	t   *Transport
	tag uint32
	cbw [cbwLen + 1]byte // one spare byte for QuirkBulk32
	csw [cswLen]byte
	// sig is the CSW signature the device uses, learned from its first
	// CSW; 0 until then.
	sig uint32
	// ignoreResidue: the CSW residue is disregarded (QuirkIgnoreResidue,
	// or the device was caught lying).
	ignoreResidue bool
	sense         [senseLen]byte
}

func newBOTTransport(t *Transport) *botTransport {
	return &botTransport{t: t, ignoreResidue: t.opts.Quirks&QuirkIgnoreResidue != 0}
}

// attempt runs one command once: CBW, data phase, CSW. It handles the
// recoveries BOT allows without a reset (a stalled data phase, one stalled
// CSW read); every other failure is returned for the ladder in run.
func (b *botTransport) attempt(ctx context.Context, r request) (result, error) {
	t := b.t
	b.tag++
	tag := b.tag
	length := uint32(len(r.data))
	encodeCBW((*[cbwLen]byte)(b.cbw[:cbwLen]), tag, uint8(r.lun), t.padCDB(r.cdb), r.dir, length)
	cbw := b.cbw[:cbwLen]
	if t.opts.Quirks&QuirkBulk32 != 0 {
		cbw = b.cbw[:cbwLen+1] // the extra byte stays 0
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
	moved, err := b.dataPhase(ctx, r.dir, r.data)
	if err != nil {
		return result{}, err
	}
	c, inData := b.cswInData(r, tag, moved)
	if inData {
		moved = 0 // the 13 bytes were the CSW: no data came
	} else if c, err = b.readCSW(ctx, tag, length); err != nil {
		return result{}, err
	}
	if b.sig == 0 {
		b.learnSignature(c.sig)
	}
	if c.status == statusPhase {
		return result{status: c.status}, ErrPhaseError
	}
	if c.residue != 0 && !b.ignoreResidue {
		b.checkResidue(r, c, moved)
	}
	if b.ignoreResidue {
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
func (b *botTransport) cswInData(r request, tag uint32, moved int) (csw, bool) {
	if r.dir != DataIn || moved != cswLen || len(r.data) <= cswLen {
		return csw{}, false
	}
	want := b.cswCheck(tag, uint32(len(r.data)))
	want.anySig, want.anyTag = false, false
	c, err := parseCSW(r.data[:cswLen], want)
	if err != nil {
		return csw{}, false
	}
	c.residue = uint32(len(r.data))
	return c, true
}

// cswCheck is what the CSW of the command with tag and length must match.
func (b *botTransport) cswCheck(tag, length uint32) cswCheck {
	return cswCheck{tag: tag, length: length, sig: b.sigOrDefault(), anySig: b.sig == 0, anyTag: b.t.opts.Quirks&QuirkIgnoreTag != 0}
}

func (b *botTransport) sigOrDefault() uint32 {
	if b.sig != 0 {
		return b.sig
	}
	return cswSignature
}

// learnSignature keeps the signature of the device's first valid CSW:
// Linux's usb-storage requires that one from then on, which covers
// readers that sign every CSW "USBU" or another constant. The standard
// signature is always accepted too.
func (b *botTransport) learnSignature(sig uint32) {
	b.sig = sig
	if sig != cswSignature {
		var le [4]byte
		binary.LittleEndian.PutUint32(le[:], sig)
		b.t.learn(0, fmt.Sprintf("CSW signature %q (0x%08X) instead of \"USBS\"", le[:], sig))
	}
}

// checkResidue switches the residue off for the session when the device
// is caught lying, as Linux's usb-storage does: an INQUIRY of 36 bytes or
// a READ CAPACITY(10) of 8 passed, every byte moved, and the CSW still
// reports a residue.
func (b *botTransport) checkResidue(r request, c csw, moved int) {
	if c.status != statusPassed || moved != len(r.data) {
		return
	}
	switch {
	case r.cdb[0] == scsi.OpInquiry && len(r.data) == 36,
		r.cdb[0] == scsi.OpReadCapacity10 && len(r.data) == 8:
		b.ignoreResidue = true
		b.t.learn(QuirkIgnoreResidue, fmt.Sprintf("%s moved all %d bytes and the CSW said %d were left", opName(r.cdb), len(r.data), c.residue))
	}
}

// dataPhase moves data in chunks of at most ChunkSize bytes. A stall ends
// the phase early: the halt is cleared and the CSW will tell what happened.
// A short IN transfer also ends it, as a short packet does on the bus.
func (b *botTransport) dataPhase(ctx context.Context, dir Direction, data []byte) (int, error) {
	t := b.t
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
func (b *botTransport) readCSW(ctx context.Context, tag, length uint32) (csw, error) {
	t := b.t
	want := b.cswCheck(tag, length)
	stalled, empty := false, false
	for {
		n, err := t.ep.BulkIn(ctx, b.csw[:])
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
		return parseCSW(b.csw[:max(0, min(n, cswLen))], want)
	}
}

// senseLen is the REQUEST SENSE allocation: fixed-format sense without
// additional bytes, the length every device answers.
const senseLen = 18

// senseOf fetches the reason a command failed with REQUEST SENSE, as a
// *scsi.SenseError. A device with a pending UNIT ATTENTION may fail
// REQUEST SENSE itself once (QEMU does); the second one returns the
// condition.
func (b *botTransport) senseOf(ctx context.Context, r request) error {
	cdb := scsi.RequestSense(senseLen)
	sr := request{lun: r.lun, cdb: cdb.Bytes(), dir: DataIn, data: b.sense[:], maxResets: r.maxResets, portReset: false}
	var lastErr error
	for range 2 {
		res, err := b.t.run(ctx, sr)
		if err != nil {
			return fmt.Errorf("command failed, and so did REQUEST SENSE: %w", errors.Join(errNoSenseData, err))
		}
		if res.status == statusFailed {
			lastErr = fmt.Errorf("command failed, and REQUEST SENSE reported failure twice: %w", errNoSenseData)
			continue
		}
		se, err := scsi.ParseSense(b.sense[:res.n])
		if err != nil {
			return fmt.Errorf("command failed with unreadable sense data: %w", errors.Join(errNoSenseData, err))
		}
		return se
	}
	return lastErr
}

// Class-specific requests (BOT 3.1, 3.2).
const (
	reqMassStorageReset = 0xFF
	reqGetMaxLUN        = 0xFE
)

// recover is BOT 5.3.4's reset recovery: Mass Storage Reset, then
// CLEAR_FEATURE (ENDPOINT_HALT) on bulk-IN and on bulk-OUT. Each step has
// its own timeout since the command's may already be spent. Between the
// reset and the clears the reader is left alone for ResetSettle, as
// Linux's usb-storage leaves it.
func (b *botTransport) recover(ctx context.Context) error {
	t := b.t
	step := func(what string, f func(context.Context) error) error {
		sctx, cancel := context.WithTimeout(ctx, t.opts.ResetTimeout)
		defer cancel()
		if err := f(sctx); err != nil {
			return fmt.Errorf("%s: %w", what, err)
		}
		return nil
	}
	if err := step("Mass Storage Reset", func(c context.Context) error {
		_, err := t.ep.ClassRequest(c, false, reqMassStorageReset, 0, nil)
		return err
	}); err != nil {
		return err
	}
	if t.opts.ResetSettle > 0 {
		if err := t.sleep(ctx, t.opts.ResetSettle); err != nil {
			return fmt.Errorf("after Mass Storage Reset: %w", err)
		}
	}
	if err := step("clear halt on bulk-in", func(c context.Context) error { return t.ep.ClearHalt(c, true) }); err != nil {
		return err
	}
	return step("clear halt on bulk-out", func(c context.Context) error { return t.ep.ClearHalt(c, false) })
}

// maxLUNTimeout bounds Get Max LUN, as Linux's usb-storage does.
const maxLUNTimeout = 10 * time.Second

// maxLUN sends Get Max LUN. A stall, a short or impossible answer, no
// answer in time and any other failure of the request mean one LUN.
func (b *botTransport) maxLUN(ctx context.Context) (int, error) {
	t := b.t
	t.mu.Lock()
	defer t.mu.Unlock()
	var v [1]byte
	rctx, cancel := context.WithTimeout(ctx, maxLUNTimeout)
	defer cancel()
	n, err := t.ep.ClassRequest(rctx, true, reqGetMaxLUN, 0, v[:])
	switch {
	case errors.Is(err, ErrNoDevice):
		return 0, fmt.Errorf("the GET MAX LUN request: %w", t.transportError(err))
	case ctx.Err() != nil:
		return 0, fmt.Errorf("the GET MAX LUN request: %w", ctx.Err())
	case err != nil || n < 1 || v[0] > 15:
		return 0, nil
	}
	return int(v[0]), nil
}

func (b *botTransport) info() TransportInfo {
	return TransportInfo{Protocol: ProtocolBOT, QueueDepth: 1, Why: b.t.opts.UASPassedOver, Both: b.t.opts.BothOffered}
}

// depth is 1: Bulk-Only has one command in flight.
func (b *botTransport) depth() int { return 1 }

// depthWhy says a queue depth above 1 does nothing here.
func (b *botTransport) depthWhy(asked int) string {
	return fmt.Sprintf("%s %d does nothing on this reader: Bulk-Only Transport runs one command at a time", SettingQueueDepth, asked)
}

// batch runs rs one after the other, each with the recovery ladder, since
// Bulk-Only has one command in flight; a LUN does not batch at depth 1,
// so this is for completeness of the seam. A command that moved less than
// all its data is ErrIncomplete, as in a UAS batch.
func (b *botTransport) batch(ctx context.Context, rs []request) []error {
	errs := make([]error, len(rs))
	for i, r := range rs {
		n, err := b.t.exec(ctx, r)
		if err == nil && n < len(r.data) {
			err = fmt.Errorf("%w: %d of %d bytes", ErrIncomplete, n, len(r.data))
		}
		errs[i] = err
	}
	return errs
}

// maxDataPhase is 0: a data phase of any length is cut into transfers of
// ChunkSize (dataPhase).
func (b *botTransport) maxDataPhase() int { return 0 }
