package usbms

import (
	"fmt"

	"github.com/usbflash/usbflash/internal/failure"
	"github.com/usbflash/usbflash/pipeline/blockdev"
	"github.com/usbflash/usbflash/scsi"
)

// Errors of the transport, matched with errors.Is.
var (
	// ErrInvalidCSW means a Command Status Wrapper failed the BOT validity
	// or meaningfulness checks.
	ErrInvalidCSW = failure.New(failure.Device, "invalid command status wrapper")
	// ErrPhaseError means the device answered a command with status 2,
	// phase error.
	ErrPhaseError = failure.New(failure.Device, "phase error")
	// ErrIncomplete means a command passed but moved fewer bytes than asked.
	ErrIncomplete = failure.New(failure.Device, "device moved fewer bytes than asked without reporting an error")
	// ErrMediumChanged means the medium changed after blocks were written,
	// so the write went to two cards or was cut short.
	ErrMediumChanged = failure.New(failure.Device, "medium changed after writing began")
	// ErrRecoveryFailed means a command kept failing through the whole
	// recovery ladder (Bulk-Only resets, then a port reset).
	ErrRecoveryFailed = failure.New(failure.Device, "the reader did not recover")
	// ErrNotReady means the unit kept saying it is becoming ready for
	// longer than LUNOptions.ReadyWait.
	ErrNotReady = failure.New(failure.Device, "still not ready")
	// ErrCapacityOffByOne means the reader refused the last block of the
	// capacity it reported as out of range: it may report the block count
	// where the last address belongs (Linux's FIX_CAPACITY readers).
	ErrCapacityOffByOne = failure.New(failure.Device, "its capacity may be one block too many")
	// ErrInitialRead10 means the reader called blocks inside the medium
	// out of range, block 0 among them when the LUN was opened: it fails
	// READ(10)s after a card goes in (Linux's INITIAL_READ10 readers).
	ErrInitialRead10 = failure.New(failure.Device, "it fails READ(10)s after a card goes in")
)

// CommandError is the error of one SCSI command on a LUN. Blocks is zero for
// commands that address no blocks.
type CommandError struct {
	Op     string // command name, e.g. "WRITE(10)"
	Device string // device name given in TransportOptions
	LUN    int
	LBA    int64 // first block of the failing command
	Blocks int64 // blocks the failing command covered
	Err    error // *scsi.SenseError (wrapped with blockdev.ErrWriteProtected when it says so), or a transport error
}

func (e *CommandError) Error() string {
	where := fmt.Sprintf("%s LUN %d", e.Device, e.LUN)
	if e.Blocks > 0 {
		where += fmt.Sprintf(", LBA %d-%d", e.LBA, e.LBA+e.Blocks-1)
	}
	return fmt.Sprintf("%s on %s: %v", e.Op, where, e.Err)
}

// Class is the cause's (a write-protected card is a refusal, a
// cancellation an interruption), else Device.
func (e *CommandError) Class() failure.Class { return failure.Within(failure.Device, e.Err) }

func (e *CommandError) Unwrap() error { return e.Err }

// BlockRange implements blockdev.BlockRanger: the failing command's blocks.
func (e *CommandError) BlockRange() (lba, blocks int64) { return e.LBA, e.Blocks }

// markMedium marks err as write protection when its sense data says
// the medium is write-protected (DATA PROTECT, ASC 27h: any ASCQ, hardware
// or software protection alike), as when the lock switch moved after MODE
// SENSE was asked or the reader would not answer MODE SENSE: it reads as
// the sense does, errors.As still finds the *scsi.SenseError, and
// errors.Is finds blockdev.ErrWriteProtected as in every other report of
// write protection.
//
// A failure of the command's blocks that the device reported, the cases
// the kernel hands up as EIO (what f3probe and every tool on a block
// device sees), is marked as blockdev.ErrBadBlock the same way: a MEDIUM
// ERROR, a HARDWARE ERROR, and ABORTED COMMAND "I/O process terminated"
// (00/06), which is what QEMU's emulated disks report when their backing
// store fails a read or write (../shared/QEMU.md).
func markMedium(err error) error {
	se, ok := scsi.AsSense(err)
	switch {
	case !ok:
	case se.Key == scsi.DataProtect && se.ASC == scsi.ASCWriteProtected:
		return blockdev.MarkWriteProtected(err)
	case se.Key == scsi.MediumError, se.Key == scsi.HardwareError,
		se.Key == scsi.AbortedCommand && se.ASC == 0x00 && se.ASCQ == ascqIOProcessTerminated:
		return blockdev.MarkBadBlock(err)
	}
	return err
}

// ascqIOProcessTerminated with ASC 00 is I/O PROCESS TERMINATED.
const ascqIOProcessTerminated = 0x06

// detailError replaces the message of err with msg, keeping err in the chain
// for errors.Is and errors.As.
type detailError struct {
	msg string
	err error
}

func (e *detailError) Error() string { return e.msg }
func (e *detailError) Unwrap() error { return e.err }
