package usbms

import (
	"context"
	"errors"
	"fmt"

	"usbflash/blockdev"
	"usbflash/scsi"
)

// ReadBlocks reads len(p)/BlockSize() blocks starting at lba. The range goes
// out as one READ when the CDB can carry it; see WriteBlocks.
func (l *LUN) ReadBlocks(ctx context.Context, lba int64, p []byte) error {
	return l.transfer(ctx, false, lba, p)
}

// WriteBlocks writes len(p)/BlockSize() blocks starting at lba. The range
// goes out as one WRITE(10) when the address fits 32 bits and the count 16
// bits, as one WRITE(16) otherwise, and is split only past what one CDB can
// carry (or past the device's block limits).
func (l *LUN) WriteBlocks(ctx context.Context, lba int64, p []byte) error {
	if l.wp {
		return &CommandError{Op: "WRITE", Device: l.t.opts.Name, LUN: l.lun, LBA: lba, Blocks: int64(len(p) / l.blockSize), Err: blockdev.ErrWriteProtected}
	}
	return l.transfer(ctx, true, lba, p)
}

func (l *LUN) transfer(ctx context.Context, write bool, lba int64, p []byte) error {
	op := "READ"
	if write {
		op = "WRITE"
	}
	bs := int64(l.blockSize)
	count := int64(len(p)) / bs
	if l.changed {
		return &CommandError{Op: op, Device: l.t.opts.Name, LUN: l.lun, LBA: lba, Blocks: count, Err: ErrMediumChanged}
	}
	if int64(len(p))%bs != 0 || lba < 0 || lba > l.blocks || count > l.blocks-lba {
		return &CommandError{Op: op, Device: l.t.opts.Name, LUN: l.lun, LBA: lba, Blocks: count,
			Err: fmt.Errorf("%d bytes at LBA %d is not whole %d-byte blocks inside the %d blocks of the medium", len(p), lba, bs, l.blocks)}
	}
	for len(p) > 0 {
		n, use16 := l.plan(lba, int64(len(p))/bs)
		err := l.rw(ctx, write, use16, lba, p[:n*bs])
		if use16 && scsi.IsInvalidOpcode(err) && lba+n-1 <= scsi.MaxLBA10 {
			// The device lacks the 16-byte commands: go on with (10).
			l.no16 = true
			continue
		}
		if err != nil {
			return err
		}
		lba += n
		p = p[n*bs:]
	}
	return nil
}

// plan chooses how many of count blocks at lba the next command moves and
// whether it needs the 16-byte CDB.
func (l *LUN) plan(lba, count int64) (n int64, use16 bool) {
	limit := int64(scsi.MaxBlocks16)
	if l.no16 {
		limit = scsi.MaxBlocks10
	}
	if m := int64(l.limits.MaxTransfer); m > 0 {
		limit = min(limit, m)
	}
	n = min(count, limit)
	if n <= scsi.MaxBlocks10 && lba+n-1 <= scsi.MaxLBA10 {
		return n, false
	}
	if !l.no16 {
		return n, true
	}
	// Without (16), a range crossing 2^32 stops at the boundary; what is
	// past it cannot be addressed, and rw reports that.
	if lba <= scsi.MaxLBA10 {
		n = min(n, scsi.MaxLBA10+1-lba)
	}
	return n, lba > scsi.MaxLBA10
}

// rw issues one READ or WRITE. The CDB is built in the LUN's own buffer
// (a local one would escape along with the data buffer) and the data goes
// straight from p, so the hot path allocates nothing of its own.
func (l *LUN) rw(ctx context.Context, write, use16 bool, lba int64, p []byte) error {
	blocks := int64(len(p) / l.blockSize)
	switch {
	case write && use16:
		l.cdb = scsi.Write16(uint64(lba), uint32(blocks), false)
	case write:
		l.cdb = scsi.Write10(uint32(lba), uint16(blocks), false)
	case use16:
		l.cdb = scsi.Read16(uint64(lba), uint32(blocks))
	default:
		l.cdb = scsi.Read10(uint32(lba), uint16(blocks))
	}
	dir := DataIn
	if write {
		dir = DataOut
	}
	if use16 && l.no16 {
		return &CommandError{Op: l.cdb.Name(), Device: l.t.opts.Name, LUN: l.lun, LBA: lba, Blocks: blocks,
			Err: errors.New("LBA beyond 2^32 and the device does not support 16-byte commands")}
	}
	_, err := l.do(ctx, l.essential(l.cdb.Bytes(), dir, p), span{lba, blocks})
	if err == nil && write {
		l.wrote = true
	}
	return err
}

// Sync flushes the device's write cache with SYNCHRONIZE CACHE(10). Many
// readers do not implement it (ILLEGAL REQUEST) or stall it; both are taken
// as "nothing to flush".
func (l *LUN) Sync(ctx context.Context) error {
	cdb := scsi.SynchronizeCache10(0, 0)
	_, err := l.do(ctx, l.essential(cdb.Bytes(), NoData, nil), span{})
	if scsi.IsIllegalRequest(err) || (errors.Is(err, ErrStall) && !errors.Is(err, ErrNoDevice)) {
		return nil
	}
	return err
}

// Eject allows medium removal and ejects the medium (START STOP UNIT with
// LoEj). Readers without a lock reject PREVENT ALLOW; that is ignored.
func (l *LUN) Eject(ctx context.Context) error {
	cdb := scsi.PreventAllowMediumRemoval(false)
	if _, err := l.do(ctx, probe(cdb.Bytes(), NoData, nil), span{}); err != nil && !scsi.IsIllegalRequest(err) {
		if err := unignorable(ctx, err); err != nil {
			return err
		}
	}
	cdb = scsi.StartStopUnit(false, true)
	_, err := l.do(ctx, l.essential(cdb.Bytes(), NoData, nil), span{})
	return err
}
