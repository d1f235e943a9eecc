package xzdec

import (
	"context"
	"errors"
	"io"
	"runtime"
	"sync"
	"sync/atomic"
)

// DefaultMaxInFlight is the default cap on decoded bytes held in memory by
// the parallel decoder.
const DefaultMaxInFlight = 256 << 20

// Options configures NewParallelReader.
//
// Parallel xz decoding: when the input is a seekable file whose index lists
// more than one block (files made by `xz -T0`, `xz -T2`, `xz --block-size`
// or pixz), blocks are decoded concurrently on Workers goroutines (default:
// GOMAXPROCS) and delivered in order. Memory is bounded by MaxInFlight
// (default 256 MiB): the decoded bytes of the blocks being decoded or
// waiting to be read, and at most 2 blocks per worker. The block being read
// is streamed out while it decodes, so even one block at a time keeps
// output flowing. Blocks are admitted in order while they fit; `xz -6 -T0`
// makes 24 MiB blocks (up to 4 in flight with 2 workers), while `xz -9 -T0`
// makes 192 MiB blocks, which need MaxInFlight of 384 MiB or more to decode
// two at once. Files with a single block, files with a block larger than
// MaxInFlight, and Workers == 1 use the streaming single-threaded decoder
// instead, which holds one dictionary (8 MiB for xz -6, 64 MiB for xz -9).
type Options struct {
	// Workers is the number of blocks decoded at once; 0 means GOMAXPROCS.
	Workers int
	// MaxInFlight caps decoded bytes held in memory; 0 means
	// DefaultMaxInFlight.
	MaxInFlight int64
}

// NewParallelReader decodes the .xz file in ra (size bytes) using multiple
// goroutines when its index allows, and the streaming decoder otherwise.
// The result implements io.WriterTo, which hands w the decoded blocks
// directly without an intermediate copy. Callers must Close it (or read to
// io.EOF) so the workers exit; cancelling ctx stops them too and makes Read
// return ctx.Err().
func NewParallelReader(ctx context.Context, ra io.ReaderAt, size int64, opt Options) (io.ReadCloser, error) {
	idx, err := ReadIndex(ra, size)
	if err != nil {
		return nil, err
	}
	return NewParallelReaderIndex(ctx, ra, size, idx, opt)
}

// NewParallelReaderIndex is NewParallelReader for a caller that has already
// read the index with ReadIndex (to learn the decoded size, say), so that it
// is parsed once. idx must be ReadIndex's result for the same ra and size.
func NewParallelReaderIndex(ctx context.Context, ra io.ReaderAt, size int64, idx *Index, opt Options) (io.ReadCloser, error) {
	workers := opt.Workers
	if workers <= 0 {
		workers = runtime.GOMAXPROCS(0)
	}
	limit := opt.MaxInFlight
	if limit <= 0 {
		limit = DefaultMaxInFlight
	}
	streaming := len(idx.Blocks) <= 1 || workers == 1
	for _, b := range idx.Blocks {
		if b.UncompressedSize > limit {
			streaming = true
		}
	}
	if streaming {
		z, err := NewReader(io.NewSectionReader(ra, 0, size))
		if err != nil {
			return nil, err
		}
		return &streamCloser{z: z, ctx: ctx}, nil
	}
	workers = min(workers, len(idx.Blocks))
	ctx, cancel := context.WithCancel(ctx)
	p := &parallelReader{
		ctx: ctx, cancel: cancel, ra: ra, idx: idx,
		limit: limit, maxJobs: 2 * workers,
		queue:    make(chan *pjob, 2*workers),
		jobs:     make(chan *pjob),
		released: make(chan struct{}, 1),
	}
	p.wg.Add(workers + 1)
	go p.dispatch()
	for i := 0; i < workers; i++ {
		go p.work()
	}
	return p, nil
}

// streamCloser adapts the streaming Reader to io.ReadCloser, honouring ctx
// between reads as the parallel reader does.
type streamCloser struct {
	z   *Reader
	ctx context.Context
}

func (s *streamCloser) Read(p []byte) (int, error) {
	if err := s.ctx.Err(); err != nil {
		return 0, err
	}
	return s.z.Read(p)
}

// WriteTo keeps the streaming Reader's zero-copy path.
func (s *streamCloser) WriteTo(w io.Writer) (int64, error) {
	return s.z.WriteTo(ctxWriter{w: w, ctx: s.ctx})
}

func (s *streamCloser) Close() error { return nil }

