package pipeline

import (
	"context"
	"errors"
	"fmt"
	"io"
	"time"

	"usbflash/internal/aligned"
)

// writer is the consumer side of the write ring and owns all device I/O.
type writer struct {
	dev      BlockDevice
	devCtx   context.Context // never cancelled: commands in flight finish
	name     string
	bs       int
	opts     WriteOptions
	capacity int64
	dec      decoder
	r        *ring
	zero     []byte
	prog     progress

	res       WriteResult
	nextLBA   int64 // first block not yet streamed (after the first transfer)
	streamed  int64 // image bytes streamed, first transfer excluded
	wait      time.Duration
	busy      time.Duration
	transfers int
}

func (w *writer) run(ctx context.Context, src io.Reader) (WriteResult, error) {
	start := time.Now()
	w.devCtx = context.WithoutCancel(ctx)
	// Buffers cycle between the two sides; one more is held as the first
	// transfer until the end.
	w.r = newRing(w.opts.Buffers+1, w.opts.TransferSize)
	w.zero = aligned.Bytes(w.opts.TransferSize)
	w.dec.src, w.dec.r, w.dec.blockSize = src, w.r, w.bs
	if w.opts.Pieces != nil {
		w.dec.chosen = make([][]Extent, len(w.r.bufs))
	}
	w.prog = progress{fn: w.opts.Progress}
	w.prog.begin(PhaseWrite, w.opts.ExpectedSize, 0)

	stop, done := make(chan struct{}), make(chan struct{})
	go func() {
		defer close(done)
		w.dec.run(stop)
	}()
	err := w.stream(ctx)
	close(stop)
	<-done // the decoder's counters and hash are ours from here on

	w.res.Elapsed = time.Since(start)
	w.res.Transfers = w.transfers
	w.res.DecoderWait, w.res.DeviceWait = w.wait, w.dec.wait
	w.res.DecoderBusy, w.res.DeviceBusy = w.dec.busy, w.busy
	w.res.Bound, w.res.BoundRatio = bound(w.dec.busy, w.busy)
	if err == nil && w.dec.hash != nil {
		w.dec.hash.Sum(w.res.SHA256[:0])
	}
	if err == nil && w.dec.written != nil {
		w.dec.written.Sum(w.res.WrittenSHA256[:0])
	}
	return w.res, err
}

// stream runs the write from the first buffer to the final sync.
func (w *writer) stream(ctx context.Context) error {
	blocks := int64(w.opts.TransferSize / w.bs)
	// The first region is cleared before anything else lands. When the
	// image is known to be longer than one transfer this happens at once,
	// while the decoder fills the first buffer; otherwise only the first
	// buffer tells whether more follows.
	zeroed := w.opts.ExpectedSize > int64(w.opts.TransferSize)
	if zeroed {
		if err := w.write(0, w.zero); err != nil {
			return err
		}
		w.nextLBA = blocks
	}
	first, err := w.recv(ctx)
	if err != nil {
		return w.cancelled(err)
	}
	if first.err == nil && !zeroed {
		// A full first buffer (err == nil): more may follow.
		if err := w.write(0, w.zero[:first.padded]); err != nil {
			return err
		}
	}
	w.nextLBA = int64(first.padded / w.bs) // a full transfer unless the image ends in it
	last := first
	for last.err == nil {
		if err := ctx.Err(); err != nil {
			return w.cancelled(err)
		}
		f, err := w.recv(ctx)
		if err != nil {
			return w.cancelled(err)
		}
		if f.part {
			if err := w.writePieces(f); err != nil {
				return err
			}
		} else if f.padded > 0 {
			if err := w.write(w.nextLBA, w.r.bufs[f.idx][:f.padded]); err != nil {
				return err
			}
			w.res.BytesWritten += int64(f.padded)
			w.noteWritten(f.off, int64(f.n))
		}
		w.nextLBA += int64(f.padded / w.bs)
		w.streamed += int64(f.n)
		w.r.free <- f.idx // free has room for every buffer: never blocks
		w.prog.update(w.streamed, false)
		last = f
	}
	if err := w.endOfStream(last); err != nil {
		w.syncQuietly()
		return err
	}
	if err := ctx.Err(); err != nil {
		return w.cancelled(err)
	}
	if first.padded > 0 {
		if err := w.write(0, w.r.bufs[first.idx][:first.padded]); err != nil {
			return err
		}
		w.res.BytesWritten += int64(first.padded)
		w.noteWritten(0, int64(first.n))
	}
	w.res.Bytes = w.streamed + int64(first.n)
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

// endOfStream turns the decoder's terminal error into the write's result.
func (w *writer) endOfStream(last fill) error {
	total := last.off + int64(last.n)
	switch {
	case isPastLimit(last.err):
		if w.opts.ExpectedSize < 0 {
			return &CapacityError{Device: w.name, ImageSize: -1, Capacity: w.capacity, Written: total}
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

// recv waits for the next filled buffer, counting the wait as decoder-bound.
func (w *writer) recv(ctx context.Context) (fill, error) {
	t := time.Now()
	select {
	case f := <-w.r.full:
		w.wait += time.Since(t)
		return f, nil
	case <-ctx.Done():
		w.wait += time.Since(t)
		return fill{}, ctx.Err()
	}
}

// write issues one WriteBlocks and wraps its failure with the range.
func (w *writer) write(lba int64, p []byte) error {
	t := time.Now()
	err := w.dev.WriteBlocks(w.devCtx, lba, p)
	w.busy += time.Since(t)
	w.transfers++
	if err != nil {
		return &DeviceError{Device: w.name, Op: "write", LBA: lba, Blocks: int64(len(p) / w.bs), BlockSize: w.bs, Err: err}
	}
	return nil
}

func (w *writer) sync() error {
	if err := w.dev.Sync(w.devCtx); err != nil {
		return &DeviceError{Device: w.name, Op: "sync", LBA: -1, BlockSize: w.bs, Err: err}
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
	if w.transfers > 0 {
		if err := w.sync(); err != nil {
			return errors.Join(&CancelledError{Device: w.name, Op: "write", Bytes: w.streamed, LBA: w.nextLBA, Err: cause}, err)
		}
	}
	return &CancelledError{Device: w.name, Op: "write", Bytes: w.streamed, LBA: w.nextLBA, Err: cause}
}

// bound names the side that was busy longer and by what factor.
func bound(decoderBusy, deviceBusy time.Duration) (string, float64) {
	hi, lo, side := deviceBusy, decoderBusy, "device"
	if decoderBusy > deviceBusy {
		hi, lo, side = decoderBusy, deviceBusy, "decoder"
	}
	if lo <= 0 {
		return side, 0
	}
	return side, float64(hi) / float64(lo)
}

func isPastLimit(err error) bool {
	_, ok := err.(pastLimit)
	return ok
}
