package sim

import "encoding/binary"

// Sense keys (SPC-4 table 54).
const (
	keyNoSense        = 0x0
	keyRecoveredError = 0x1
	keyNotReady       = 0x2
	keyMediumError    = 0x3
	keyHardwareError  = 0x4
	keyIllegalRequest = 0x5
	keyUnitAttention  = 0x6
	keyDataProtect    = 0x7
	keyAbortedCommand = 0xB
)

// sense is the sense data a failed command leaves for REQUEST SENSE.
type sense struct {
	key, asc, ascq byte
	// info is the INFORMATION field (the failing LBA); valid says whether
	// it is meaningful (the VALID bit).
	info  int64
	valid bool
}

// The conditions the device reports, by name, so the command code reads
// like the spec tables.
func senseInvalidOpcode() sense  { return sense{key: keyIllegalRequest, asc: 0x20} }
func senseInvalidField() sense   { return sense{key: keyIllegalRequest, asc: 0x24} }
func senseLBAOutOfRange() sense  { return sense{key: keyIllegalRequest, asc: 0x21} }
func senseBadLUN() sense         { return sense{key: keyIllegalRequest, asc: 0x25} }
func senseRemovalBlocked() sense { return sense{key: keyIllegalRequest, asc: 0x53, ascq: 0x02} }
func senseWriteProtected() sense { return sense{key: keyDataProtect, asc: 0x27} }
func senseNoMedium() sense       { return sense{key: keyNotReady, asc: 0x3A} }
func senseBecomingReady() sense  { return sense{key: keyNotReady, asc: 0x04, ascq: 0x01} }
func senseMediumChanged() sense  { return sense{key: keyUnitAttention, asc: 0x28} }
func sensePowerOnReset() sense   { return sense{key: keyUnitAttention, asc: 0x29} }
func senseDataPhaseError() sense { return sense{key: keyAbortedCommand, asc: 0x4B} }
func senseWriteError(lba int64) sense {
	return sense{key: keyMediumError, asc: 0x0C, info: lba, valid: true}
}
func senseReadError(lba int64) sense {
	return sense{key: keyMediumError, asc: 0x11, info: lba, valid: true}
}

// fixedSenseLen is the length of fixed-format sense data with no
// additional bytes.
const fixedSenseLen = 18

// fixed encodes s in fixed format (response code 0x70, SPC-4 4.5.3).
func (s sense) fixed() []byte {
	b := make([]byte, fixedSenseLen)
	b[0] = 0x70
	// INFORMATION is 4 bytes in fixed format: an LBA past 2^32 cannot be
	// reported, so VALID stays 0 for it.
	if s.valid && s.info >= 0 && s.info <= 0xFFFFFFFF {
		b[0] |= 0x80
		binary.BigEndian.PutUint32(b[3:7], uint32(s.info))
	}
	b[2] = s.key & 0x0F
	b[7] = fixedSenseLen - 8 // additional sense length
	b[12], b[13] = s.asc, s.ascq
	return b
}
