package scsi

import "encoding/binary"

// CDB is a command descriptor block of 6 to 16 bytes. It is a value type so
// that building one never allocates.
type CDB struct {
	b [16]byte
	n uint8
}

// Bytes returns the CDB's bytes. The slice aliases c.
func (c *CDB) Bytes() []byte { return c.b[:c.n] }

// Len returns the length of the CDB in bytes.
func (c CDB) Len() int { return int(c.n) }

// Opcode returns the operation code, byte 0.
func (c CDB) Opcode() byte { return c.b[0] }

// Name returns the conventional name of the command, for messages.
func (c CDB) Name() string { return OpName(c.b[0]) }

func newCDB(n uint8, op byte) CDB {
	c := CDB{n: n}
	c.b[0] = op
	return c
}

// TestUnitReady asks whether the medium is ready for media-access commands.
func TestUnitReady() CDB { return newCDB(6, OpTestUnitReady) }

// RequestSense fetches the sense data of the previous failed command. An
// allocation of 18 is what every device answers in fixed format.
func RequestSense(alloc uint8) CDB {
	c := newCDB(6, OpRequestSense)
	c.b[4] = alloc
	return c
}

// Inquiry requests standard INQUIRY data. 36 bytes is the length every
// device survives; some hang on others.
func Inquiry(alloc uint16) CDB {
	c := newCDB(6, OpInquiry)
	binary.BigEndian.PutUint16(c.b[3:5], alloc)
	return c
}

// InquiryVPD requests vital product data page page (EVPD=1).
func InquiryVPD(page uint8, alloc uint16) CDB {
	c := newCDB(6, OpInquiry)
	c.b[1] = 0x01
	c.b[2] = page
	binary.BigEndian.PutUint16(c.b[3:5], alloc)
	return c
}

// ModeSense6 requests mode page page (0x3F for all pages). With dbd set the
// device omits block descriptors.
func ModeSense6(page, subpage uint8, dbd bool, alloc uint8) CDB {
	c := newCDB(6, OpModeSense6)
	if dbd {
		c.b[1] = 0x08
	}
	c.b[2] = page & 0x3F // PC=0: current values
	c.b[3] = subpage
	c.b[4] = alloc
	return c
}

// ModeSense10 requests mode page page with MODE SENSE(10), which devices
// of the ATAPI command sets (SFF-8020i, SFF-8070i) take instead of (6).
func ModeSense10(page, subpage uint8, dbd bool, alloc uint16) CDB {
	c := newCDB(10, OpModeSense10)
	if dbd {
		c.b[1] = 0x08
	}
	c.b[2] = page & 0x3F
	c.b[3] = subpage
	binary.BigEndian.PutUint16(c.b[7:9], alloc)
	return c
}

// StartStopUnit starts (start) or stops the medium; with loej set, stopping
// ejects it and starting loads it.
func StartStopUnit(start, loej bool) CDB {
	c := newCDB(6, OpStartStopUnit)
	if start {
		c.b[4] |= 0x01
	}
	if loej {
		c.b[4] |= 0x02
	}
	return c
}

// PreventAllowMediumRemoval locks (prevent) or unlocks the medium.
func PreventAllowMediumRemoval(prevent bool) CDB {
	c := newCDB(6, OpPreventAllowRemoval)
	if prevent {
		c.b[4] = 0x01
	}
	return c
}

// ReadCapacity10 requests the last LBA and block length (8 bytes back).
func ReadCapacity10() CDB { return newCDB(10, OpReadCapacity10) }

// ReadCapacity16 requests the 64-bit capacity; 32 bytes is the usual
// allocation.
func ReadCapacity16(alloc uint32) CDB {
	c := newCDB(16, OpServiceActionIn16)
	c.b[1] = ServiceActionReadCap16
	binary.BigEndian.PutUint32(c.b[10:14], alloc)
	return c
}

// Read10 reads blocks blocks starting at lba.
func Read10(lba uint32, blocks uint16) CDB {
	c := newCDB(10, OpRead10)
	binary.BigEndian.PutUint32(c.b[2:6], lba)
	binary.BigEndian.PutUint16(c.b[7:9], blocks)
	return c
}

// Read16 reads blocks blocks starting at a 64-bit lba.
func Read16(lba uint64, blocks uint32) CDB {
	c := newCDB(16, OpRead16)
	binary.BigEndian.PutUint64(c.b[2:10], lba)
	binary.BigEndian.PutUint32(c.b[10:14], blocks)
	return c
}

// fuaBit is byte 1 bit 3 of READ/WRITE (10) and (16): force unit access,
// i.e. the device completes the command only when the data is on the medium.
const fuaBit = 0x08

// Write10 writes blocks blocks starting at lba; fua asks the device not to
// acknowledge before the data is on the medium.
func Write10(lba uint32, blocks uint16, fua bool) CDB {
	c := newCDB(10, OpWrite10)
	if fua {
		c.b[1] = fuaBit
	}
	binary.BigEndian.PutUint32(c.b[2:6], lba)
	binary.BigEndian.PutUint16(c.b[7:9], blocks)
	return c
}

// Write16 writes blocks blocks starting at a 64-bit lba.
func Write16(lba uint64, blocks uint32, fua bool) CDB {
	c := newCDB(16, OpWrite16)
	if fua {
		c.b[1] = fuaBit
	}
	binary.BigEndian.PutUint64(c.b[2:10], lba)
	binary.BigEndian.PutUint32(c.b[10:14], blocks)
	return c
}

// UnmapParamLen is the length of an UNMAP parameter list of one block
// descriptor: an 8-byte header and the 16-byte descriptor.
const UnmapParamLen = 24

// Unmap tells the device that the blocks its parameter list of paramLen
// bytes names hold nothing any more (SBC-3 5.28); UnmapParameters makes
// the list.
func Unmap(paramLen uint16) CDB {
	c := newCDB(10, OpUnmap)
	binary.BigEndian.PutUint16(c.b[7:9], paramLen)
	return c
}

// UnmapParameters fills p (UnmapParamLen bytes) with the parameter list of
// an UNMAP of blocks blocks from lba, and returns it.
func UnmapParameters(p []byte, lba uint64, blocks uint32) []byte {
	p = p[:UnmapParamLen]
	clear(p)
	binary.BigEndian.PutUint16(p[0:2], UnmapParamLen-2) // the data after this field
	binary.BigEndian.PutUint16(p[2:4], 16)              // the block descriptors'
	binary.BigEndian.PutUint64(p[8:16], lba)
	binary.BigEndian.PutUint32(p[16:20], blocks)
	return p
}

// WriteSame16 writes the one block of its data-out to blocks blocks from
// lba; with unmap the device may unmap them instead, when that block is
// zeros (SBC-3 5.50).
func WriteSame16(lba uint64, blocks uint32, unmap bool) CDB {
	c := newCDB(16, OpWriteSame16)
	if unmap {
		c.b[1] = 0x08
	}
	binary.BigEndian.PutUint64(c.b[2:10], lba)
	binary.BigEndian.PutUint32(c.b[10:14], blocks)
	return c
}

// SynchronizeCache10 flushes the device's write cache for blocks blocks from
// lba; zero blocks means through the end of the medium.
func SynchronizeCache10(lba uint32, blocks uint16) CDB {
	c := newCDB(10, OpSynchronizeCache10)
	binary.BigEndian.PutUint32(c.b[2:6], lba)
	binary.BigEndian.PutUint16(c.b[7:9], blocks)
	return c
}
