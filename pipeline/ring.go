package pipeline

import (
	"context"
	"io"
	"time"
)

// ring is a fixed set of equally sized buffers passed between one producer
// and one consumer. The producer takes a free buffer, fills it and hands it
// over; the consumer receives the filled buffers in order and gives each
// back. The memory comes from the caller (the device's or aligned Go
// memory, see memory.go); passing a buffer costs one channel send, no
// allocation and no copy.
type ring struct {
	bufs [][]byte
	free chan int      // buffers the producer may fill
	full chan fill     // filled buffers, in order
	stop chan struct{} // closed when the consumer is done: take gives up

	// Each side writes only its own counter; the driver reads them after
	// the producer has stopped.
	takeWait time.Duration // producer waiting for a free buffer: the consumer is the bottleneck
	recvWait time.Duration // consumer waiting for a filled buffer: the producer is the bottleneck
}

// fill is one filled buffer handed to the consumer.
type fill struct {
	idx    int   // index into ring.bufs
	off    int64 // stream offset of the first byte
	n      int   // meaningful bytes
	padded int   // n rounded up to a whole block, the tail zeroed
	part   bool  // write only the pieces WriteOptions.Pieces chose
	// err is set on the last fill only: io.EOF for a clean end, anything
	// else is why the stream stopped (the n bytes before it are still valid).
	err error
}

// newRing passes bufs between the two sides; all start free.
func newRing(bufs [][]byte) *ring {
	r := &ring{
		bufs: bufs,
		free: make(chan int, len(bufs)),
		full: make(chan fill, len(bufs)),
		stop: make(chan struct{}),
	}
	for i := range bufs {
		r.free <- i
	}
	return r
}

// take waits for a free buffer for the producer. ok is false once the
// consumer has stopped: the producer returns.
func (r *ring) take() (idx int, buf []byte, ok bool) {
	t := time.Now()
	select {
	case idx = <-r.free:
		r.takeWait += time.Since(t)
		return idx, r.bufs[idx], true
	case <-r.stop:
		return 0, nil, false
	}
}

// hand passes a filled buffer to the consumer. It never blocks: full has
// room for every buffer.
func (r *ring) hand(f fill) { r.full <- f }

// receive waits for the next filled buffer, or for ctx to end.
func (r *ring) receive(ctx context.Context) (fill, error) {
	t := time.Now()
	select {
	case f := <-r.full:
		r.recvWait += time.Since(t)
		return f, nil
	case <-ctx.Done():
		r.recvWait += time.Since(t)
		return fill{}, ctx.Err()
	}
}

// tryReceive is the next filled buffer if one is waiting; it never waits.
func (r *ring) tryReceive() (fill, bool) {
	select {
	case f := <-r.full:
		return f, true
	default:
		return fill{}, false
	}
}

// data is the part of f's buffer that goes to the device: whole blocks.
func (r *ring) data(f fill) []byte { return r.bufs[f.idx][:f.padded] }

// giveBack returns a received buffer to the producer. It never blocks.
func (r *ring) giveBack(f fill) { r.free <- f.idx }

// A producer fills the ring's buffers in stream order on its own goroutine
// until its source ends (its last fill carries a non-nil err) or take
// reports that the consumer has stopped.
type producer interface {
	produce(r *ring)
}

// A consumer takes the filled buffers in order on the caller's goroutine.
type consumer interface {
	// begin runs once the producer has started, before the first buffer.
	begin() error
	// consume handles one filled buffer and gives it back to the ring (or
	// holds it); more=false ends the run.
	consume(f fill) (more bool, err error)
	// cancelled turns the context's error into the run's error.
	cancelled(cause error) error
}

// drive runs one producer/consumer pair over r: p on its own goroutine, c
// on the caller's, until c is done or fails or ctx ends. It returns only
// after p has stopped, so the buffers and p's state are the caller's again.
func drive(ctx context.Context, r *ring, p producer, c consumer) error {
	done := make(chan struct{})
	go func() {
		defer close(done)
		p.produce(r)
	}()
	err := consumeAll(ctx, r, c)
	close(r.stop)
	<-done
	return err
}

func consumeAll(ctx context.Context, r *ring, c consumer) error {
	if err := c.begin(); err != nil {
		return err
	}
	for {
		if err := ctx.Err(); err != nil {
			return c.cancelled(err)
		}
		f, err := r.receive(ctx)
		if err != nil {
			return c.cancelled(err)
		}
		more, err := c.consume(f)
		if err != nil || !more {
			return err
		}
	}
}

// readFull reads until p is full or the reader fails. Unlike io.ReadFull it
// returns the reader's own error unchanged (io.EOF at the end, whatever the
// n bytes), so a source's io.ErrUnexpectedEOF (a truncated archive) is not
// confused with a short last buffer.
func readFull(r io.Reader, p []byte) (int, error) {
	n, empty := 0, 0
	for n < len(p) {
		m, err := r.Read(p[n:])
		n += m
		if err != nil {
			return n, err
		}
		if m > 0 {
			empty = 0
			continue
		}
		// A reader that keeps returning 0, nil would spin forever.
		if empty++; empty > 100 {
			return n, io.ErrNoProgress
		}
	}
	return n, nil
}

// roundUp rounds n up to a multiple of m.
func roundUp(n, m int) int { return (n + m - 1) / m * m }
