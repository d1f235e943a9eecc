package pipeline

import (
	"context"
	"crypto/sha256"
	"errors"
	"fmt"
	"io"
	"time"

	"github.com/usbflash/usbflash/pipeline/blockdev"
)

// PhaseRead is the phase of Read in Progress.Phase.
const PhaseRead Phase = "read"

// BoundSink in ReadResult.Bound: dst's Write and hashing took longer than
// the device.
const BoundSink Bound = "sink"

// ReadOptions tune Read. The zero value is valid.
type ReadOptions struct {
	// Name names the device in errors; empty: its String method, if any.
	Name string
	// TransferSize is the bytes per READ command, a multiple of the block
	// size. 0 means DefaultReadSize.
	TransferSize int
	// Buffers is how many buffers cycle between the device and dst, at
	// least 2. 0 means BuffersFor the transfer size (as the device's
	// transfer limit leaves it), as a write has: a
	// compressor that stalls now and then (a block boundary, a flush)
	// does not stop the device while a buffer is free.
	Buffers int
	// Progress, when set, is called with PhaseRead at most about 4 times a
	// second, plus at the start and the end.
	Progress func(Progress)
}

// ReadResult describes a finished Read.
type ReadResult struct {
	Bytes   int64    // bytes read and handed to dst
	Reads   int      // READ commands
	SHA256  [32]byte // of the bytes read
	Elapsed time.Duration
	// DeviceBusy is time inside ReadBlocks, SinkBusy time inside dst's
	// Write and hashing; Bound names the longer one, BoundRatio by how much.
	DeviceBusy, SinkBusy time.Duration
	Bound                Bound // BoundDevice or BoundSink
	BoundRatio           float64
}

// AddSinkTime counts time dst spent after Read returned (a parallel
// compressor flushing its last blocks at Close) as the sink's, in Elapsed
// and in which side bounded the read.
func (r *ReadResult) AddSinkTime(d time.Duration) {
	r.SinkBusy += d
	r.Elapsed += d
	r.Bound, r.BoundRatio = bound(r.SinkBusy, r.DeviceBusy)
	if r.Bound == BoundDecoder {
		r.Bound = BoundSink
	}
}

// Read copies the first size bytes of dev to dst: READ commands fill
// aligned buffers on one goroutine, up to Buffers-1 ahead, while dst (a
// compressor, a file) takes the previous ones on this one, so a backup
// takes max(device time, dst time), not their sum. A failed read is a
// *DeviceError naming the LBA; on cancellation the command in flight
// finishes and Read returns an error wrapping ctx.Err().
func Read(ctx context.Context, dev blockdev.Device, dst io.Writer, size int64, opts ReadOptions) (ReadResult, error) {
	vo := VerifyOptions{Name: opts.Name, TransferSize: opts.TransferSize, Buffers: opts.Buffers}
	if opts.Progress != nil {
		vo.Progress = func(p Progress) {
			p.Phase = PhaseRead
			opts.Progress(p)
		}
	}
	// As many buffers as a write has for the transfer size the reader
	// allows (a capped one gets more, smaller ones): dst may stall now
	// and then, and the READs run ahead of it meanwhile.
	if err := vo.normalizeBuffers(dev, BuffersFor); err != nil {
		return ReadResult{}, err
	}
	name := blockdev.Name(dev, opts.Name)
	capacity := dev.BlockCount() * int64(dev.BlockSize())
	if size < 0 || size > capacity {
		return ReadResult{}, fmt.Errorf("reading %d bytes of %s, which holds %d", size, name, capacity)
	}
	h := sha256.New()
	var sink time.Duration
	v, err := readBack(ctx, dev, size, size, vo, func(f fill, got []byte) (int, bool, error) {
		if f.err != nil {
			return 0, false, nilIfEOF(f.err)
		}
		t := time.Now()
		h.Write(got)
		_, err := dst.Write(got)
		sink += time.Since(t)
		if err != nil {
			return 0, false, fmt.Errorf("writing the backup of %s at byte offset %d: %w", name, f.off, err)
		}
		return len(got), true, nil
	})
	res := ReadResult{Bytes: v.Bytes, Reads: v.Reads, Elapsed: v.Elapsed, DeviceBusy: v.DeviceBusy, SinkBusy: sink}
	res.Bound, res.BoundRatio = bound(sink, v.DeviceBusy)
	if res.Bound == BoundDecoder {
		res.Bound = BoundSink
	}
	var ce *CancelledError
	if errors.As(err, &ce) {
		read := *ce
		read.Phase = PhaseRead
		return res, &read
	}
	if err == nil {
		h.Sum(res.SHA256[:0])
	}
	return res, err
}
