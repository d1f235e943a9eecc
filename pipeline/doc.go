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
package pipeline
