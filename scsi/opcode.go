package scsi

import "fmt"

// Operation codes of the commands a writer needs (SPC-4, SBC-3).
const (
	OpTestUnitReady        = 0x00
	OpRequestSense         = 0x03
	OpInquiry              = 0x12
	OpModeSense6           = 0x1A
	OpModeSense10          = 0x5A
	OpStartStopUnit        = 0x1B
	OpPreventAllowRemoval  = 0x1E
	OpReadCapacity10       = 0x25
	OpRead10               = 0x28
	OpWrite10              = 0x2A
	OpSynchronizeCache10   = 0x35
	OpUnmap                = 0x42
	OpRead16               = 0x88
	OpWrite16              = 0x8A
	OpWriteSame16          = 0x93
	OpServiceActionIn16    = 0x9E
	ServiceActionReadCap16 = 0x10 // service action of OpServiceActionIn16
)

// VPD page codes requested with INQUIRY EVPD=1.
const (
	VPDSupportedPages = 0x00
	VPDUnitSerial     = 0x80
	VPDBlockLimits    = 0xB0
	// VPDProvisioning is the Logical Block Provisioning page (SBC-3
	// 6.6.4): whether the device unmaps, and how.
	VPDProvisioning = 0xB2
)

// Limits of the block counts and addresses the CDB formats can carry.
const (
	MaxBlocks10 = 0xFFFF     // READ(10)/WRITE(10) transfer length
	MaxLBA10    = 0xFFFFFFFF // READ(10)/WRITE(10) logical block address
	MaxBlocks16 = 0xFFFFFFFF // READ(16)/WRITE(16) transfer length
)

// OpName returns the conventional name of an operation code, for messages.
func OpName(op byte) string {
	switch op {
	case OpTestUnitReady:
		return "TEST UNIT READY"
	case OpRequestSense:
		return "REQUEST SENSE"
	case OpInquiry:
		return "INQUIRY"
	case OpModeSense6:
		return "MODE SENSE(6)"
	case OpModeSense10:
		return "MODE SENSE(10)"
	case OpStartStopUnit:
		return "START STOP UNIT"
	case OpPreventAllowRemoval:
		return "PREVENT ALLOW MEDIUM REMOVAL"
	case OpReadCapacity10:
		return "READ CAPACITY(10)"
	case OpRead10:
		return "READ(10)"
	case OpWrite10:
		return "WRITE(10)"
	case OpSynchronizeCache10:
		return "SYNCHRONIZE CACHE(10)"
	case OpRead16:
		return "READ(16)"
	case OpWrite16:
		return "WRITE(16)"
	case OpServiceActionIn16:
		return "READ CAPACITY(16)"
	case OpUnmap:
		return "UNMAP"
	case OpWriteSame16:
		return "WRITE SAME(16)"
	}
	return fmt.Sprintf("opcode 0x%02X", op)
}
