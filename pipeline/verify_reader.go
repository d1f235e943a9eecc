package pipeline

import (
	"context"
	"io"
	"time"
)

// blockReader is the producer side of a verify: it reads the medium from
// LBA 0 in transfer-sized commands into ring buffers, one ahead of the
// comparison, until limit bytes are read. Its last fill carries io.EOF
// (limit reached) or a *DeviceError.
type blockReader struct {
	dev   BlockDevice
	ctx   context.Context // never cancelled: commands in flight finish
	name  string
	r     *ring
	bs    int
	limit int64
	only  []Extent // nil: everything up to limit
	busy  time.Duration
	reads int
}

func (br *blockReader) run(stop <-chan struct{}) {
	var off int64
	for {
		var idx int
		select {
		case idx = <-br.r.free:
		case <-stop:
			return
		}
		buf := br.r.bufs[idx]
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
			br.r.full <- fill{idx: idx, off: off, err: io.EOF}
			return
		}
		padded := roundUp(n, br.bs)
		lba := off / int64(br.bs)
		t := time.Now()
		err := br.dev.ReadBlocks(br.ctx, lba, buf[:padded])
		br.busy += time.Since(t)
		br.reads++
		if err != nil {
			err = &DeviceError{Device: br.name, Op: "read", LBA: lba, Blocks: int64(padded / br.bs), BlockSize: br.bs, Err: err}
			br.r.full <- fill{idx: idx, off: off, err: err}
			return
		}
		br.r.full <- fill{idx: idx, off: off, n: n, padded: padded}
		off += int64(n)
	}
}

// readBack runs a blockReader on its own goroutine and hands its buffers to
// each, which says how many image bytes of the buffer it checked and returns
// more=false to stop early. total is what progress reports
// as the phase's size (-1 unknown). It returns once the reader has
// stopped, with each's error, the reader's error or a *CancelledError.
func readBack(ctx context.Context, dev BlockDevice, limit, total int64, opts VerifyOptions,
	each func(f fill, buf []byte) (n int, more bool, err error)) (VerifyResult, error) {
	start := time.Now()
	br := &blockReader{dev: dev, ctx: context.WithoutCancel(ctx), name: deviceName(dev),
		bs: dev.BlockSize(), limit: limit, only: opts.Only}
	if opts.Only != nil {
		total = min(total, extentsLen(opts.Only))
	}
	br.r = newRing(opts.Buffers, opts.TransferSize)
	prog := progress{fn: opts.Progress}
	prog.begin(PhaseVerify, total, 0)

	stop, done := make(chan struct{}), make(chan struct{})
	go func() {
		defer close(done)
		br.run(stop)
	}()
	var res VerifyResult
	err := func() error {
		for {
			if err := ctx.Err(); err != nil {
				return res.cancelled(br, err)
			}
			var f fill
			select {
			case f = <-br.r.full:
			case <-ctx.Done():
				return res.cancelled(br, ctx.Err())
			}
			n, more, err := each(f, br.r.bufs[f.idx][:f.n])
			if err != nil {
				return err
			}
			res.Bytes += int64(n)
			br.r.free <- f.idx // never blocks: free has room for every buffer
			if !more {
				return nil
			}
			prog.update(res.Bytes, false)
		}
	}()
	close(stop)
	<-done
	res.Reads = br.reads
	res.DeviceBusy = br.busy
	res.Elapsed = time.Since(start)
	if err == nil {
		prog.update(res.Bytes, true)
	}
	return res, err
}

func (res *VerifyResult) cancelled(br *blockReader, err error) error {
	return &CancelledError{Device: br.name, Op: "verify", Bytes: res.Bytes, LBA: res.Bytes / int64(br.bs), Err: err}
}
