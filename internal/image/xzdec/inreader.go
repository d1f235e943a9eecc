package xzdec

import (
	"errors"
	"io"
)

// inBufSize is large enough to hold a whole LZMA2 chunk (64 KiB of
// compressed data plus its header) contiguously, and large enough that
// reads from files or pipes are few.
const inBufSize = 1 << 20

// inReader buffers the compressed input and tracks the absolute offset of
// every byte so errors can name it. Slices it returns stay valid until the
// next call that reads more input.
type inReader struct {
	r    io.Reader
	buf  []byte
	rpos int
	wpos int
	base int64 // compressed offset of buf[0]
	err  error // sticky read error (io.EOF included)
	idle int   // consecutive empty reads
}

func newInReader(r io.Reader, base int64, size int) *inReader {
	return &inReader{r: r, buf: make([]byte, size), base: base}
}

// offset is the compressed offset of the next unread byte.
func (in *inReader) offset() int64 { return in.base + int64(in.rpos) }

// peek returns the next n bytes without consuming them. n must not exceed
// the buffer size. A short input gives an ErrTruncated *Error.
func (in *inReader) peek(n int) ([]byte, error) {
	for in.wpos-in.rpos < n {
		if in.err != nil {
			if in.err == io.EOF {
				return nil, errAt(in.base+int64(in.wpos), ErrTruncated, "unexpected end of input")
			}
			return nil, &Error{Offset: in.base + int64(in.wpos), Err: in.err}
		}
		in.fill(n)
	}
	return in.buf[in.rpos : in.rpos+n], nil
}

// fill reads more input, first moving unread bytes to the front if the
// request would not fit.
func (in *inReader) fill(n int) {
	if in.rpos+n > len(in.buf) {
		m := copy(in.buf, in.buf[in.rpos:in.wpos])
		in.base += int64(in.rpos)
		in.rpos, in.wpos = 0, m
	}
	in.wpos += in.read(in.buf[in.wpos:])
}

// read reads once from the input into p and returns the count, keeping
// the error sticky in in.err.
func (in *inReader) read(p []byte) int {
	k, err := in.r.Read(p)
	if k < 0 || k > len(p) {
		k, err = 0, errors.New("input reader returned an invalid count")
	}
	switch {
	case err != nil:
		in.err = err
	case k > 0:
		in.idle = 0
	default:
		// io.Reader allows empty reads; tolerate a few but never spin.
		if in.idle++; in.idle > 100 {
			in.err = io.ErrNoProgress
		}
	}
	return k
}

// buffered returns the unread bytes already read from the input: after a
// short peek, everything that is left.
func (in *inReader) buffered() []byte { return in.buf[in.rpos:in.wpos] }

// next consumes and returns the next n bytes.
func (in *inReader) next(n int) ([]byte, error) {
	b, err := in.peek(n)
	if err == nil {
		in.rpos += n
	}
	return b, err
}

// atEOF reports whether the input is exhausted, reading if needed.
func (in *inReader) atEOF() (bool, error) {
	for in.wpos == in.rpos {
		if in.err != nil {
			if in.err == io.EOF {
				return true, nil
			}
			return false, &Error{Offset: in.base + int64(in.wpos), Err: in.err}
		}
		in.fill(1)
	}
	return false, nil
}

// readFull consumes len(dst) bytes into dst: what is buffered first, the
// rest read from the input straight into dst, not through buf (a stream's
// whole block, read for a worker). A short input gives an ErrTruncated
// *Error at the offset where it ended.
func (in *inReader) readFull(dst []byte) error {
	n := copy(dst, in.buf[in.rpos:in.wpos])
	in.rpos += n
	if n == len(dst) {
		return nil
	}
	in.base += int64(in.wpos)
	in.rpos, in.wpos = 0, 0
	for n < len(dst) {
		if in.err != nil {
			if in.err == io.EOF {
				return errAt(in.base, ErrTruncated, "unexpected end of input")
			}
			return &Error{Offset: in.base, Err: in.err}
		}
		k := in.read(dst[n:])
		n += k
		in.base += int64(k)
	}
	return nil
}
