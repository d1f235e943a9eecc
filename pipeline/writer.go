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

// writer is the consumer side of a write and owns all device I/O; its
// filler is the producer.
type writer struct {
	dev      blockdev.Device
	devCtx   context.Context // never cancelled: commands in flight finish
	name     string
	bs       int
	opts     WriteOptions
	capacity int64
	fill     filler
	r        *ring
	zero     []byte
	prog     progress

	zeroed    bool // the first region was zeroed before anything was filled
	held      bool // first holds the first transfer, kept back until the end
	first     fill
	last      fill
	res       WriteResult
	nextLBA   int64 // first block not yet streamed (after the first transfer)
	streamed  int64 // image bytes streamed, first transfer excluded
	busy      time.Duration
	transfers int

	// queue is the device's when it keeps several WRITEs in flight
	// (depth above 1, at most the cycling buffers less one): full
	// transfers waiting in the ring go to it together; bufs is the slice
	// handed to it, reused.
	queue blockdev.QueuedWriter
	depth int
	batch []fill
	bufs  [][]byte
}

// newWriter builds a write of src to dev with normalized options: mem's
// buffers all but the last cycle in the ring, the last is the zero buffer.
func newWriter(ctx context.Context, dev blockdev.Device, name string, src io.Reader, opts WriteOptions, mem memory) *writer {
	w := &writer{
		dev:      dev,
		devCtx:   context.WithoutCancel(ctx),
		name:     name,
		bs:       dev.BlockSize(),
		opts:     opts,
		capacity: blockdev.Capacity(dev),
		r:        newRing(mem.bufs[:len(mem.bufs)-1]),
		zero:     mem.bufs[len(mem.bufs)-1],
		prog:     progress{fn: opts.Progress},
	}
	// A batch leaves the filler one of the cycling buffers, so reading
	// the image goes on while the batch is on the wire.
	w.res.QueueDepth, w.res.DeviceQueueDepth = 1, 1
	if q, ok := dev.(blockdev.QueuedWriter); ok {
		w.res.DeviceQueueDepth = max(q.WriteQueueDepth(), 1)
		if d := min(q.WriteQueueDepth(), opts.Buffers-1); d > 1 {
			w.queue, w.depth = q, d
			w.res.QueueDepth = d
		}
	}
	w.res.Memory = mem.kind
	w.res.TransferSize, w.res.Buffers = opts.TransferSize, opts.Buffers
	clear(w.zero) // device memory comes as it is
	w.fill = filler{src: src, blockSize: w.bs, limit: w.capacity}
	if opts.ExpectedSize >= 0 {
		w.fill.limit = opts.ExpectedSize
	}
	if opts.HashAlg == HashSHA256 {
		w.fill.hash = sha256.New()
	}
	if opts.Digests {
		w.fill.digests = &Digests{BlockSize: w.bs}
		if opts.ExpectedSize > 0 {
			// One a transfer, unless pieces split them: no regrowth on the
			// decoding goroutine for a write of known size.
			w.fill.digests.List = make([]TransferDigest, 0, opts.ExpectedSize/int64(opts.TransferSize)+1)
		}
	}
	if opts.Pieces != nil {
		w.fill.pieces = opts.Pieces
		w.fill.chosen = make([][]blockdev.Extent, len(w.r.bufs))
		if opts.HashAlg == HashSHA256 {
			w.fill.written = sha256.New()
		}
	}
	return w
}

// run writes the image and reports how it went.
func (w *writer) run(ctx context.Context) (WriteResult, error) {
	start, cost := time.Now(), MeterCost(w.dev)
	w.prog.begin(PhaseWrite, w.opts.ExpectedSize, 0)
	err := drive(ctx, w.r, &w.fill, w)
	if err == nil {
		err = w.finish(ctx)
	}
	// The filler has stopped: its counters and hash are ours.
	w.res.Elapsed = time.Since(start)
	w.res.Usage, w.res.IO = cost.End()
	w.res.CPU = w.res.Usage.CPU()
	w.res.Transfers = w.transfers
	w.res.DecoderWait, w.res.DeviceWait = w.r.recvWait, w.r.takeWait
	w.res.DecoderBusy, w.res.DeviceBusy = w.fill.busy, w.busy
	w.res.Bound, w.res.BoundRatio = bound(w.fill.busy, w.busy)
	if err == nil && w.fill.hash != nil {
		w.fill.hash.Sum(w.res.SHA256[:0])
	}
	if err == nil && w.fill.written != nil {
		w.fill.written.Sum(w.res.WrittenSHA256[:0])
	}
	if err == nil && w.fill.digests != nil {
		w.res.Digests = *w.fill.digests
		w.res.Digests.Size = w.res.Bytes
	}
	return w.res, err
}

