package pipeline

import (
	"context"
	"fmt"
	"io"
	"time"

	"github.com/usbflash/usbflash/pipeline/blockdev"
)

// Defaults for WriteOptions, from the benchmarks in bench_test.go. With
// 1 ms per command on a 40 MB/s link, 1 MiB commands keep the link about
// 94% busy (128 KiB: 63%, 4 MiB: 98%) while the fixed cost of the held first
// transfer and the memory stay small. Four buffers let a bursty decoder run
// ahead: 19% faster than two, and eight gain nothing more.
const (
	DefaultTransferSize = 1 << 20
	DefaultBuffers      = 4
)

// autoRingMemory is what BuffersFor lets the cycling buffers take: with
// them all in usbfs memory, the held first transfer among them, and the
// small commands in flight, it stays inside the 16 MiB that Linux grants
// usbfs by default (usbfs_memory_mb), so that up to 4 MiB transfers every
// cycling buffer is sent without a copy. (Four 4 MiB buffers and the two
// extra did not fit: the kernel refused the memory and copied every
// transfer, which made 4 MiB transfers slower than 1 MiB ones.)
const autoRingMemory = 12 << 20

// BuffersFor is the default buffer count for a transfer size:
// DefaultBuffers up to 2 MiB transfers, fewer (at least 2) for larger
// ones, which hold as much image each.
func BuffersFor(transferSize int) int {
	return max(2, min(DefaultBuffers, autoRingMemory/max(transferSize, 1)-1))
}

// BufferMemory is the memory a write with these sizes allocates.
func BufferMemory(transferSize, buffers int) int64 {
	return (int64(buffers) + 2) * int64(transferSize)
}

// HashAlg is the hash Write computes over the decoded image.
type HashAlg string

// Hash algorithms for WriteOptions.HashAlg.
const (
	HashSHA256 HashAlg = "sha256"
	HashNone   HashAlg = "none"
)

// Bound names the side of a write that was busy longer.
type Bound string

// Sides reported in WriteResult.Bound.
const (
	BoundDecoder Bound = "decoder" // reading (decoding) and hashing the image
	BoundDevice  Bound = "device"  // WriteBlocks
)

// WriteOptions tune Write. The zero value is valid.
type WriteOptions struct {
	// Name names the device in errors; empty: its String method, if any.
	Name string
	// TransferSize is the bytes per WRITE command, a multiple of the
	// device's block size. 0 means DefaultTransferSize. It is lowered to
	// what a TransferLimiter device takes.
	TransferSize int
	// Buffers is how many buffers cycle between filler and writer, at
	// least 2. 0 means BuffersFor(TransferSize). Two more are allocated: the held
	// first transfer and a zero buffer.
	Buffers int
	// ExpectedSize is the decoded image size when the container records it
	// exactly; -1 (or 0, so the zero value is safe) when unknown or only a
	// hint. Known and larger than the medium: nothing is written. Known and
	// the stream is longer or shorter: *ImageSizeError.
	ExpectedSize int64
	// Progress, when set, is called from the writing goroutine at most
	// about 4 times a second, plus at every phase change.
	Progress func(Progress)
	// HashAlg is HashSHA256 (default when empty) or HashNone.
	HashAlg HashAlg
	// Sync issues a Sync after the last write.
	Sync bool
	// Digests records an xxh3-128 digest of every write command's bytes
	// (WriteResult.Digests) for VerifyDigests, on the decoding goroutine:
	// a verify that costs about what reading costs, and names the first
	// bad command's range without decoding the image again.
	Digests bool
	// Pieces, when set, is asked on the decoding goroutine which parts of
	// each filled transfer but the first to write (p is the transfer's
	// image bytes, off its image offset): it appends them to into as image
	// extents and returns it; none leaves the transfer unwritten. Each
	// piece, widened to whole blocks, is one WriteBlocks; the card keeps
	// its old bytes in between. A block map chooses its mapped ranges,
	// --sparse the parts that are not zero. WriteResult.Written then says
	// what was written.
	Pieces func(off int64, p []byte, into []blockdev.Extent) []blockdev.Extent
	// BeforeFirst, when set, is called once the stream reached its end
	// and every other transfer was written, before the held first
	// transfer: the last moment a check of the whole image (its file
	// unchanged, its download's checksum) can still stop the card from
	// booting it. Its error ends the write with the first transfer left
	// zeroed, as an *ImageCheckError.
	BeforeFirst func() error
	// WriteFirst, when set, writes the held first transfer in the
	// engine's place, after BeforeFirst: a customisation of the image
	// writes its changes, then the first transfer (see FirstWriter and
	// Edit). Its error ends the write; the first transfer is then left
	// zeroed unless the error came from writing it.
	WriteFirst FirstWriter
}

