package xzdec

import (
	"context"
	"io"
	"runtime"
)

// inlineChunk is the output buffer of a block decoded on the reading
// goroutine (one whose header does not record its sizes): the reader
// streams it while it fills, as it does a worker's block.
const inlineChunk = 4 << 20

// NewParallelStreamReader decodes .xz read once, in order, from r (a
// download, a pipe), on several goroutines where the blocks allow it.
//
// A stream has no index to look ahead at, but `xz -T` (any thread count
// but one, the default since xz 5.4) records each block's compressed and
// uncompressed sizes in its header. Such a block is read from r whole and
// decoded by a worker while the next ones are read; the budget of
// Options.MaxInFlight then counts its compressed bytes beside its decoded
// ones. A block whose header lacks the sizes (single-threaded xz, or one
// larger than MaxInFlight) is decoded as it arrives on the goroutine that
// reads r, in order with the others. Every check the streaming Reader makes
// is made: block checks and sizes, each stream's index against its blocks,
// footers and stream padding, concatenated streams.
//
// One goroutine reads r until the input ends or the reader is closed. Close
// stops the workers and returns without waiting for a Read of r in progress
// (a stalled download): closing r, or r's own deadline, ends it. With
// Options.Workers == 1, or GOMAXPROCS 1, it is the streaming Reader.
func NewParallelStreamReader(ctx context.Context, r io.Reader, opt Options) (io.ReadCloser, error) {
	z, err := NewReader(r)
	if err != nil {
		return nil, err
	}
	workers := opt.Workers
	if workers <= 0 {
		workers = runtime.GOMAXPROCS(0)
	}
	if workers == 1 {
		return &streamCloser{z: z, ctx: ctx}, nil
	}
	limit := opt.MaxInFlight
	if limit <= 0 {
		limit = DefaultMaxInFlight
	}
	ctx, cancel := context.WithCancel(ctx)
	p := &parallelReader{
		ctx: ctx, cancel: cancel,
		limit: limit, maxJobs: 2 * workers,
		queue:    make(chan *pjob, 2*workers),
		jobs:     make(chan *pjob),
		released: make(chan struct{}, 1),
	}
	p.wg.Add(workers)
	go p.dispatchStream(z)
	for i := 0; i < workers; i++ {
		go p.work()
	}
	return p, nil
}

// dispatchStream parses z's input in order: blocks that record their sizes
// go to the workers, others are decoded here, and indexes, footers and
// padding are checked as the streaming Reader checks them. An error is
// queued after the blocks before it, so the reader gets their bytes first.
func (p *parallelReader) dispatchStream(z *Reader) {
	defer close(p.jobs)
	defer close(p.queue)
	for {
		err := p.streamStep(z)
		if err == io.EOF {
			return
		}
		if err != nil {
			if p.ctx.Err() == nil {
				j := &pjob{err: err, finished: make(chan struct{})}
				close(j.finished)
				p.enqueue(j)
			}
			return
		}
	}
}

// streamStep moves z past one block, or one index with its footer and
// what follows it. It returns io.EOF at the end of the input.
func (p *parallelReader) streamStep(z *Reader) error {
	if err := p.ctx.Err(); err != nil {
		return err
	}
	if atIndex, err := z.streamEnd(); atIndex || err != nil {
		return err
	}
	in := z.in
	first, err := in.peek(1)
	if err != nil {
		return err
	}
	start := in.offset()
	hb, err := in.peek((int(first[0]) + 1) * 4)
	if err != nil {
		return err
	}
	hdr, err := parseBlockHeader(hb, start)
	if err != nil {
		return err
	}
	check := z.flags.check()
	if hdr.compSize < 0 || hdr.uncompSize < 0 || hdr.uncompSize > p.limit || hdr.compSize > p.limit {
		return p.decodeInline(z)
	}
	unpadded := int64(hdr.size) + hdr.compSize + int64(check.Size())
	raw := (unpadded + 3) &^ 3 // the compressed data's padding included
	buf, ok := p.admit(hdr.uncompSize+raw, hdr.uncompSize)
	if !ok {
		return p.ctx.Err()
	}
	j := p.newJob(BlockInfo{Offset: start, UnpaddedSize: unpadded, UncompressedSize: hdr.uncompSize},
		check, buf, hdr.uncompSize+raw)
	// Like the decoded bytes, the compressed ones are bounded by the
	// budget, not by what the input turns out to hold.
	data := p.rawBuffer(raw)
	if err := in.readFull(data); err != nil {
		p.putRaw(data)
		p.release(j)
		return err
	}
	j.src = &bytesAt{b: data, base: start}
	// The worker checks the block's data against these sizes.
	z.records = append(z.records, indexRecord{unpadded, hdr.uncompSize})
	if !p.enqueue(j) || !p.assign(j) {
		return p.ctx.Err()
	}
	return nil
}

// decodeInline decodes the block at z's input position here, into jobs of
// inlineChunk bytes the reader streams as they fill.
func (p *parallelReader) decodeInline(z *Reader) error {
	start := z.in.offset()
	if err := z.startBlock(); err != nil {
		return err
	}
	var j *pjob
	n := 0
	finish := func() {
		if j != nil {
			close(j.finished)
			j = nil
		}
	}
	defer finish()
	for {
		if err := p.ctx.Err(); err != nil {
			return err
		}
		span, err := z.blk.next()
		if err == io.EOF {
			z.records = append(z.records, indexRecord{z.blk.unpadded, z.blk.out})
			return nil
		}
		if err != nil {
			return err
		}
		for len(span) > 0 {
			if j == nil {
				buf, ok := p.admit(inlineChunk, inlineChunk)
				if !ok {
					return p.ctx.Err()
				}
				j = p.newJob(BlockInfo{Offset: start}, z.flags.check(), buf, inlineChunk)
				n = 0
				if !p.enqueue(j) {
					return p.ctx.Err()
				}
			}
			k := copy(j.buf[n:], span)
			span = span[k:]
			n += k
			j.done.Store(int64(n))
			select {
			case j.progress <- struct{}{}:
			default:
			}
			if n == len(j.buf) {
				finish()
			}
		}
	}
}

// bytesAt is a block's compressed bytes read from a stream, at their
// offsets in it, so that errors name the offset in the input.
type bytesAt struct {
	b    []byte
	base int64
}

func (r *bytesAt) ReadAt(p []byte, off int64) (int, error) {
	off -= r.base
	if off < 0 || off >= int64(len(r.b)) {
		return 0, io.EOF
	}
	n := copy(p, r.b[off:])
	if n < len(p) {
		return n, io.EOF
	}
	return n, nil
}

// rawBuffer returns a buffer of n bytes for a block's compressed bytes,
// one a decoded block gave back when it is large enough.
func (p *parallelReader) rawBuffer(n int64) []byte {
	p.mu.Lock()
	defer p.mu.Unlock()
	for i, f := range p.rawFree {
		if int64(cap(f)) >= n {
			p.rawFree = append(p.rawFree[:i], p.rawFree[i+1:]...)
			return f[:n]
		}
	}
	return make([]byte, n)
}

// putRaw keeps a block's compressed bytes' buffer for the next block.
func (p *parallelReader) putRaw(b []byte) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if len(p.rawFree) < p.maxJobs {
		p.rawFree = append(p.rawFree, b)
	}
}