// begin clears the first region before anything else lands. When the
// image is known to be longer than one transfer this happens at once,
// while the filler fills the first buffer; otherwise only the first buffer
// tells whether more follows.
func (w *writer) begin() error {
	w.zeroed = w.opts.ExpectedSize > int64(w.opts.TransferSize)
	if !w.zeroed {
		return nil
	}
	if err := w.write(0, w.zero); err != nil {
		return err
	}
	w.nextLBA = int64(w.opts.TransferSize / w.bs)
	return nil
}

// consume holds the first buffer and writes every later one at the next
// LBA, until the buffer that ends the stream.
func (w *writer) consume(f fill) (bool, error) {
	w.last = f
	if !w.held {
		w.held, w.first = true, f
		if f.err == nil && !w.zeroed {
			// A full first buffer (err == nil): more may follow.
			if err := w.write(0, w.zero[:f.padded]); err != nil {
				return false, err
			}
		}
		w.nextLBA = int64(f.padded / w.bs) // a full transfer unless the image ends in it
		return f.err == nil, nil
	}
	if w.queue != nil && w.full(f) {
		return w.consumeQueued(f)
	}
	if f.part {
		if err := w.writePieces(f); err != nil {
			return false, err
		}
	} else if f.padded > 0 {
		if err := w.write(w.nextLBA, w.r.data(f)); err != nil {
			return false, err
		}
		w.wrote(f)
	}
	w.advance(f)
	w.prog.update(w.streamed, false)
	return f.err == nil, nil
}

// wrote counts f's transfer as written.
func (w *writer) wrote(f fill) {
	w.res.BytesWritten += int64(f.padded)
	w.noteWritten(f.off, int64(f.n))
}

// advance moves past f and gives its buffer back.
func (w *writer) advance(f fill) {
	w.nextLBA += int64(f.padded / w.bs)
	w.streamed += int64(f.n)
	w.r.giveBack(f)
}

// full is a fill that is a whole transfer with more to come: what goes to
// a QueuedWriter.
func (w *writer) full(f fill) bool {
	return f.err == nil && !f.part && f.padded == w.opts.TransferSize
}

// consumeQueued writes f with the full transfers already waiting behind
// it, up to the device's queue depth, in one WriteBlocksQueued (they
// follow each other on the medium), and gives them back once all are
// written. A fill behind them that is not a full transfer (the last, a
// pieced one) is consumed after them as any other.
func (w *writer) consumeQueued(f fill) (bool, error) {
	w.batch = append(w.batch[:0], f)
	var next fill
	ahead := false
	for len(w.batch) < w.depth {
		g, ok := w.r.tryReceive()
		if !ok {
			break
		}
		if !w.full(g) {
			next, ahead = g, true
			break
		}
		w.batch = append(w.batch, g)
	}
	w.bufs = w.bufs[:0]
	n := 0
	for _, b := range w.batch {
		w.bufs = append(w.bufs, w.r.data(b))
		n += b.padded
	}
	t := time.Now()
	err := w.queue.WriteBlocksQueued(w.devCtx, w.nextLBA, w.bufs)
	w.busy += time.Since(t)
	w.transfers += len(w.batch)
	if err != nil {
		lba, count := w.nextLBA, int64(n/w.bs)
		if br := blockdev.BlockRanger(nil); errors.As(err, &br) {
			if l, c := br.BlockRange(); c > 0 && l >= lba && l+c <= lba+count {
				lba, count = l, c
			}
		}
		return false, &DeviceError{Device: w.name, Op: OpWrite, LBA: lba, Count: count, BlockSize: w.bs, Err: err}
	}
	for _, b := range w.batch {
		w.last = b
		w.wrote(b)
		w.advance(b)
	}
	w.prog.update(w.streamed, false)
	if ahead {
		return w.consume(next)
	}
	return true, nil
}