// ctxWriter stops a WriteTo loop when ctx is cancelled.
type ctxWriter struct {
	w   io.Writer
	ctx context.Context
}

func (c ctxWriter) Write(p []byte) (int, error) {
	if err := c.ctx.Err(); err != nil {
		return 0, err
	}
	return c.w.Write(p)
}

type parallelReader struct {
	ctx    context.Context
	cancel context.CancelFunc
	ra     io.ReaderAt
	idx    *Index
	wg     sync.WaitGroup

	queue chan *pjob // admitted blocks in file order, to the reader
	jobs  chan *pjob // admitted blocks, to the workers

	limit   int64
	maxJobs int

	mu       sync.Mutex
	inFlight int64
	nJobs    int
	free     [][]byte
	rawFree  [][]byte // a stream's compressed blocks' buffers
	released chan struct{}

	cur  *pjob
	read int
	err  error
}

// pjob is one block being decoded. done is published after each decoded
// span so the reader can stream the head block while it is still decoding.
type pjob struct {
	info  BlockInfo
	check CheckType
	// src holds the block's compressed bytes at their offsets in the
	// input; nil means the parallelReader's ra. A stream's blocks are read
	// into memory whole (NewParallelStreamReader).
	src      io.ReaderAt
	cost     int64 // what the job holds against the budget
	buf      []byte
	done     atomic.Int64
	progress chan struct{}
	finished chan struct{}
	err      error // valid after finished is closed
}

// dispatch admits blocks in order as memory allows.
func (p *parallelReader) dispatch() {
	defer p.wg.Done()
	defer close(p.jobs)
	defer close(p.queue)
	for _, b := range p.idx.Blocks {
		buf, ok := p.admit(b.UncompressedSize, b.UncompressedSize)
		if !ok {
			return
		}
		j := p.newJob(b, p.idx.Streams[b.Stream].Check, buf, b.UncompressedSize)
		if !p.enqueue(j) || !p.assign(j) {
			return
		}
	}
}

func (p *parallelReader) newJob(b BlockInfo, check CheckType, buf []byte, cost int64) *pjob {
	return &pjob{
		info: b, check: check, buf: buf, cost: cost,
		progress: make(chan struct{}, 1), finished: make(chan struct{}),
	}
}

// enqueue hands j to the reader, in input order.
func (p *parallelReader) enqueue(j *pjob) bool {
	select {
	case p.queue <- j:
		return true
	case <-p.ctx.Done():
		return false
	}
}

// assign hands j to a worker.
func (p *parallelReader) assign(j *pjob) bool {
	select {
	case p.jobs <- j:
		return true
	case <-p.ctx.Done():
		return false
	}
}

// admit waits until a job costing cost bytes fits the budget and returns
// an output buffer of n bytes. A job is always admitted when nothing else
// is in flight.
func (p *parallelReader) admit(cost, n int64) ([]byte, bool) {
	for {
		p.mu.Lock()
		if p.nJobs == 0 || (p.inFlight+cost <= p.limit && p.nJobs < p.maxJobs) {
			p.inFlight += cost
			p.nJobs++
			var buf []byte
			for i, f := range p.free {
				if int64(cap(f)) >= n {
					buf = f[:n]
					p.free = append(p.free[:i], p.free[i+1:]...)
					break
				}
			}
			p.mu.Unlock()
			if buf == nil {
				buf = make([]byte, n)
			}
			return buf, true
		}
		p.mu.Unlock()
		select {
		case <-p.released:
		case <-p.ctx.Done():
			return nil, false
		}
	}
}

// release returns a fully read block's budget and buffer.
func (p *parallelReader) release(j *pjob) {
	p.mu.Lock()
	p.inFlight -= j.cost
	p.nJobs--
	if len(p.free) < p.maxJobs/2 {
		p.free = append(p.free, j.buf)
	}
	p.mu.Unlock()
	select {
	case p.released <- struct{}{}:
	default:
	}
}

// work decodes blocks until the job channel closes.
func (p *parallelReader) work() {
	defer p.wg.Done()
	var lz lzma2Dec
	var in *inReader
	for {
		// A stream's dispatcher may be stuck in a read when the reader is
		// closed: the workers do not wait for it to close jobs.
		var j *pjob
		select {
		case j = <-p.jobs:
		case <-p.ctx.Done():
			return
		}
		if j == nil {
			return
		}
		err := p.decode(j, &lz, &in)
		if errors.Is(err, ErrTruncated) {
			// The file's size was validated by ReadIndex (a stream's block
			// was read whole), so running out of input means the block
			// overran the size its index (or header) records.
			end := j.info.Offset + (j.info.UnpaddedSize+3)&^3
			what := "index"
			if j.src != nil {
				what = "header"
			}
			err = errAt(end, ErrFormat, "block at offset %d runs past the size its %s records", j.info.Offset, what)
		}
		if src, ok := j.src.(*bytesAt); ok {
			j.src = nil
			p.putRaw(src.b)
		}
		j.err = err
		close(j.finished)
	}
}

