package sim

import (
	"context"
	"errors"
	"fmt"
	"io"

	"github.com/usbflash/usbflash/usbms"
)

// cutByDisconnect shortens a transfer of k data bytes to what may move
// before an armed Disconnect, and reports whether it did.
func (d *Device) cutByDisconnect(k int64) (int64, bool) {
	if d.disconnectAt < 0 {
		return k, false
	}
	left := d.disconnectAt - d.stats.BytesIn - d.stats.BytesOut
	if k > left {
		return max(left, 0), true
	}
	return k, false
}

// unplugged is the error of a transfer the device dropped off the bus in.
func unplugged(what string) error {
	return fmt.Errorf("sim: %s: device dropped off the bus: %w", what, usbms.ErrNoDevice)
}

// dataIn sends up to len(p) bytes of the data-in phase. A transfer that
// returns fewer bytes than asked ended with a short packet; when the device
// ran out of data exactly at a transfer boundary, the next transfer gets
// the zero-length packet that ends the phase.
func (d *Device) dataIn(ctx context.Context, p []byte) (int, error) {
	b := &d.bot
	if b.stallAt >= 0 && b.done >= b.stallAt {
		d.haltAndCSW(true)
		return 0, stallError(true)
	}
	if b.done >= b.limit {
		d.toCSW() // zero-length packet
		return 0, nil
	}
	end := b.limit
	if b.stallAt >= 0 {
		end = b.stallAt
	}
	want := int64(len(p))
	k0 := min(want, end-b.done)
	k, cut := d.cutByDisconnect(k0)
	if err := d.pace(ctx, int(k), "bulk-in"); err != nil {
		return 0, err
	}
	if err := d.fillIn(p[:k]); err != nil {
		// The medium failed under a READ: report the block the transfer
		// started in and end the phase as a MediumError would.
		b.status = statusFailed
		d.setSense(b.lun, senseReadError(b.plan.lba+b.done/b.plan.lun.blockSize))
		d.haltAndCSW(true)
		return 0, stallError(true)
	}
	if b.plan.lun != nil {
		bs := b.plan.lun.blockSize
		d.stats.LUNs[b.lun].BlocksRead += (b.done+k)/bs - b.done/bs
	}
	b.done += k
	d.stats.BytesIn += k
	if cut {
		d.gone = true
		return int(k), unplugged("bulk-in")
	}
	if b.stallAt >= 0 && b.done == b.stallAt && k < want {
		d.haltAndCSW(true)
		return int(k), stallError(true)
	}
	if b.done == b.limit && b.stallAt != b.done && (k < want || b.limit == b.host) {
		d.toCSW()
	}
	return int(k), nil
}

// fillIn copies the next len(q) bytes of data-in into q: from the response
// buffer, or straight from the medium for READ (no copy in between).
func (d *Device) fillIn(q []byte) error {
	b := &d.bot
	if b.plan.lun == nil {
		copy(q, b.plan.data[b.done:])
		return nil
	}
	n, err := b.plan.lun.medium.ReadAt(q, b.plan.off+b.done)
	if errors.Is(err, io.EOF) {
		// A file shorter than its capacity reads as zeros past its end.
		clear(q[n:])
		return nil
	}
	return err
}

// dataOut takes up to len(p) bytes of the data-out phase. Bytes past what
// the device wants are accepted and discarded (case 11); bytes past
// dCBWDataTransferLength are a host error and halt bulk-OUT.
func (d *Device) dataOut(ctx context.Context, p []byte) (int, error) {
	b := &d.bot
	if b.stallAt >= 0 && b.done >= b.stallAt {
		d.haltAndCSW(false)
		return 0, stallError(false)
	}
	want := int64(len(p))
	end := b.host
	if b.stallAt >= 0 {
		end = b.stallAt
	}
	k0 := min(want, end-b.done)
	k, cut := d.cutByDisconnect(k0)
	if err := d.pace(ctx, int(k), "bulk-out"); err != nil {
		return 0, err
	}
	d.commitOut(p[:k])
	b.done += k
	d.stats.BytesOut += k
	if cut {
		d.gone = true
		return int(k), unplugged("bulk-out")
	}
	if b.stallAt >= 0 && b.done == b.stallAt && k < want {
		d.haltAndCSW(false)
		return int(k), stallError(false)
	}
	if b.done == b.host {
		d.toCSW()
		if k < want {
			d.halt(false)
			return int(k), fmt.Errorf("sim: bulk-out: %d bytes past dCBWDataTransferLength %d: %w",
				want-k, b.host, usbms.ErrStall)
		}
	}
	return int(k), nil
}

// commitOut writes the part of q that falls within the bytes the command
// commits to the medium, and counts each block when its last byte lands.
// A medium write error ends the commit at the block that failed.
func (d *Device) commitOut(q []byte) {
	b := &d.bot
	if b.plan.params != nil {
		if b.done < int64(len(b.plan.params)) {
			copy(b.plan.params[b.done:], q)
		}
		return
	}
	if b.plan.lun == nil || b.done >= b.commit {
		return
	}
	bs := b.plan.lun.blockSize
	q = q[:min(int64(len(q)), b.commit-b.done)]
	if b.plan.corrupt {
		q = corrupted(q, b.done, (b.plan.corruptLBA-b.plan.lba)*bs, bs)
	}
	n, err := b.plan.lun.medium.WriteAt(q, b.plan.off+b.done)
	end := b.done + int64(n)
	if err != nil {
		end -= end % bs
		b.commit = end
		b.status = statusFailed
		d.setSense(b.lun, senseWriteError(b.plan.lba+end/bs))
	}
	if first, last := b.done/bs, end/bs; last > first {
		d.stats.LUNs[b.lun].countWrite(b.plan.lba+first, last-first)
	}
}

// corrupted is q, the command's bytes from done on, with the bytes of the
// block at byte from..from+bs of the command inverted: a copy, as q is
// the host's buffer.
func corrupted(q []byte, done, from, bs int64) []byte {
	lo, hi := max(from-done, 0), min(from+bs-done, int64(len(q)))
	if lo >= hi {
		return q
	}
	c := append([]byte(nil), q...)
	for i := lo; i < hi; i++ {
		c[i] = ^c[i]
	}
	return c
}

// sendCSW delivers the CSW, applying CSW faults. It stays pending when the
// host's buffer is too small for it (a babble on a real bus).
func (d *Device) sendCSW(ctx context.Context, p []byte) (int, error) {
	if err := d.pace(ctx, 0, "bulk-in (CSW)"); err != nil {
		return 0, err
	}
	b := &d.bot
	if d.takeFault(StallCSW, b.lun, nil) != nil {
		d.halt(true)
		return 0, stallError(true)
	}
	if len(p) < cswLen {
		return 0, fmt.Errorf("sim: bulk-in: %d-byte buffer for a %d-byte CSW: overflow", len(p), cswLen)
	}
	sig, tag, status := d.cswSignature(), b.tag, b.status
	if d.takeFault(BadCSWSignature, b.lun, nil) != nil {
		sig ^= 0xFF
	}
	if d.takeFault(BadCSWTag, b.lun, nil) != nil {
		tag = ^tag
	}
	if d.takeFault(PhaseError, b.lun, nil) != nil {
		status = statusPhaseError
	}
	putCSW(p, sig, tag, d.cswResidue(b.host, b.residue), status)
	d.bot = botState{phase: phaseCBW, haltIn: b.haltIn, haltOut: b.haltOut, stallAt: -1}
	return cswLen, nil
}
