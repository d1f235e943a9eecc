package httpsrc

import (
	"io"
	"sync"
	"sync/atomic"
	"time"
)

// The read-ahead ring: ReadAheadBuffers buffers of ReadAheadSize bytes.
const (
	ReadAheadBuffers = 4
	ReadAheadSize    = 1 << 20
	// ReadAheadMemory is the most a Body's read-ahead holds, which a
	// session counts with its other buffers.
	ReadAheadMemory = ReadAheadBuffers * ReadAheadSize
)

// A chunk is one buffer of the ring as its goroutine filled it.
type chunk struct {
	buf  []byte // the ring's buffer, given back once drained
	data []byte // what of buf Read has not delivered yet
	err  error  // after data: the end of the stream or why it cannot go on
}

// ring is a Body's read-ahead: a goroutine reads the network (resuming as
// Read would) into free buffers and queues them in order on full; Read
// copies from the chunk at the head. Each buffer is in exactly one of
// free, full, the goroutine's hands or Read's cur.
type ring struct {
	free   chan []byte // nil entries are buffers not made yet
	full   chan chunk
	cur    chunk         // Read's
	done   chan struct{} // closed by stop
	exited chan struct{} // closed when the goroutine returned
	once   sync.Once
}

// ReadAhead makes the body read the network ahead of Read, on a goroutine
// of its own, into at most ReadAheadMemory: a reader that decodes what it
// reads (gzip, xz) then decodes while the next bytes arrive, where
// otherwise each of its reads waited for the socket's copy and the
// resumes. Errors come after the bytes before them, as without it. Call it
// at most once, from Read's goroutine; Close ends the goroutine.
func (b *Body) ReadAhead() {
	if b.ahead != nil || b.err != nil {
		return
	}
	r := &ring{
		free:   make(chan []byte, ReadAheadBuffers),
		full:   make(chan chunk, ReadAheadBuffers),
		done:   make(chan struct{}),
		exited: make(chan struct{}),
	}
	for range ReadAheadBuffers {
		r.free <- nil // made on first use: a short body takes one
	}
	b.ahead = r
	go b.fill(r)
}

// fill is the read-ahead's goroutine: it reads into each free buffer and
// queues it, until the stream ended or failed (that chunk carries the
// error) or the ring is stopped.
func (b *Body) fill(r *ring) {
	defer close(r.exited)
	for {
		var buf []byte
		select {
		case buf = <-r.free:
		case <-r.done:
			return
		}
		if buf == nil {
			buf = make([]byte, ReadAheadSize)
		}
		n := 0
		var err error
		for n < len(buf) && err == nil {
			var m int
			m, err = b.read(buf[n:])
			n += m
			if len(r.full) == 0 {
				break // the reader has nothing queued: hand it what came
			}
		}
		select {
		case r.full <- chunk{buf: buf, data: buf[:n], err: err}:
		case <-r.done:
			return
		}
		if err != nil {
			return
		}
	}
}

// read copies the next bytes of the ring into p, waiting (counted in
// waited) when nothing is queued.
func (r *ring) read(p []byte, waited *atomic.Int64) (int, error) {
	select {
	case <-r.done:
		return 0, errClosed
	default:
	}
	for len(r.cur.data) == 0 {
		if r.cur.err != nil {
			return 0, r.cur.err
		}
		if r.cur.buf != nil {
			r.free <- r.cur.buf // never blocks: free has room for every buffer
			r.cur.buf = nil
		}
		select {
		case r.cur = <-r.full:
			continue
		default:
		}
		t := time.Now()
		select {
		case r.cur = <-r.full:
		case <-r.done:
			return 0, errClosed
		}
		waited.Add(int64(time.Since(t)))
	}
	n := copy(p, r.cur.data)
	r.cur.data = r.cur.data[n:]
	if len(r.cur.data) == 0 && r.cur.err == io.EOF {
		return n, io.EOF
	}
	return n, nil
}

// stop ends the goroutine and waits for it: a Read waiting on the ring
// returns errClosed. The caller cancels an attempt in flight first.
func (r *ring) stop() {
	r.once.Do(func() { close(r.done) })
	<-r.exited
}
