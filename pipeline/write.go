package pipeline

import (
	"context"
	"crypto/sha256"
	"fmt"
	"io"
	"time"
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

// MaxBufferMemory bounds what a write or verify may allocate for its
// buffers: (Buffers + 2) * TransferSize, the two being the held first
// transfer and the zero buffer. Past it the options are refused up front
// rather than letting the runtime die out of memory.
const MaxBufferMemory = 1 << 30

// BufferMemory is the memory a write with these sizes allocates.
func BufferMemory(transferSize, buffers int) int64 {
	return (int64(buffers) + 2) * int64(transferSize)
}

// Hash algorithms for WriteOptions.HashAlg.
const (
	HashSHA256 = "sha256"
	HashNone   = "none"
)

// WriteOptions tune Write. The zero value is valid.
type WriteOptions struct {
	// TransferSize is the bytes per WRITE command, a multiple of the
	// device's block size. 0 means DefaultTransferSize.
	TransferSize int
	// Buffers is how many buffers cycle between decoder and writer, at
	// least 2. 0 means DefaultBuffers. Two more are allocated: the held
	// first transfer and a zero buffer.
	Buffers int
	// ExpectedSize is the decoded image size when the container says it;
	// -1 (or 0, so the zero value is safe) when unknown. Known and larger
	// than the medium: nothing is written. Known and the stream is longer
	// or shorter: *ImageSizeError.
	ExpectedSize int64
	// Progress, when set, is called from the writing goroutine at most
	// about 4 times a second, plus at every phase change.
	Progress func(Progress)
	// HashAlg is HashSHA256 (default when empty) or HashNone.
	HashAlg string
	// Sync issues a Sync after the last write.
	Sync bool
	// Pieces, when set, is asked on the decoding goroutine which parts of
	// each filled transfer but the first to write (p is the transfer's
	// image bytes, off its image offset): it appends them to into as image
	// extents and returns it; none leaves the transfer unwritten. Each
	// piece, widened to whole blocks, is one WriteBlocks; the card keeps
	// its old bytes in between. A block map chooses its mapped ranges,
	// --sparse the parts that are not zero. WriteResult.Written then says
	// what was written.
	Pieces func(off int64, p []byte, into []Extent) []Extent
}

// WriteResult describes a finished write.
type WriteResult struct {
	Bytes        int64    // image bytes
	BytesWritten int64    // including the zero padding of the last block
	Blocks       int64    // blocks of image written
	SHA256       [32]byte // of the decoded image; zero with HashNone
	Transfers    int      // WRITE commands issued, the zeroing one included
	Elapsed      time.Duration
	// DecoderWait is how long the writer waited for a filled buffer
	// (decoder-bound time); DeviceWait how long the decoder waited for a
	// free one (device-bound time).
	DecoderWait, DeviceWait time.Duration
	// DecoderBusy is time spent reading and hashing, DeviceBusy time
	// inside WriteBlocks.
	DecoderBusy, DeviceBusy time.Duration
	// Bound is "decoder" or "device", whichever was busy longer, and
	// BoundRatio how many times longer (>= 1; 0 when nothing was done).
	Bound      string
	BoundRatio float64
	// Written lists the image bytes written when WriteOptions.Pieces was set
	// (nil without it), and WrittenSHA256 is the SHA-256 of those bytes in
	// order: VerifyOptions.Only and the hash for VerifyHash.
	Written       []Extent
	WrittenSHA256 [32]byte
}

// Write streams src onto dev from LBA 0, one transfer per WriteBlocks call,
// decoding the next buffer while the previous one is on the wire.
//
// The first transfer is held back: its region is overwritten with zeros
// before anything else, the rest of the image streams, and the first
// transfer is written last. An interrupted write therefore leaves neither
// the old partition table nor the new one, and the card does not boot a
// partial image.
//
// Commands already sent are finished even when ctx is cancelled (the device
// gets a context without cancellation); Write stops before the next one,
// syncs, and returns a *CancelledError. Write returns only after its
// decoding goroutine has stopped reading src.
func Write(ctx context.Context, dev BlockDevice, src io.Reader, opts WriteOptions) (WriteResult, error) {
	w, err := newWriter(dev, opts)
	if err != nil {
		return WriteResult{}, err
	}
	if err := ctx.Err(); err != nil {
		return WriteResult{}, &CancelledError{Device: w.name, Op: "write", Err: err}
	}
	return w.run(ctx, src)
}

// checkTransfer validates a transfer size against the block size.
func checkTransfer(size, blockSize int) error {
	if blockSize <= 0 {
		return fmt.Errorf("device reports block size %d: cannot write to it", blockSize)
	}
	if size < blockSize || size%blockSize != 0 {
		return fmt.Errorf("transfer size %d bytes: want a positive multiple of the %d-byte block size", size, blockSize)
	}
	return nil
}

func newWriter(dev BlockDevice, opts WriteOptions) (*writer, error) {
	bs := dev.BlockSize()
	if opts.TransferSize == 0 {
		opts.TransferSize = max(DefaultTransferSize/bs*bs, bs)
	}
	if err := checkTransfer(opts.TransferSize, bs); err != nil {
		return nil, err
	}
	if opts.Buffers == 0 {
		opts.Buffers = DefaultBuffers
	}
	if opts.Buffers < 2 {
		return nil, fmt.Errorf("%d buffers: want at least 2, so decoding overlaps writing", opts.Buffers)
	}
	if m := BufferMemory(opts.TransferSize, opts.Buffers); m > MaxBufferMemory {
		return nil, fmt.Errorf("%d buffers of %d bytes take %d bytes: more than the %d-byte limit", opts.Buffers, opts.TransferSize, m, int64(MaxBufferMemory))
	}
	w := &writer{dev: dev, name: deviceName(dev), bs: bs, opts: opts}
	w.dec.pieces = opts.Pieces
	switch opts.HashAlg {
	case "", HashSHA256:
		w.dec.hash = sha256.New()
		if opts.Pieces != nil {
			w.dec.written = sha256.New()
		}
	case HashNone:
	default:
		return nil, fmt.Errorf("hash %q: want %q or %q", opts.HashAlg, HashSHA256, HashNone)
	}
	w.capacity = dev.BlockCount() * int64(bs)
	w.dec.limit = w.capacity
	if opts.ExpectedSize <= 0 {
		w.opts.ExpectedSize = -1
	} else {
		// Checked before the ring is allocated or anything is written.
		if opts.ExpectedSize > w.capacity {
			return nil, &CapacityError{Device: w.name, ImageSize: opts.ExpectedSize, Capacity: w.capacity}
		}
		w.dec.limit = opts.ExpectedSize
	}
	return w, nil
}

// deviceName names a device in messages: its String method when it has one.
func deviceName(dev BlockDevice) string {
	if s, ok := dev.(fmt.Stringer); ok {
		return s.String()
	}
	return "the device"
}
