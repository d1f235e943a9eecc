// Package pipeline moves an OS image from its source file onto a block
// device: it sniffs and decodes the image, fills large aligned buffers on one
// goroutine while another writes the previous buffer, and verifies the result.
package pipeline

import "context"

// BlockDevice is the seam between the pipeline and whatever holds the blocks:
// a LUN of a USB reader spoken to over SCSI, the simulated reader, or a file
// or kernel block device.
//
// Buffers passed to ReadBlocks and WriteBlocks are whole blocks long.
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
