// Package blockdev is the seam between what moves blocks (the write and
// verify engine, the reader benchmark, a group of cards) and what holds
// them (a LUN of a USB reader spoken to over SCSI, the simulated reader, a
// file or kernel block device), as io is to bufio: the interfaces, the one
// error every kind of device means by "this medium refuses writes", the
// facts every user of a device checks alike (facts.go), and nothing that
// does I/O.
//
// What it promises an importer: a device of its own that implements
// Device (and whichever optional interfaces it can) is driven by the
// engine, the group and the checks exactly as usbflash's own are; a
// refusal of writes is matched with errors.Is(err, ErrWriteProtected)
// whatever device made it, and a failure of the medium's own blocks with
// ErrBadBlock (MarkWriteProtected and MarkBadBlock mark a device's own
// errors so).
package blockdev

import (
	"context"
	"errors"
	"fmt"

	"github.com/usbflash/usbflash/internal/failure"
)

// Device is whatever holds the blocks.
//
// Buffers passed to ReadBlocks and WriteBlocks are whole blocks long.
//
// A device may offer more through the optional interfaces below, which
// users check for as io.Copy checks for io.WriterTo: WriteProtector,
// TransferLimiter, BufferAllocator, QueuedWriter, Ejector, and fmt.Stringer for its name.
// A wrapper that embeds a Device interface value hides them, so the
// engine must be handed the device itself; a name for messages is passed
// beside it instead (see Name).
type Device interface {
	// BlockSize is the logical block size in bytes.
	BlockSize() int
	// BlockCount is the number of logical blocks.
	BlockCount() int64
	// ReadBlocks reads len(p)/BlockSize() blocks starting at lba.
	ReadBlocks(ctx context.Context, lba int64, p []byte) error
	// WriteBlocks writes len(p)/BlockSize() blocks starting at lba.
	WriteBlocks(ctx context.Context, lba int64, p []byte) error
	// Sync makes written blocks durable (SYNCHRONIZE CACHE, fsync).
	Sync(ctx context.Context) error
}

// ErrWriteProtected is the one answer to "does this medium refuse
// writes?", whoever found out and however, so that a caller deciding what
// to tell the user (unlock the card, use another) asks one question
// instead of one per layer: errors.Is(err, ErrWriteProtected) holds for
// the write-protect bit seen before writing (a card's lock switch, a
// read-only LUN, a file or kernel device that refuses writes), for a DATA
// PROTECT sense on a WRITE, and for a write the kernel refuses as
// read-only (EROFS and the like). The errors that say so keep their own
// facts (the device's name, the sense data, the errno) and wrap this one.
var ErrWriteProtected = failure.New(failure.Refused, "write-protected")

// MarkWriteProtected returns err, a device's own report that its medium
// refuses writes (sense data, an errno), marked as write protection: its
// text is err's, and errors.Is finds ErrWriteProtected in it beside
// everything err wraps. A nil err stays nil.
func MarkWriteProtected(err error) error {
	if err == nil {
		return nil
	}
	return &markedError{err, ErrWriteProtected}
}

// markedError is err, also wrapping mark (one of the package's errors).
type markedError struct{ err, mark error }

func (e *markedError) Error() string   { return e.err.Error() }
func (e *markedError) Unwrap() []error { return []error{e.err, e.mark} }

// Class is the mark's: write protection is a refusal whatever the device
// said it with.
func (e *markedError) Class() failure.Class { return failure.Of(e.mark) }

// ErrBadBlock is a read or write the medium itself failed for the blocks
// it was asked for, while the device went on answering: a MEDIUM ERROR
// sense (an unrecovered read, a write fault), or the kernel's EIO for a
// block device. It says nothing of other blocks: a caller that must tell
// a card with a few bad blocks from one whose end cannot be read at all
// (a counterfeit whose flash stops short of the capacity it claims) reads
// others. The errors that say so keep their own facts and wrap this one.
var ErrBadBlock = failure.New(failure.Device, "bad block")

// MarkBadBlock returns err, a device's own report that the medium failed
// the blocks of a command, marked as such: its text is err's, and
// errors.Is finds ErrBadBlock in it beside everything err wraps. A nil err
// stays nil.
func MarkBadBlock(err error) error {
	if err == nil {
		return nil
	}
	return &markedError{err, ErrBadBlock}
}

// WriteProtector is a device that knows whether its medium refuses writes
// (a card's lock switch, a read-only LUN, a file the process may not
// write). Writers refuse such a medium before sending anything, with an
// error wrapping ErrWriteProtected.
type WriteProtector interface {
	WriteProtected() bool
}

// TransferLimiter is a device that takes at most MaxTransfer blocks per
// command (0: no limit it knows of). Callers lower their transfer size to
// it, so every ReadBlocks or WriteBlocks is one command.
type TransferLimiter interface {
	MaxTransfer() int64
}

