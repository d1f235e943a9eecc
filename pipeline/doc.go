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
// messages goes in WriteOptions.Name and VerifyOptions.Name instead. What is
// true of a device whatever moves its blocks (whether an image fits, whether
// it may be written, how large a transfer it takes) is blockdev's.
//
// What it promises an importer, whatever the device (a usbms.LUN, a
// filedev.Device, a fanout.Group, one of its own):
//
//   - Nothing is written before the checks that can fail early have
//     passed (write protection, an exact image size that does not fit);
//     the first transfer is zeroed first and written last, so an
//     interrupted write leaves a card that boots neither the old image
//     nor part of the new one.
//   - Memory is bounded and allocated once per write: the ring's buffers
//     (BufferMemory says how much), the device's own where it offers them
//     (blockdev.BufferAllocator); nothing per transfer.
//   - A cancelled context stops the write after the command in flight,
//     syncs, and returns a *CancelledError; Write returns only after its
//     filling goroutine has stopped reading the image.
//   - Errors are typed and say where: *DeviceError (the device failed, at
//     which blocks), *VerifyError (the first differing byte), *ImageSizeError,
//     *ImageCheckError, *CancelledError, blockdev's *CapacityError and
//     ErrWriteProtected, taken apart with errors.As and errors.Is.
package pipeline
