package pipeline

import (
	"io"
	"time"

	"usbflash/internal/aligned"
)

// ring is a fixed set of equally sized aligned buffers passed between a
// producer and a consumer as indices over two channels. All memory is
// allocated once in newRing; passing a buffer costs one channel send, no
// allocation and no copy.
type ring struct {
	bufs [][]byte
	free chan int  // buffers the producer may fill
	full chan fill // filled buffers, in order
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

// newRing allocates count buffers of size bytes from one slice, each
// starting on a page boundary. All buffers start free.
func newRing(count, size int) *ring {
	stride := roundUp(size, aligned.Alignment())
	mem := aligned.Bytes(stride * count)
	r := &ring{
		bufs: make([][]byte, count),
		free: make(chan int, count),
		full: make(chan fill, count),
	}
	for i := range r.bufs {
		r.bufs[i] = mem[i*stride : i*stride+size : i*stride+size]
		r.free <- i
	}
	return r
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

// since is time.Since with the clock read passed back, so a loop can chain
// measurements with one clock read per boundary.
func since(t time.Time) (time.Duration, time.Time) {
	now := time.Now()
	return now.Sub(t), now
}
