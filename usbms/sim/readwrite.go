package sim

import "encoding/binary"

// readWrite plans READ(10/16) and WRITE(10/16). The data moves in the data
// phase; here the device checks the medium, protection and range, and
// finds where an armed MediumError cuts the command short.
func (d *Device) readWrite(lunIdx int, l *lun, cdb []byte) plan {
	var lba, count uint64
	switch cdb[0] {
	case opRead10, opWrite10:
		lba = uint64(binary.BigEndian.Uint32(cdb[2:6]))
		count = uint64(binary.BigEndian.Uint16(cdb[7:9]))
	default:
		lba = binary.BigEndian.Uint64(cdb[2:10])
		count = uint64(binary.BigEndian.Uint32(cdb[10:14]))
	}
	write := cdb[0] == opWrite10 || cdb[0] == opWrite16
	if !l.present() {
		return failed(l, senseNoMedium())
	}
	if c, ok := l.medium.(CommandClock); ok {
		c.Command() // the controller's timer runs whatever becomes of the command
	}
	if write && l.cfg.WriteProtected {
		return failed(l, senseWriteProtected())
	}
	blocks := uint64(l.cfg.Blocks)
	if lba > blocks || count > blocks-lba {
		return failed(l, senseLBAOutOfRange())
	}
	n := int64(count) * l.blockSize
	p := plan{dir: dirIn, n: n, good: n, lun: l, off: int64(lba) * l.blockSize, lba: int64(lba)}
	if write {
		p.dir = dirOut
	}
	if count == 0 {
		return plan{} // SBC-3: a transfer length of 0 moves nothing and is no error
	}
	if q, ok := d.misbehaveMedia(l, p, lba, count, write); ok {
		return q
	}
	end := int64(lba + count)
	if u, ok := l.medium.(interface{ firstUnreadable(lba, count int64) int64 }); ok && !write {
		if bad := u.firstUnreadable(int64(lba), int64(count)); bad >= 0 {
			// The blocks before it move, then the command fails.
			p.good, p.status = (bad-int64(lba))*l.blockSize, statusFailed
			l.sense = senseReadError(bad)
			return p
		}
	}
	covers := func(f *Fault) bool { return f.LBA >= int64(lba) && f.LBA < end }
	if write {
		if c := d.takeFault(Corrupt, lunIdx, covers); c != nil {
			p.corrupt, p.corruptLBA = true, c.LBA
		}
	}
	hit := d.takeFault(MediumError, lunIdx, covers)
	if hit != nil {
		p.good = (hit.LBA - int64(lba)) * l.blockSize
		p.status = statusFailed
		if write {
			l.sense = senseWriteError(hit.LBA)
		} else {
			l.sense = senseReadError(hit.LBA)
		}
	}
	return p
}