// finish ends a stream that reached its end: the first transfer, then
// the sync.
func (w *writer) finish(ctx context.Context) error {
	if err := w.endOfStream(w.last); err != nil {
		w.syncQuietly()
		return err
	}
	if err := ctx.Err(); err != nil {
		return w.cancelled(err)
	}
	if w.opts.BeforeFirst != nil {
		if err := w.opts.BeforeFirst(); err != nil {
			w.syncQuietly()
			return &ImageCheckError{Device: w.name, Err: err}
		}
	}
	if w.first.padded > 0 {
		if w.opts.WriteFirst != nil {
			start := time.Now()
			err := w.opts.WriteFirst(w.devCtx, w.dev, w.r.data(w.first), w.fill.digests)
			w.busy += time.Since(start)
			w.transfers++
			if err != nil {
				w.syncQuietly()
				return err
			}
		} else if err := w.write(0, w.r.data(w.first)); err != nil {
			return err
		}
		w.res.BytesWritten += int64(w.first.padded)
		w.noteWritten(0, int64(w.first.n))
	}
	w.res.Bytes = w.streamed + int64(w.first.n)
	w.res.Blocks = w.res.BytesWritten / int64(w.bs)
	w.prog.update(w.res.Bytes, true)
	if w.opts.Sync {
		w.prog.begin(PhaseSync, w.res.Bytes, w.res.Bytes)
		if err := w.sync(); err != nil {
			return err
		}
	}
	return nil
}

// endOfStream turns the filler's terminal error into the write's result.
func (w *writer) endOfStream(last fill) error {
	total := last.off + int64(last.n)
	switch {
	case isPastLimit(last.err):
		if w.opts.ExpectedSize < 0 {
			return &blockdev.CapacityError{Device: w.name, ImageSize: -1, Capacity: w.capacity, Written: total}
		}
		return &ImageSizeError{Declared: w.opts.ExpectedSize, Actual: total, Longer: true}
	case last.err != io.EOF:
		return fmt.Errorf("reading the image at byte offset %d (nothing usable was written to %s; "+
			"the first transfer was left zeroed): %w", total, w.name, last.err)
	case w.opts.ExpectedSize >= 0 && total != w.opts.ExpectedSize:
		return &ImageSizeError{Declared: w.opts.ExpectedSize, Actual: total}
	}
	return nil
}

// write issues one WriteBlocks and wraps its failure with the range.
func (w *writer) write(lba int64, p []byte) error {
	t := time.Now()
	err := w.dev.WriteBlocks(w.devCtx, lba, p)
	w.busy += time.Since(t)
	w.transfers++
	if err != nil {
		return &DeviceError{Device: w.name, Op: OpWrite, LBA: lba, Count: int64(len(p) / w.bs), BlockSize: w.bs, Err: err}
	}
	return nil
}

func (w *writer) sync() error {
	if err := w.dev.Sync(w.devCtx); err != nil {
		return &DeviceError{Device: w.name, Op: OpSync, LBA: -1, BlockSize: w.bs, Err: err}
	}
	return nil
}

// syncQuietly flushes what was written before an abort that is not the
// device's fault; the abort's own error is the one worth reporting.
func (w *writer) syncQuietly() {
	if w.transfers > 0 {
		_ = w.sync()
	}
}

// cancelled syncs what was written and reports how far the write got.
func (w *writer) cancelled(cause error) error {
	ce := &CancelledError{Device: w.name, Phase: PhaseWrite, Bytes: w.streamed, LBA: w.nextLBA, Err: cause}
	if w.transfers > 0 {
		if err := w.sync(); err != nil {
			return errors.Join(ce, err)
		}
	}
	return ce
}

// bound names the side that was busy longer and by what factor.
func bound(decoderBusy, deviceBusy time.Duration) (Bound, float64) {
	hi, lo, side := deviceBusy, decoderBusy, BoundDevice
	if decoderBusy > deviceBusy {
		hi, lo, side = decoderBusy, deviceBusy, BoundDecoder
	}
	if lo <= 0 {
		return side, 0
	}
	return side, float64(hi) / float64(lo)
}
