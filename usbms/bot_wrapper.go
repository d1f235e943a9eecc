package usbms

import (
	"encoding/binary"
	"fmt"
)

// Bulk-Only Transport wrapper layout (BOT 1.0, 5.1 and 5.2).
const (
	cbwLen       = 31
	cswLen       = 13
	cbwSignature = 0x43425355 // "USBC"
	cswSignature = 0x53425355 // "USBS"
	cbwFlagIn    = 0x80
	maxCDBLen    = 16
)

// CSW status values.
const (
	statusPassed = 0
	statusFailed = 1
	statusPhase  = 2
)

// Direction is the direction of a command's data phase.
type Direction uint8

// Data phase directions.
const (
	NoData  Direction = iota // no data phase
	DataIn                   // device to host
	DataOut                  // host to device
)

func (d Direction) String() string {
	switch d {
	case DataIn:
		return "in"
	case DataOut:
		return "out"
	}
	return "none"
}

// encodeCBW fills b with a Command Block Wrapper. It writes every byte, so b
// can be reused from the previous command without clearing.
func encodeCBW(b *[cbwLen]byte, tag uint32, lun uint8, cdb []byte, dir Direction, length uint32) {
	binary.LittleEndian.PutUint32(b[0:4], cbwSignature)
	binary.LittleEndian.PutUint32(b[4:8], tag)
	binary.LittleEndian.PutUint32(b[8:12], length)
	b[12] = 0
	if dir == DataIn {
		b[12] = cbwFlagIn
	}
	b[13] = lun & 0x0F
	b[14] = byte(len(cdb))
	clear(b[15:])
	copy(b[15:], cdb)
}

// csw is a decoded Command Status Wrapper.
type csw struct {
	sig     uint32
	tag     uint32
	residue uint32
	status  uint8
}

// cswCheck is what a CSW must match: the command's tag and length, and
// the signature the device uses.
type cswCheck struct {
	tag, length uint32
	// sig is the signature the device signs with: "USBS", or the one it
	// used on its first CSW.
	sig uint32
	// anySig takes any signature: the device's first CSW, whose
	// signature is then learned, as Linux's usb-storage does.
	anySig bool
	// anyTag takes any tag (QuirkIgnoreTag).
	anyTag bool
}

// parseCSW decodes a CSW and applies the checks of BOT 6.3 as Linux's
// usb-storage does: valid (13 bytes, the device's signature, the tag) and
// a known status; either failure calls for reset recovery and wraps
// ErrInvalidCSW. A residue larger than the data length is clamped to it,
// not refused: some readers report one (a residue on TEST UNIT READY).
func parseCSW(b []byte, want cswCheck) (csw, error) {
	if len(b) != cswLen {
		return csw{}, fmt.Errorf("CSW is %d bytes, want %d: %w", len(b), cswLen, ErrInvalidCSW)
	}
	sig := binary.LittleEndian.Uint32(b[0:4])
	if sig != want.sig && sig != cswSignature && !want.anySig {
		return csw{}, fmt.Errorf("CSW signature is 0x%08X, want 0x%08X: %w", sig, want.sig, ErrInvalidCSW)
	}
	c := csw{
		sig:     sig,
		tag:     binary.LittleEndian.Uint32(b[4:8]),
		residue: binary.LittleEndian.Uint32(b[8:12]),
		status:  b[12],
	}
	if c.tag != want.tag && !want.anyTag {
		return csw{}, fmt.Errorf("CSW tag is 0x%08X, want 0x%08X: %w", c.tag, want.tag, ErrInvalidCSW)
	}
	if c.status > statusPhase {
		return csw{}, fmt.Errorf("CSW status is %d, want 0 to 2: %w", c.status, ErrInvalidCSW)
	}
	c.residue = min(c.residue, want.length)
	return c, nil
}

// validBytes is how many bytes of the data phase count: the device's
// residue and a short transfer can each say less was moved, and the smaller
// claim wins, as in Linux's usb-storage. The residue is at most length
// (parseCSW clamps it).
func validBytes(length uint32, moved int, residue uint32) int {
	return min(moved, int(length-min(residue, length)))
}
