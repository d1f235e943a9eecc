package image

import (
	"errors"
	"io"
	"sync/atomic"
)

// inputMeter records how far into the compressed input the decoder has read
// and the first I/O error the input returned. Some decoders (zstd) read their
// input on a goroutine of their own, and progress is polled from yet another,
// hence atomics.
type inputMeter struct {
	reached atomic.Int64
	ioErr   atomic.Pointer[error]
}

// advanceTo raises reached to pos; it never moves backwards, because ReadAt
// callers (zip) may revisit earlier offsets.
func (m *inputMeter) advanceTo(pos int64) {
	for {
		cur := m.reached.Load()
		if pos <= cur || m.reached.CompareAndSwap(cur, pos) {
			return
		}
	}
}

// reset forgets reads made while opening (a zip directory at the end of the
// file), so progress starts from where the image data is read.
func (m *inputMeter) reset() { m.reached.Store(0) }

func (m *inputMeter) noteErr(err error) {
	if err != nil && !errors.Is(err, io.EOF) {
		m.ioErr.CompareAndSwap(nil, &err)
	}
}

func (m *inputMeter) failure() error {
	if p := m.ioErr.Load(); p != nil {
		return *p
	}
	return nil
}

// meteredReader counts a sequential input.
type meteredReader struct {
	r   io.Reader
	m   *inputMeter
	pos int64
}

func (r *meteredReader) Read(p []byte) (int, error) {
	n, err := r.r.Read(p)
	r.pos += int64(n)
	r.m.advanceTo(r.pos)
	r.m.noteErr(err)
	return n, err
}

// meteredReaderAt counts the furthest byte read from a random-access input.
type meteredReaderAt struct {
	ra io.ReaderAt
	m  *inputMeter
}

func (r *meteredReaderAt) ReadAt(p []byte, off int64) (int, error) {
	n, err := r.ra.ReadAt(p, off)
	if n > 0 { // a failed read past the end reaches nothing
		r.m.advanceTo(off + int64(n))
	}
	r.m.noteErr(err)
	return n, err
}
