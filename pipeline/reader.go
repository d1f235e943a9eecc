package pipeline

import (
	"context"
	"io"
	"time"

	"github.com/usbflash/usbflash/pipeline/blockdev"
)

// blockReader is the producer side of a verify: it reads the medium from
// LBA 0 in transfer-sized commands into the ring's buffers, ahead of the
// comparison, until limit bytes are read. Its last fill carries io.EOF
// (limit reached) or a *DeviceError.
type blockReader struct {
	dev   blockdev.Device
	ctx   context.Context // never cancelled: commands in flight finish
	name  string
	bs    int
	limit int64
	only  []blockdev.Extent // nil: everything up to limit
	busy  time.Duration
	reads int
}

func (br *blockReader) produce(r *ring) {
	var off int64
	for {
		idx, buf, ok := r.take()
		if !ok {
			return
		}
		n := len(buf)
		if br.only != nil {
			var left int64
			off, left = nextInExtents(br.only, off, br.limit)
			n = int(min(int64(n), left))
		}
		if rest := br.limit - off; rest < int64(n) {
			n = int(rest)
		}
		if n == 0 {
			r.hand(fill{idx: idx, off: off, err: io.EOF})
			return
		}
		padded := roundUp(n, br.bs)
		lba := off / int64(br.bs)
		t := time.Now()
		err := br.dev.ReadBlocks(br.ctx, lba, buf[:padded])
		br.busy += time.Since(t)
		br.reads++
		if err != nil {
			err = &DeviceError{Device: br.name, Op: OpRead, LBA: lba, Count: int64(padded / br.bs), BlockSize: br.bs, Err: err}
			r.hand(fill{idx: idx, off: off, err: err})
			return
		}
		r.hand(fill{idx: idx, off: off, n: n, padded: padded})
		off += int64(n)
	}
}

// checker is the consumer side of a verify: it hands each buffer read back
// to check, which says how many image bytes of it matched and whether to go
// on.
type checker struct {
	r     *ring
	name  string
	bs    int
	prog  progress
	bytes int64
	check func(f fill, got []byte) (n int, more bool, err error)
}

func (c *checker) begin() error { return nil }

func (c *checker) consume(f fill) (bool, error) {
	n, more, err := c.check(f, c.r.data(f)[:f.n])
	if err != nil {
		return false, err
	}
	c.bytes += int64(n)
	c.r.giveBack(f)
	if more {
		c.prog.update(c.bytes, false)
	}
	return more, nil
}

func (c *checker) cancelled(cause error) error {
	return &CancelledError{Device: c.name, Phase: PhaseVerify, Bytes: c.bytes, LBA: c.bytes / int64(c.bs), Err: cause}
}

// readBack reads the first limit bytes of the medium and hands them to
// check, buffer by buffer. total is what progress reports as the phase's
// size (-1 unknown). It returns once the reader has stopped, with check's
// error, the reader's error or a *CancelledError.
func readBack(ctx context.Context, dev blockdev.Device, limit, total int64, opts VerifyOptions,
	check func(f fill, got []byte) (n int, more bool, err error)) (VerifyResult, error) {
	start, cost := time.Now(), MeterCost(dev)
	name := blockdev.Name(dev, opts.Name)
	mem, err := allocBuffers(dev, name, opts.Buffers, opts.TransferSize)
	if err != nil {
		return VerifyResult{}, err
	}
	defer mem.release()
	r := newRing(mem.bufs)
	br := &blockReader{dev: dev, ctx: context.WithoutCancel(ctx), name: name, bs: dev.BlockSize(), limit: limit, only: opts.Only}
	if opts.Only != nil {
		total = min(total, extentsLen(opts.Only))
	}
	c := &checker{r: r, name: name, bs: br.bs, prog: progress{fn: opts.Progress}, check: check}
	c.prog.begin(PhaseVerify, total, 0)

	err = drive(ctx, r, br, c)
	if err == nil {
		c.prog.update(c.bytes, true)
	}
	usage, io := cost.End()
	return VerifyResult{
		Bytes: c.bytes, Reads: br.reads, TransferSize: opts.TransferSize, Elapsed: time.Since(start), CPU: usage.CPU(),
		Usage: usage, IO: io, Memory: mem.kind, DeviceBusy: br.busy,
	}, err
}
