// Package pipeline is the write and verify engine: it moves an image stream
// onto a BlockDevice in large aligned transfers, filling the next buffer on
// one goroutine while another writes the previous one, and reads it back.
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