// decode decodes one block into j.buf, cross-checking it against the
// index. For unfiltered blocks j.buf is the LZMA window itself, so output
// is written exactly once.
func (p *parallelReader) decode(j *pjob, lz *lzma2Dec, inp **inReader) error {
	b := j.info
	end := b.Offset + (b.UnpaddedSize+3)&^3
	src := j.src
	if src == nil {
		src = p.ra
	}
	sr := io.NewSectionReader(src, b.Offset, end-b.Offset)
	if *inp == nil {
		*inp = newInReader(sr, b.Offset, inBufSize)
	} else {
		in := *inp
		*in = inReader{r: sr, buf: in.buf, base: b.Offset}
	}
	in := *inp
	first, err := in.peek(1)
	if err != nil {
		return err
	}
	if first[0] == 0 {
		return errAt(b.Offset, ErrFormat, "index points to a block, found an index")
	}
	hdr, start, err := readBlockHeader(in)
	if err != nil {
		return err
	}
	if len(hdr.filters) == 1 {
		lz.lz.w.setFixed(j.buf)
	} else {
		lz.lz.w.setStreaming(windowMax(hdr))
	}
	defer func() { lz.lz.w.setStreaming(0) }() // drop the reference to j.buf
	var blk blockDec
	if err := blk.init(in, start, hdr, j.check, lz, b.UnpaddedSize, b.UncompressedSize); err != nil {
		return err
	}
	n := 0
	for {
		if err := p.ctx.Err(); err != nil {
			return err
		}
		span, err := blk.next()
		if err == io.EOF {
			return nil
		}
		if err != nil {
			return err
		}
		if len(span) > len(j.buf)-n {
			return errAt(in.offset(), ErrFormat, "block decodes to more than the index says")
		}
		if &span[0] != &j.buf[n] {
			copy(j.buf[n:], span)
		}
		n += len(span)
		j.done.Store(int64(n))
		select {
		case j.progress <- struct{}{}:
		default:
		}
	}
}

// avail blocks until decoded bytes are available and returns them.
func (p *parallelReader) avail() ([]byte, error) {
	for p.err == nil {
		if p.cur == nil {
			select {
			case j, ok := <-p.queue:
				if !ok {
					if err := p.ctx.Err(); err != nil {
						p.err = err
					} else {
						p.err = io.EOF
					}
					continue
				}
				p.cur, p.read = j, 0
			case <-p.ctx.Done():
				p.err = p.ctx.Err()
				continue
			}
		}
		j := p.cur
		if d := int(j.done.Load()); d > p.read {
			return j.buf[p.read:d], nil
		}
		select {
		case <-j.finished:
			if d := int(j.done.Load()); d > p.read {
				return j.buf[p.read:d], nil
			}
			if j.err != nil {
				p.err = j.err
				p.cancel()
				continue
			}
			p.cur = nil
			p.release(j)
		case <-j.progress:
		case <-p.ctx.Done():
			p.err = p.ctx.Err()
		}
	}
	return nil, p.err
}

// Read implements io.Reader.
func (p *parallelReader) Read(b []byte) (int, error) {
	s, err := p.avail()
	if err != nil {
		return 0, err
	}
	n := copy(b, s)
	p.read += n
	return n, nil
}

// WriteTo implements io.WriterTo straight from the block buffers.
func (p *parallelReader) WriteTo(w io.Writer) (int64, error) {
	var total int64
	for {
		s, err := p.avail()
		if err == io.EOF {
			return total, nil
		}
		if err != nil {
			return total, err
		}
		n, err := w.Write(s)
		total += int64(n)
		p.read += n
		if err != nil {
			return total, err
		}
		if n < len(s) {
			return total, io.ErrShortWrite
		}
	}
}

// Close stops all goroutines and waits for them.
func (p *parallelReader) Close() error {
	p.cancel()
	p.wg.Wait()
	if p.err == nil {
		p.err = errClosed
	}
	return nil
}
