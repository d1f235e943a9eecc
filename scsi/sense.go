package scsi

import (
	"encoding/binary"
	"fmt"

	"github.com/usbflash/usbflash/internal/failure"
)

// SenseKey is the coarse class of a sense condition (SPC-4 table 27).
type SenseKey uint8

// Sense keys.
const (
	NoSense        SenseKey = 0x0
	RecoveredError SenseKey = 0x1
	NotReady       SenseKey = 0x2
	MediumError    SenseKey = 0x3
	HardwareError  SenseKey = 0x4
	IllegalRequest SenseKey = 0x5
	UnitAttention  SenseKey = 0x6
	DataProtect    SenseKey = 0x7
	BlankCheck     SenseKey = 0x8
	VendorSpecific SenseKey = 0x9
	CopyAborted    SenseKey = 0xA
	AbortedCommand SenseKey = 0xB
	VolumeOverflow SenseKey = 0xD
	Miscompare     SenseKey = 0xE
	Completed      SenseKey = 0xF
)

func (k SenseKey) String() string {
	switch k {
	case NoSense:
		return "NO SENSE"
	case RecoveredError:
		return "RECOVERED ERROR"
	case NotReady:
		return "NOT READY"
	case MediumError:
		return "MEDIUM ERROR"
	case HardwareError:
		return "HARDWARE ERROR"
	case IllegalRequest:
		return "ILLEGAL REQUEST"
	case UnitAttention:
		return "UNIT ATTENTION"
	case DataProtect:
		return "DATA PROTECT"
	case BlankCheck:
		return "BLANK CHECK"
	case VendorSpecific:
		return "VENDOR SPECIFIC"
	case CopyAborted:
		return "COPY ABORTED"
	case AbortedCommand:
		return "ABORTED COMMAND"
	case VolumeOverflow:
		return "VOLUME OVERFLOW"
	case Miscompare:
		return "MISCOMPARE"
	case Completed:
		return "COMPLETED"
	}
	return fmt.Sprintf("SENSE KEY 0x%X", uint8(k))
}

// Additional sense codes a writer tells apart.
const (
	ASCWriteError        = 0x0C
	ASCNotReady          = 0x04 // LOGICAL UNIT NOT READY; ASCQ 01 = becoming ready
	ASCUnrecoveredRead   = 0x11
	ASCInvalidOpcode     = 0x20
	ASCLBAOutOfRange     = 0x21
	ASCInvalidFieldInCDB = 0x24
	ASCWriteProtected    = 0x27
	ASCMediumChanged     = 0x28
	ASCResetOccurred     = 0x29
	ASCMediumNotPresent  = 0x3A
	ASCQBecomingReady    = 0x01
)

// Sense data layout.
const (
	senseFixedCurrent      = 0x70
	senseFixedDeferred     = 0x71
	senseDescCurrent       = 0x72
	senseDescDeferred      = 0x73
	descTypeInformation    = 0x00
	descInformationMinimum = 12 // type, length, VALID, reserved, 8-byte INFORMATION
)

// SenseError is the sense data of a failed command, as an error.
type SenseError struct {
	Key         SenseKey
	ASC         uint8
	ASCQ        uint8
	Valid       bool   // Information holds an address (often the failing LBA)
	Information uint64 // INFORMATION field; meaningful only when Valid
	Deferred    bool   // the condition belongs to an earlier command
}

// ParseSense decodes sense data in fixed (0x70/0x71) or descriptor
// (0x72/0x73) format. Devices often send fewer bytes than the additional
// length claims; missing fields decode as zero.
func ParseSense(b []byte) (*SenseError, error) {
	if len(b) < 1 {
		return nil, short("sense data", len(b), 1)
	}
	switch code := b[0] & 0x7F; code {
	case senseFixedCurrent, senseFixedDeferred:
		return parseFixedSense(b), nil
	case senseDescCurrent, senseDescDeferred:
		return parseDescriptorSense(b), nil
	default:
		return nil, fmt.Errorf("scsi: sense response code 0x%02X is neither fixed nor descriptor format: %w", code, ErrMalformed)
	}
}

func at(b []byte, i int) byte {
	if i < len(b) {
		return b[i]
	}
	return 0
}

func parseFixedSense(b []byte) *SenseError {
	e := &SenseError{
		Key:      SenseKey(at(b, 2) & 0x0F),
		ASC:      at(b, 12),
		ASCQ:     at(b, 13),
		Deferred: b[0]&0x7F == senseFixedDeferred,
	}
	if b[0]&0x80 != 0 && len(b) >= 7 {
		e.Valid = true
		e.Information = uint64(binary.BigEndian.Uint32(b[3:7]))
	}
	return e
}

func parseDescriptorSense(b []byte) *SenseError {
	e := &SenseError{
		Key:      SenseKey(at(b, 1) & 0x0F),
		ASC:      at(b, 2),
		ASCQ:     at(b, 3),
		Deferred: b[0]&0x7F == senseDescDeferred,
	}
	if len(b) < 8 {
		return e
	}
	end := min(8+int(b[7]), len(b))
	for d := b[8:end]; len(d) >= 2; {
		n := 2 + int(d[1])
		if n > len(d) {
			break
		}
		if d[0] == descTypeInformation && n >= descInformationMinimum {
			e.Valid = d[2]&0x80 != 0
			e.Information = binary.BigEndian.Uint64(d[4:12])
		}
		d = d[n:]
	}
	return e
}

// Action is what the transport layer does about a failed command.
type Action int

