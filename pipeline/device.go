// Package pipeline is the write and verify engine: it moves an image stream
// onto a BlockDevice in large aligned transfers, filling the next buffer on
// one goroutine while another writes the previous one, and reads it back.
//
// The path of the bytes: a filler goroutine reads the decoded image into
// the buffers of a ring; the writer takes each filled buffer, sends it with
// WriteBlocks and gives it back to the ring. A verify runs the same driver
// the other way round: a block reader fills the ring with ReadBlocks and the
// comparison takes the buffers.
package pipeline

import (
	"context"
	"fmt"
)

// BlockDevice is the seam between the pipeline and whatever holds the blocks:
// a LUN of a USB reader spoken to over SCSI, the simulated reader, or a file
// or kernel block device.
//
// Buffers passed to ReadBlocks and WriteBlocks are whole blocks long.
//
// A device may offer more through the optional interfaces below, which the
// engine checks for as io.Copy checks for io.WriterTo: WriteProtector,
// TransferLimiter, BufferAllocator, and fmt.Stringer for its name. A wrapper
// that embeds a BlockDevice hides them, so the engine must be handed the
// device itself; a name for messages goes in WriteOptions.Name and
// VerifyOptions.Name instead.
type BlockDevice interface {
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

// WriteProtector is a device that knows whether its medium refuses writes
// (a card's lock switch, a read-only LUN). Write refuses such a medium
// before sending anything, with a *WriteProtectedError.
type WriteProtector interface {
	WriteProtected() bool
}

// TransferLimiter is a device that takes at most MaxTransfer blocks per
// command (0: no limit it knows of). Write and Verify lower their transfer
// size to it, so every ReadBlocks or WriteBlocks is one command.
type TransferLimiter interface {
	MaxTransfer() int64
}

// BufferAllocator is a device with memory it sends from and reads into
// without a copy (usbfs memory the kernel hands to the controller as it
// is). Write and Verify take their ring's buffers from it, once per call,
// so the filler reads the image straight into the memory WriteBlocks
// sends, and give them back with free, exactly once, when done.
//
// AllocBuffers returns count buffers of at least size bytes each; kind
// names the memory for reports ("usbfs zero-copy", "page-aligned"). The
// buffers stay valid until free is called.
type BufferAllocator interface {
	AllocBuffers(count, size int) (bufs [][]byte, kind string, free func(), err error)
}

// deviceName names a device in messages: name when the caller gave one,
// else the device's String method, else a generic phrase.
func deviceName(dev BlockDevice, name string) string {
	if name != "" {
		return name
	}
	if s, ok := dev.(fmt.Stringer); ok {
		return s.String()
	}
	return "the device"
}

// capacity is the medium's size in bytes.
func capacity(dev BlockDevice) int64 { return dev.BlockCount() * int64(dev.BlockSize()) }

// CheckFits refuses, before anything is written or read, an image of size
// bytes that cannot fit on dev, with a *CapacityError naming the device
// (name, or the device's own). Only an exact size refuses: a size that is a
// hint (gzip's ISIZE trailer, which a truncated or padded file makes up) or
// unknown (-1) passes, and Write then stops at the end of the medium.
func CheckFits(dev BlockDevice, name string, size int64, exact bool) error {
	if !exact || size < 0 {
		return nil
	}
	if c := capacity(dev); size > c {
		return &CapacityError{Device: deviceName(dev, name), ImageSize: size, Capacity: c}
	}
	return nil
}

// CheckWritable refuses a device whose medium says it is write-protected,
// with a *WriteProtectedError. A device that cannot tell passes.
func CheckWritable(dev BlockDevice, name string) error {
	if wp, ok := dev.(WriteProtector); ok && wp.WriteProtected() {
		return &WriteProtectedError{Device: deviceName(dev, name)}
	}
	return nil
}
