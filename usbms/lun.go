package usbms

import (
	"time"

	"usbflash/scsi"
)

// Defaults of LUNOptions.
const (
	DefaultReadyWait    = 10 * time.Second
	DefaultRetryBackoff = 100 * time.Millisecond
	DefaultRetries      = 3
)

// LUNOptions tunes a LUN. The zero value gives the defaults.
type LUNOptions struct {
	// ReadyWait bounds how long a command waits, in RetryBackoff steps,
	// while the unit reports it is becoming ready.
	ReadyWait time.Duration
	// RetryBackoff is the pause between retries on NOT READY.
	RetryBackoff time.Duration
	// Retries is how many times one command is repeated after a UNIT
	// ATTENTION, ABORTED COMMAND or an incomplete transfer.
	Retries int
}

func (o LUNOptions) withDefaults() LUNOptions {
	if o.ReadyWait <= 0 {
		o.ReadyWait = DefaultReadyWait
	}
	if o.RetryBackoff <= 0 {
		o.RetryBackoff = DefaultRetryBackoff
	}
	if o.Retries <= 0 {
		o.Retries = DefaultRetries
	}
	return o
}

// LUN is one logical unit of a mass-storage device (one slot of a card
// reader), opened for block I/O. It implements pipeline.BlockDevice.
// Its methods may be called from one goroutine at a time.
type LUN struct {
	t    *Transport
	lun  int
	opts LUNOptions

	inquiry   scsi.InquiryData
	serial    string
	limits    scsi.BlockLimits
	blockSize int
	blocks    int64
	wp        bool

	// no16 is set once the device rejects READ(16)/WRITE(16) as an
	// unknown opcode; later commands are split into (10) variants.
	no16 bool
	// cdb holds the CDB of the READ or WRITE in flight.
	cdb scsi.CDB
	// wrote is set by the first successful WRITE: from then on, a medium
	// change is fatal instead of retried.
	wrote bool
	// changed is set when the medium changed after writing began: every
	// later READ and WRITE fails, since the card in the slot is not the one
	// the earlier blocks went to.
	changed bool
}

// Number returns the LUN number.
func (l *LUN) Number() int { return l.lun }

// BlockSize returns the logical block size in bytes.
func (l *LUN) BlockSize() int { return l.blockSize }

// BlockCount returns the number of logical blocks.
func (l *LUN) BlockCount() int64 { return l.blocks }

// Inquiry returns the standard INQUIRY data: device type, removable bit,
// vendor, product and revision.
func (l *LUN) Inquiry() scsi.InquiryData { return l.inquiry }

// Serial returns the unit serial number from VPD page 0x80, or "" when the
// device offers none.
func (l *LUN) Serial() string { return l.serial }

// WriteProtected reports whether MODE SENSE said the medium is
// write-protected. It is false when the device would not say.
func (l *LUN) WriteProtected() bool { return l.wp }

// MaxTransfer returns the largest transfer in blocks the device accepts in
// one command (VPD block limits), or 0 when unknown.
func (l *LUN) MaxTransfer() int64 { return int64(l.limits.MaxTransfer) }

// OptimalTransfer returns the transfer length in blocks the device prefers,
// or 0 when unknown.
func (l *LUN) OptimalTransfer() int64 { return int64(l.limits.OptimalTransfer) }
