// Package pipeline is the write and verify engine: it moves an image stream
// onto a blockdev.Device in large aligned transfers, filling the next buffer
// on one goroutine while another writes the previous one, and reads it back.
//
// The path of the bytes: a filler goroutine reads the decoded image into
// the buffers of a ring; the writer takes each filled buffer, sends it with
// WriteBlocks and gives it back to the ring. A verify runs the same driver
// the other way round: a block reader fills the ring with ReadBlocks and the
// comparison takes the buffers.
//
// The engine looks for the device's optional interfaces (blockdev's
// WriteProtector, TransferLimiter, BufferAllocator, and fmt.Stringer for its
// name) on the device it is handed; a wrapper hides them, so a name for
// messages goes in WriteOptions.Name and VerifyOptions.Name instead.
package pipeline

import (
	"fmt"

	"github.com/usbflash/usbflash/blockdev"
)

// CheckFits refuses, before anything is written or read, an image of size
// bytes that cannot fit on dev, with a *CapacityError naming the device
// (name, or the device's own). Only an exact size refuses: a size that is a
// hint (gzip's ISIZE trailer, which a truncated or padded file makes up) or
// unknown (-1) passes, and Write then stops at the end of the medium.
func CheckFits(dev blockdev.Device, name string, size int64, exact bool) error {
	if !exact || size < 0 {
		return nil
	}
	if c := blockdev.Capacity(dev); size > c {
		return &CapacityError{Device: blockdev.Name(dev, name), ImageSize: size, Capacity: c}
	}
	return nil
}

// CheckWritable refuses, before anything is written, a device whose medium
// says it is write-protected, with an error naming the device (name, or
// the device's own) that wraps blockdev.ErrWriteProtected. A device that
// cannot tell passes.
func CheckWritable(dev blockdev.Device, name string) error {
	if wp, ok := dev.(blockdev.WriteProtector); ok && wp.WriteProtected() {
		return fmt.Errorf("%s is %w; nothing was written", blockdev.Name(dev, name), blockdev.ErrWriteProtected)
	}
	return nil
}