// WriteResult describes a finished write.
type WriteResult struct {
	Bytes        int64    // image bytes
	BytesWritten int64    // including the zero padding of the last block
	Blocks       int64    // blocks of image written
	SHA256       [32]byte // of the decoded image; zero with HashNone
	Transfers    int      // WRITE commands issued, the zeroing one included
	Elapsed      time.Duration
	// CPU is the user and system time the whole process spent during the
	// write (decoder goroutines included); 0 where the OS does not say.
	CPU time.Duration
	// Usage is what the process used during the write (CPU, context
	// switches, page faults), and IO what the device counted of its own
	// (commands and system calls; zero for a device that does not count).
	Usage Usage
	IO    blockdev.IOCounts
	// Memory is the kind of memory the buffers were: the device's own
	// (BufferAllocator) or MemoryAligned.
	Memory string
	// TransferSize and Buffers are the ring's, after the device's limits
	// (a count not given is chosen for the size the device takes).
	TransferSize, Buffers int
	// QueueDepth is how many full transfers were kept in flight at once,
	// and DeviceQueueDepth how many the device takes (a QueuedWriter's
	// WriteQueueDepth; 1 for any other device): QueueDepth is less when
	// the buffers leave fewer, one being always filled.
	QueueDepth, DeviceQueueDepth int
	// DecoderWait is how long the writer waited for a filled buffer
	// (decoder-bound time); DeviceWait how long the filler waited for a
	// free one (device-bound time).
	DecoderWait, DeviceWait time.Duration
	// DecoderBusy is time spent reading and hashing, DeviceBusy time
	// inside WriteBlocks.
	DecoderBusy, DeviceBusy time.Duration
	// Bound is the side that was busy longer, and BoundRatio how many
	// times longer (>= 1; 0 when nothing was done).
	Bound      Bound
	BoundRatio float64
	// Written lists the image bytes written when WriteOptions.Pieces was set
	// (nil without it), and WrittenSHA256 is the SHA-256 of those bytes in
	// order: VerifyOptions.Only and the hash for VerifyHash.
	Written       []blockdev.Extent
	WrittenSHA256 [32]byte
	// Digests are the write commands' digests with WriteOptions.Digests
	// (empty without), in LBA order.
	Digests Digests
}

// Write streams src onto dev from LBA 0, one transfer per WriteBlocks call,
// filling the next buffer while the previous one is on the wire.
//
// The first transfer is held back: its region is overwritten with zeros
// before anything else, the rest of the image streams, and the first
// transfer is written last. An interrupted write therefore leaves neither
// the old partition table nor the new one, and the card does not boot a
// partial image.
//
// Nothing is written to a write-protected medium (an error wrapping
// blockdev.ErrWriteProtected) or when ExpectedSize does not fit
// (*blockdev.CapacityError).
//
// Commands already sent are finished even when ctx is cancelled (the device
// gets a context without cancellation); Write stops before the next one,
// syncs, and returns a *CancelledError. Write returns only after its
// filling goroutine has stopped reading src.
func Write(ctx context.Context, dev blockdev.Device, src io.Reader, opts WriteOptions) (WriteResult, error) {
	name := blockdev.Name(dev, opts.Name)
	if err := opts.normalize(dev, name); err != nil {
		return WriteResult{}, err
	}
	if err := ctx.Err(); err != nil {
		return WriteResult{}, &CancelledError{Device: name, Phase: PhaseWrite, Err: err}
	}
	// The ring's buffers, the held first transfer among them, and the zero
	// buffer are all sent: all come from the device when it offers memory.
	mem, err := allocBuffers(dev, name, opts.Buffers+2, opts.TransferSize)
	if err != nil {
		return WriteResult{}, err
	}
	defer mem.release()
	return newWriter(ctx, dev, name, src, opts, mem).run(ctx)
}

// sizeBuffers fills in the defaults for a transfer size and a buffer count
// and checks them against the device; extra buffers are allocated beside
// the ring's.
func sizeBuffers(dev blockdev.Device, transfer, defTransfer, buffers int, defBuffers func(transfer int) int, extra int) (int, int, error) {
	bs := dev.BlockSize()
	if bs <= 0 {
		return 0, 0, fmt.Errorf("device reports block size %d", bs)
	}
	if transfer == 0 {
		transfer = max(defTransfer/bs*bs, bs)
	}
	if transfer < bs || transfer%bs != 0 {
		return 0, 0, fmt.Errorf("transfer size %d bytes is not a positive multiple of the %d-byte block size", transfer, bs)
	}
	transfer = blockdev.FitTransfer(dev, transfer).Size
	if buffers == 0 {
		buffers = defBuffers(transfer)
	}
	if buffers < 2 {
		return 0, 0, fmt.Errorf("%d buffers: want at least 2, so filling overlaps the device", buffers)
	}
	if m := (int64(buffers) + int64(extra)) * int64(transfer); m > blockdev.MaxBufferMemory {
		return 0, 0, fmt.Errorf("%d buffers of %d bytes take %d bytes, more than the %d-byte limit", buffers+extra, transfer, m, int64(blockdev.MaxBufferMemory))
	}
	return transfer, buffers, nil
}

// normalize fills in the defaults and refuses, before anything is
// allocated or written, what cannot work: bad sizes, an unknown hash, a
// write-protected medium, an image known not to fit.
func (o *WriteOptions) normalize(dev blockdev.Device, name string) error {
	var err error
	o.TransferSize, o.Buffers, err = sizeBuffers(dev, o.TransferSize, DefaultTransferSize, o.Buffers, BuffersFor, 2)
	if err != nil {
		return err
	}
	switch o.HashAlg {
	case "":
		o.HashAlg = HashSHA256
	case HashSHA256, HashNone:
	default:
		return fmt.Errorf("hash %q: want %q or %q", o.HashAlg, HashSHA256, HashNone)
	}
	if o.ExpectedSize <= 0 {
		o.ExpectedSize = -1
	}
	if err := blockdev.CheckWritable(dev, name); err != nil {
		return err
	}
	return blockdev.CheckFits(dev, name, o.ExpectedSize, true)
}
