package imagedst

import (
	"bytes"
	"io"

	"github.com/ulikunitz/xz"
)

// compressFunc compresses one chunk into a complete, independent frame or
// stream, appending to out (which it may reallocate).
type compressFunc func(src, out []byte) ([]byte, error)

// parallelWriter cuts its input into chunks, compresses up to workers of
// them at once, and writes the results in order. Memory is bounded: at most
// workers+1 chunks are in flight, and their buffers are reused.
type parallelWriter struct {
	dst      io.Writer
	compress compressFunc
	chunk    int
	cur      []byte
	queue    []*job // in flight, in input order
	free     chan *job
	limit    int
	wrote    bool // at least one chunk was submitted
	err      error
}

type job struct {
	in, out []byte
	err     error
	done    chan struct{}
}

func newParallelWriter(dst io.Writer, workers, chunk int, compress compressFunc) *parallelWriter {
	limit := workers + 1
	w := &parallelWriter{dst: dst, compress: compress, chunk: chunk, limit: limit, free: make(chan *job, limit)}
	for range limit {
		w.free <- &job{in: make([]byte, 0, chunk), done: make(chan struct{}, 1)}
	}
	return w
}

func (w *parallelWriter) Write(p []byte) (int, error) {
	n := len(p)
	for len(p) > 0 && w.err == nil {
		if w.cur == nil {
			j := w.take()
			if w.err != nil {
				break
			}
			w.queue = append(w.queue, j)
			w.cur = j.in[:0]
		}
		k := min(len(p), w.chunk-len(w.cur))
		w.cur = append(w.cur, p[:k]...)
		p = p[k:]
		if len(w.cur) == w.chunk {
			w.submit()
		}
	}
	if w.err != nil {
		return 0, w.err
	}
	return n, nil
}

// take gets a free job, first writing out the oldest when all are busy.
func (w *parallelWriter) take() *job {
	select {
	case j := <-w.free:
		return j
	default:
	}
	w.flushOldest()
	return <-w.free
}

func (w *parallelWriter) submit() {
	j := w.queue[len(w.queue)-1]
	j.in, w.cur = w.cur, nil
	w.wrote = true
	go func() {
		j.out, j.err = w.compress(j.in, j.out)
		j.done <- struct{}{}
	}()
}

// flushOldest waits for the oldest chunk and writes it.
func (w *parallelWriter) flushOldest() {
	j := w.queue[0]
	<-j.done
	w.queue = w.queue[1:]
	if w.err == nil {
		w.err = j.err
	}
	if w.err == nil {
		_, w.err = w.dst.Write(j.out)
	}
	w.free <- j
}

// Close compresses what is left (an empty input still makes one empty
// frame, so the file is valid) and writes everything in order.
func (w *parallelWriter) Close() error {
	if w.cur == nil && !w.wrote && w.err == nil {
		j := w.take()
		w.queue = append(w.queue, j)
		w.cur = j.in[:0]
	}
	if w.cur != nil { // never empty but for the empty input above
		w.submit()
	}
	for len(w.queue) > 0 {
		w.flushOldest()
	}
	return w.err
}

// xzChunk is the uncompressed size of each xz stream: as xz -T0 cuts its
// blocks (3 x the 8 MiB dictionary of preset 6 would be 24 MiB; 8 MiB
// keeps two cores busy on small images and the memory low).
const xzChunk = 8 << 20

// newXzWriter writes one complete xz stream per chunk, compressed in
// parallel. Concatenated streams are one valid .xz file: xz -dc reads
// them, and usbflash decodes their blocks in parallel from the indexes.
func newXzWriter(dst io.Writer, workers int) io.WriteCloser {
	cfg := xz.WriterConfig{DictCap: xzChunk, CheckSum: xz.CRC64}
	return newParallelWriter(dst, workers, xzChunk, func(src, out []byte) ([]byte, error) {
		b := bytes.NewBuffer(out[:0])
		zw, err := cfg.NewWriter(b)
		if err != nil {
			return out, err
		}
		if _, err := zw.Write(src); err != nil {
			return out, err
		}
		if err := zw.Close(); err != nil {
			return out, err
		}
		return b.Bytes(), nil
	})
}