const (
	// Fail: report the error; repeating the command will not help.
	Fail Action = iota
	// Retry: repeat the command now, a bounded number of times.
	Retry
	// Wait: the unit is getting ready; repeat after a short back-off.
	Wait
	// Accept: the command did what it was asked; the sense only says
	// how (RECOVERED ERROR).
	Accept
)

func (a Action) String() string {
	switch a {
	case Retry:
		return "retry"
	case Wait:
		return "wait"
	case Accept:
		return "accept"
	}
	return "fail"
}

// Action classifies the condition as Linux's SCSI layer does for a USB
// disk. A UNIT ATTENTION is a one-off report of an event (reset, medium
// change, even medium inserted: QEMU says 6/3A once after a card goes in)
// and the repeated command tells the real state. RECOVERED ERROR means the
// command succeeded. HARDWARE ERROR (sd retries it on every USB disk), a
// MEDIUM ERROR other than an unrecovered read, a missing address mark or a
// record not found, and a failure with empty sense data (NO SENSE) are
// repeated. NOT READY while the unit becomes ready, formats, or is in
// another passing state is waited out. Callers that have already written
// to the medium must not repeat after a medium change (see IsMediumSwap),
// since the card may be another one.
func (e *SenseError) Action() Action {
	switch e.Key {
	case RecoveredError:
		return Accept
	case UnitAttention, AbortedCommand, HardwareError, NoSense:
		return Retry
	case MediumError:
		switch e.ASC {
		case ASCUnrecoveredRead, ascAddressMarkNotFound, ascRecordNotFound:
			return Fail
		}
		return Retry
	case NotReady:
		if e.ASC == ASCNotReady && passingNotReady(e.ASCQ) {
			return Wait
		}
	}
	return Fail
}

// Additional sense codes of MEDIUM ERROR that Linux does not repeat.
const (
	ascAddressMarkNotFound = 0x13
	ascRecordNotFound      = 0x14
)

// passingNotReady reports whether LOGICAL UNIT NOT READY with this ASCQ is
// a state that passes by itself: becoming ready, a format, rebuild,
// recalculation, operation, long write or self test in progress, notify
// required, space allocation, START STOP UNIT, sanitize or configuration
// in progress (the states Linux waits out during I/O).
func passingNotReady(ascq uint8) bool {
	switch ascq {
	case 0x01, 0x04, 0x05, 0x06, 0x07, 0x08, 0x09, 0x11, 0x14, 0x1A, 0x1B, 0x1D:
		return true
	}
	return false
}

// NeedsStart reports whether err is NOT READY of a kind a START STOP UNIT
// (start) may end, as Linux's sd sends one for when a disk is attached:
// any NOT READY but no medium, manual intervention required, standby,
// unavailable and sanitize in progress.
func NeedsStart(err error) bool {
	return senseIs(err, func(e *SenseError) bool {
		if e.Key != NotReady || e.ASC == ASCMediumNotPresent {
			return false
		}
		if e.ASC == ASCNotReady {
			switch e.ASCQ {
			case 0x03, 0x0B, 0x0C, 0x1B:
				return false
			}
		}
		return true
	})
}

// Error says in words what the condition is, for the common ones, and
// always gives the raw key/ASC/ASCQ. It states facts only: what to do about
// a condition is for the program's user interface to say.
func (e *SenseError) Error() string {
	code := fmt.Sprintf("sense %X/%02X/%02X", uint8(e.Key), e.ASC, e.ASCQ)
	if e.Valid {
		code += fmt.Sprintf(", information %d", e.Information)
	}
	return e.sentence() + " (" + code + ")"
}

// Class is Device: the reader or the card answered a command with a
// failure. (A write-protected medium is marked as such above it.)
func (e *SenseError) Class() failure.Class { return failure.Device }

func (e *SenseError) sentence() string {
	k, asc, ascq := e.Key, e.ASC, e.ASCQ
	switch {
	case asc == ASCMediumNotPresent && (k == NotReady || k == UnitAttention):
		return "no medium present"
	case k == NotReady && asc == ASCNotReady && ascq == ASCQBecomingReady:
		return "medium is becoming ready"
	case k == NotReady:
		return "unit not ready"
	case k == UnitAttention && asc == ASCMediumChanged:
		return "medium may have changed: the card was removed or swapped"
	case k == UnitAttention && asc == ASCResetOccurred:
		return "device was reset"
	case k == UnitAttention:
		return "unit attention"
	case k == DataProtect && asc == ASCWriteProtected:
		return "medium is write-protected"
	case k == DataProtect:
		return "data protected: the device refuses to write"
	case k == IllegalRequest && asc == ASCLBAOutOfRange:
		return "logical block address out of range: the card may be smaller than reported, or was swapped"
	case k == IllegalRequest && asc == ASCInvalidOpcode:
		return "command not supported by the device"
	case k == IllegalRequest && asc == ASCInvalidFieldInCDB:
		return "invalid field in command: the device rejects a parameter"
	case k == IllegalRequest:
		return "illegal request"
	case k == MediumError && asc == ASCWriteError:
		return "write error: the card is failing"
	case k == MediumError && asc == ASCUnrecoveredRead:
		return "unrecovered read error: the card is failing"
	case k == MediumError:
		return "medium error: the card is failing"
	case k == HardwareError:
		return "hardware error in the reader or card"
	case k == AbortedCommand:
		return "command aborted by the device"
	case k == NoSense:
		return "command failed without sense data"
	}
	return "command failed: " + k.String()
}