// QueuedWriter is a device that keeps several WRITEs in flight at once (a
// UAS reader with a queue depth above 1). The engine hands it up to
// WriteQueueDepth full transfers that follow each other on the medium in
// one WriteBlocksQueued, each its own command; the call returns when all
// are written, so every promise of WriteBlocks holds (an error names the
// failing command's blocks, the buffers are the caller's again).
type QueuedWriter interface {
	WriteQueueDepth() int
	WriteBlocksQueued(ctx context.Context, lba int64, bufs [][]byte) error
}

// BlockRanger is an error that names the blocks of the command that
// failed, so that a failure of a WriteBlocksQueued is reported at that
// command's blocks rather than the whole call's.
type BlockRanger interface {
	BlockRange() (lba, blocks int64)
}

// BufferAllocator is a device with memory it sends from and reads into
// without a copy (usbfs memory the kernel hands to the controller as it
// is). The engine takes its buffers from it, once per write or verify, so
// the decoder writes the image straight into the memory WriteBlocks
// sends, and gives them back with free, exactly once, when done.
//
// AllocBuffers returns count buffers of at least size bytes each; kind
// names the memory for reports ("usbfs zero-copy", "page-aligned"). The
// buffers stay valid until free is called.
type BufferAllocator interface {
	AllocBuffers(count, size int) (bufs [][]byte, kind string, free func(), err error)
}

// Unmapper is a device that can tell its medium that blocks hold nothing
// any more (SCSI UNMAP, or WRITE SAME with its UNMAP bit), so that its
// controller may erase them, spare blocks included. UnmapMethod names how,
// "" when the device offers neither (most card readers), and may ask the
// device; Unmap returns an error matching ErrUnmapRefused when the device
// refused the command.
type Unmapper interface {
	UnmapMethod(ctx context.Context) (string, error)
	Unmap(ctx context.Context, lba, blocks int64) error
}

// ErrUnmapRefused: a device that says it unmaps refused to (a reader that
// passes the command on to a card that does not).
var ErrUnmapRefused = errors.New("unmap refused by the device")

// Ejector is a device whose medium can be ejected when the work is done

// (START STOP UNIT on a USB reader), so a person can pull the card without
// the system complaining. A file has nothing to eject and does not
// implement it.
type Ejector interface {
	Eject(ctx context.Context) error
}

// Name names a device in messages: name when the caller gave one, else the
// device's String method, else a generic phrase. Callers that wrap a
// device pass the name of what they wrap, since the wrapper hides its
// String.
func Name(dev Device, name string) string {
	if name != "" {
		return name
	}
	if s, ok := dev.(fmt.Stringer); ok {
		return s.String()
	}
	return "the device"
}

// Capacity is the medium's size in bytes.
func Capacity(dev Device) int64 { return dev.BlockCount() * int64(dev.BlockSize()) }

// Extent is the bytes [Off, Off+Len) of an image, which are also the
// bytes [Off, Off+Len) of the device it is written to from block 0: what a
// block map or zero detection chooses to write, and what a verify reads
// back.
type Extent struct {
	Off, Len int64
}

// End is the first byte after e.
func (e Extent) End() int64 { return e.Off + e.Len }

// IOCounts are what a device asked of its host to move its commands,
// counted by the device itself as it works: what a write costs in units
// that carry from one host to another (an emulator's seconds do not; its
// system calls and wake-ups per command do). Each count is since the
// device was opened; Sub gives a phase's share.
type IOCounts struct {
	// Commands are the commands sent to the device (each attempt of a
	// command that was tried again counts).
	Commands int64
	// Submits are the transfers handed to the kernel (usbfs:
	// USBDEVFS_SUBMITURB).
	Submits int64
	// Reaps are the calls that took a completed transfer back or found
	// none yet (usbfs: USBDEVFS_REAPURB and REAPURBNDELAY).
	Reaps int64
	// Waits are the times the device slept until a transfer completed
	// (parked in Go's poller, or in poll(2)): each is a wake-up.
	Waits int64
	// Other are the device's other system calls on its way: cancelled
	// transfers, control requests, cleared halts.
	Other int64
}

// Sub is c less o, for the counts of what happened between two readings.
func (c IOCounts) Sub(o IOCounts) IOCounts {
	return IOCounts{Commands: c.Commands - o.Commands, Submits: c.Submits - o.Submits, Reaps: c.Reaps - o.Reaps,
		Waits: c.Waits - o.Waits, Other: c.Other - o.Other}
}

// Add is c plus o (the counts of several devices, or of several parts).
func (c IOCounts) Add(o IOCounts) IOCounts {
	return IOCounts{Commands: c.Commands + o.Commands, Submits: c.Submits + o.Submits, Reaps: c.Reaps + o.Reaps,
		Waits: c.Waits + o.Waits, Other: c.Other + o.Other}
}

// Syscalls is the system calls the counts stand for: every submit, reap
// and other call, and one for each wait (the call the waiting thread
// sleeps in).
func (c IOCounts) Syscalls() int64 { return c.Submits + c.Reaps + c.Waits + c.Other }

// IOCounter is a device that counts what it asks of its host (IOCounts).
// The counts are plain integers of the goroutine that does the I/O, so
// counting costs the hot path nothing; IOCounts waits for a command in
// flight to end and is meant to be read between phases.
type IOCounter interface {
	IOCounts() IOCounts
}
