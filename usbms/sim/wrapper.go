package sim

import "encoding/binary"

// Wrapper sizes and signatures (BOT 1.0, 5.1 and 5.2).
const (
	cbwLen       = 31
	cswLen       = 13
	cbwSignature = 0x43425355 // "USBC"
	cswSignature = 0x53425355 // "USBS"
)

// cbw is a decoded Command Block Wrapper.
type cbw struct {
	tag    uint32
	length uint32 // dCBWDataTransferLength
	in     bool   // bmCBWFlags bit 7
	lun    int
	cdb    []byte // bCBWCBLength bytes
}

// parseCBW decodes b and reports whether it is valid and meaningful (BOT
// 6.2): exactly 31 bytes, the signature, reserved LUN bits clear, a CDB
// length of 1 to 16. The device treats anything else as a protocol error.
func parseCBW(b []byte) (cbw, bool) {
	if len(b) != cbwLen || binary.LittleEndian.Uint32(b[0:4]) != cbwSignature {
		return cbw{}, false
	}
	cbLen := int(b[14])
	if b[13]&0xF0 != 0 || b[14]&0xE0 != 0 || cbLen < 1 || cbLen > 16 {
		return cbw{}, false
	}
	return cbw{
		tag:    binary.LittleEndian.Uint32(b[4:8]),
		length: binary.LittleEndian.Uint32(b[8:12]),
		in:     b[12]&0x80 != 0,
		lun:    int(b[13] & 0x0F),
		cdb:    append([]byte(nil), b[15:15+cbLen]...),
	}, true
}

// putCSW encodes a Command Status Wrapper into b, which is at least 13
// bytes long.
func putCSW(b []byte, signature, tag, residue uint32, status byte) {
	binary.LittleEndian.PutUint32(b[0:4], signature)
	binary.LittleEndian.PutUint32(b[4:8], tag)
	binary.LittleEndian.PutUint32(b[8:12], residue)
	b[12] = status
}
