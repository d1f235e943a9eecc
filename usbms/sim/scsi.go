package sim

import "encoding/binary"

// SCSI operation codes the device implements (SPC-4, SBC-3).
const (
	opTestUnitReady  = 0x00
	opRequestSense   = 0x03
	opInquiry        = 0x12
	opModeSense6     = 0x1A
	opModeSense10    = 0x5A
	opStartStopUnit  = 0x1B
	opPreventAllow   = 0x1E
	opReadCapacity10 = 0x25
	opRead10         = 0x28
	opWrite10        = 0x2A
	opSyncCache10    = 0x35
	opRead16         = 0x88
	opWrite16        = 0x8A
	opServiceIn16    = 0x9E
	opUnmap          = 0x42
	opWriteSame16    = 0x93
	saReadCapacity16 = 0x10
)

// known reports whether the device implements op.
func known(op byte) bool {
	switch op {
	case opTestUnitReady, opRequestSense, opInquiry, opModeSense6, opModeSense10, opStartStopUnit,
		opPreventAllow, opReadCapacity10, opRead10, opWrite10, opSyncCache10,
		opRead16, opWrite16, opServiceIn16, opUnmap, opWriteSame16:
		return true
	}
	return false
}

// execute decides what a command does. Commands without a data-out phase
// take effect here; READ and WRITE move their data in the data phase.
func (d *Device) execute(lunIdx int, cdb []byte) plan {
	op := cdb[0]
	d.lastOp = op
	if lunIdx >= len(d.luns) {
		return d.badLUN(op, cdb)
	}
	l := d.luns[lunIdx]
	if !known(op) {
		return failed(l, senseInvalidOpcode())
	}
	if len(cdb) < cdbLen(op) {
		return failed(l, senseInvalidField())
	}
	// A slot whose card comes and goes is looked at first, as a reader
	// reads its card-detect switch; a card file that cannot be a card
	// (real= it cannot hold) is an empty slot.
	if l.refresh(false) != nil {
		return failed(l, senseNoMedium())
	}
	if op == opRequestSense {
		return d.requestSense(lunIdx, l, cdb)
	}
	// Sense data describes the last command only (BOT has no autosense):
	// any other command replaces it.
	l.sense = sense{}
	if op != opInquiry {
		if s, ok := d.takeUnitAttention(lunIdx, l); ok {
			return failed(l, s)
		}
		if d.takeFault(NotReady, lunIdx, nil) != nil {
			return failed(l, senseBecomingReady())
		}
		if s, ok := d.notReady(cdb); ok {
			return failed(l, s)
		}
	}
	switch op {
	case opInquiry:
		return d.inquiry(l, cdb)
	case opTestUnitReady:
		if !l.present() {
			return failed(l, senseNoMedium())
		}
		return plan{}
	case opModeSense6, opModeSense10:
		return d.modeSense(l, cdb)
	case opStartStopUnit:
		return startStop(l, cdb)
	case opPreventAllow:
		l.prevent = cdb[4]&0x03 != 0
		return plan{}
	case opReadCapacity10, opServiceIn16:
		return readCapacity(l, cdb, d.readCapacityLast(l))
	case opSyncCache10:
		return syncCache(l)
	case opRead10, opRead16, opWrite10, opWrite16:
		return d.readWrite(lunIdx, l, cdb)
	case opUnmap, opWriteSame16:
		return d.unmap(l, cdb)
	}
	return failed(l, senseInvalidOpcode())
}

// badLUN answers a command addressed to a LUN that does not exist: INQUIRY
// reports "no device here" (peripheral qualifier 011b, SPC-4 6.6.2),
// REQUEST SENSE returns 5/25/00, everything else fails with it.
func (d *Device) badLUN(op byte, cdb []byte) plan {
	switch op {
	case opInquiry:
		if len(cdb) < 6 {
			return plan{status: statusFailed}
		}
		b := make([]byte, 36)
		b[0] = 0x7F
		return dataIn(b, int(binary.BigEndian.Uint16(cdb[3:5])))
	case opRequestSense:
		if len(cdb) < 6 {
			return plan{status: statusFailed}
		}
		return dataIn(senseBadLUN().fixed(), int(cdb[4]))
	}
	return plan{status: statusFailed}
}

// takeUnitAttention reports a pending UNIT ATTENTION and clears it: the
// device's own (after a reset) first, then injected ones.
func (d *Device) takeUnitAttention(lunIdx int, l *lun) (sense, bool) {
	if l.unitAttention != nil {
		s := *l.unitAttention
		l.unitAttention = nil
		return s, true
	}
	if d.takeFault(UnitAttention, lunIdx, nil) != nil {
		return senseMediumChanged(), true
	}
	return sense{}, false
}

// requestSense returns the sense of the last command, or a pending UNIT
// ATTENTION (which it clears, SPC-4 5.14), in fixed format. The DESC bit
// is ignored: fixed format is what USB readers return.
func (d *Device) requestSense(lunIdx int, l *lun, cdb []byte) plan {
	if l.garbageSense {
		l.garbageSense = false
		return dataIn(make([]byte, fixedSenseLen), int(cdb[4]))
	}
	s := l.sense
	if s.key == keyNoSense {
		if ua, ok := d.takeUnitAttention(lunIdx, l); ok {
			s = ua
		}
	}
	l.sense = sense{}
	return dataIn(s.fixed(), int(cdb[4]))
}

// readCapacity answers READ CAPACITY(10) and (16).
func readCapacity(l *lun, cdb []byte, last uint64) plan {
	if cdb[0] == opServiceIn16 && cdb[1]&0x1F != saReadCapacity16 {
		return failed(l, senseInvalidField())
	}
	if !l.present() {
		return failed(l, senseNoMedium())
	}
	if cdb[0] == opReadCapacity10 {
		b := make([]byte, 8)
		// SBC-3 5.16.2: a last LBA that does not fit says "use (16)".
		binary.BigEndian.PutUint32(b[0:4], uint32(min(last, 0xFFFFFFFF)))
		binary.BigEndian.PutUint32(b[4:8], uint32(l.blockSize))
		return dataIn(b, len(b))
	}
	b := make([]byte, 32)
	binary.BigEndian.PutUint64(b[0:8], last)
	binary.BigEndian.PutUint32(b[8:12], uint32(l.blockSize))
	return dataIn(b, int(binary.BigEndian.Uint32(cdb[10:14])))
}

// syncCache flushes the medium when it can be flushed (an *os.File).
func syncCache(l *lun) plan {
	if l.cfg.RejectSyncCache {
		return failed(l, senseInvalidOpcode())
	}
	if !l.present() {
		return failed(l, senseNoMedium())
	}
	if s, ok := l.medium.(interface{ Sync() error }); ok {
		if err := s.Sync(); err != nil {
			return failed(l, senseWriteError(0))
		}
	}
	return plan{}
}

// startStop handles START STOP UNIT: LoEj with Start=0 ejects (the slot is
// empty afterwards), LoEj with Start=1 loads it back. Without LoEj it only
// spins, which a card does not.
func startStop(l *lun, cdb []byte) plan {
	loej, start := cdb[4]&0x02 != 0, cdb[4]&0x01 != 0
	if !loej {
		return plan{}
	}
	if !start {
		if l.prevent {
			return failed(l, senseRemovalBlocked())
		}
		l.ejected = true
		return plan{}
	}
	l.ejected = false
	return plan{}
}
