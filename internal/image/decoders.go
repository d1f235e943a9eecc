package image

import (
	"bufio"
	"compress/bzip2"
	"fmt"
	"io"
	"runtime"
	"sync/atomic"

	"github.com/klauspost/compress/gzip"
	"github.com/klauspost/compress/zstd"
)

// zstdMaxWindow caps the zstd window the decoder will allocate. The zstd CLI
// refuses windows over 128 MiB unless told otherwise; 512 MiB admits images
// made with --long up to 29 while keeping a hostile header from asking for
// gigabytes on a small flashing host.
const zstdMaxWindow = 512 << 20

// byteReader is a buffered input: every decoder here reads byte by byte from
// an io.ByteReader without buffering (and copying) again.
type byteReader interface {
	io.Reader
	io.ByteScanner
	Peek(n int) ([]byte, error)
}

// streamDecoder is a decoder reading its input in order, and where in
// that input it is.
type streamDecoder struct {
	io.Reader
	close func() error // nil: nothing to release
	// pos is how many input bytes the decoder has consumed: not what was
	// read ahead into a buffer, but what it decoded or is decoding.
	pos func() int64
}

// newStreamDecoder wraps r in the decoder for f. r.Buffered() bytes of what
// inputRead says was read into r are not consumed yet.
func newStreamDecoder(f Format, r *bufio.Reader, inputRead func() int64) (streamDecoder, error) {
	switch f {
	case FormatGzip:
		// flate reads a *bufio.Reader directly, on the caller's goroutine.
		pos := func() int64 { return inputRead() - int64(r.Buffered()) }
		z, err := gzip.NewReader(r)
		if err != nil {
			return streamDecoder{pos: pos}, err
		}
		z.Multistream(false)
		return streamDecoder{&gzipMembers{r: r, z: z, pos: pos}, z.Close, pos}, nil
	case FormatXz:
		// xzdec names the offsets in its errors itself.
		d, err := newXzDecoder(r)
		if err != nil {
			return streamDecoder{}, err
		}
		return streamDecoder{Reader: d, close: d.Close}, nil
	case FormatZstd:
		// zstd reads its input on goroutines of its own.
		in := &countingReader{r: r}
		d, err := zstd.NewReader(in, zstdOptions()...)
		if err != nil {
			return streamDecoder{pos: in.n.Load}, err
		}
		return streamDecoder{d, func() error { d.Close(); return nil }, in.n.Load}, nil
	case FormatBzip2:
		b := newBzip2Streams(r)
		return streamDecoder{b, nil, func() int64 { return b.in.n }}, nil
	case FormatLz4:
		// lz4 reads a *bufio.Reader on the caller's goroutine, as flate.
		pos := func() int64 { return inputRead() - int64(r.Buffered()) }
		return streamDecoder{newLz4Decoder(r), nil, pos}, nil

	}
	return streamDecoder{}, fmt.Errorf("no stream decoder for %s", f)
}

// countingReader counts what a decoder reading on other goroutines took.
type countingReader struct {
	r io.Reader
	n atomic.Int64
}

func (c *countingReader) Read(p []byte) (int, error) {
	n, err := c.r.Read(p)
	c.n.Add(int64(n))
	return n, err
}

// atError places a decoder's error at an input offset it knows better than
// how far the input was consumed: where trailing data starts.
type atError struct {
	offset int64
	err    error
}

func (e *atError) Error() string { return e.err.Error() }
func (e *atError) Unwrap() error { return e.err }

// errTrailing is the cause for data after the end of an archive that is
// not another member, stream or frame of it.
func errTrailing(what string) error {
	return fmt.Errorf("data after the end of the last %s is not another one", what)
}

// zstdOptions configures zstd for streaming an image: frames and skippable
// frames in sequence, a bounded window, and at most two decoding goroutines:
// the flashing host also runs the USB writer, and more in-flight blocks do
// not help a single stream.
func zstdOptions() []zstd.DOption {
	return []zstd.DOption{
		zstd.WithDecoderLowmem(false),
		zstd.WithDecoderConcurrency(min(2, runtime.GOMAXPROCS(0))),
		zstd.WithDecoderMaxWindow(zstdMaxWindow),
		zstd.WithDecoderMaxMemory(zstdMaxWindow),
	}
}

// gzipMembers reads concatenated gzip members as one image (pigz, `cat a.gz
// b.gz`) and, as GNU gzip does ("decompression OK, trailing zero bytes
// ignored"), accepts zero bytes after the last member: images copied from a
// block device or padded to a sector end that way. Anything else after a
// member must be another member; what is not is trailing data, placed where
// it starts, and only a lone 0x1f, the start of a member's magic, is the
// next member cut short.
type gzipMembers struct {
	r    byteReader
	z    *gzip.Reader
	pos  func() int64
	done bool
}

func (g *gzipMembers) Read(p []byte) (int, error) {
	for !g.done {
		n, err := g.z.Read(p)
		if err != io.EOF {
			return n, err
		}
		more, err := g.nextMember()
		if err != nil {
			return n, err
		}
		g.done = !more
		if n > 0 {
			return n, nil
		}
	}
	return 0, io.EOF
}

// nextMember starts the member that follows the one just finished; false
// at the end of the input, or of the zero padding that ends it.
func (g *gzipMembers) nextMember() (bool, error) {
	b, err := g.r.Peek(2)
	switch {
	case len(b) == 0 && err == io.EOF:
		return false, nil
	case len(b) == 0:
		return false, err
	case b[0] == 0:
		return false, g.skipZeros()
	case len(b) == 1 && b[0] == 0x1f && err == io.EOF:
		return false, io.ErrUnexpectedEOF
	case len(b) < 2 && err != io.EOF:
		return false, err
	case len(b) < 2 || b[0] != 0x1f || b[1] != 0x8b:
		return false, &atError{g.pos(), fmt.Errorf("%w: %w", errTrailing("member"), gzip.ErrHeader)}
	}
	if err := g.z.Reset(g.r); err != nil {
		if err == io.EOF {
			err = io.ErrUnexpectedEOF
		}
		return false, err
	}
	g.z.Multistream(false)
	return true, nil
}

// skipZeros reads zero padding to the end of the input.
func (g *gzipMembers) skipZeros() error {
	for {
		b, err := g.r.ReadByte()
		switch {
		case err == io.EOF:
			return nil
		case err != nil:
			return err
		case b != 0:
			return &atError{g.pos() - 1, fmt.Errorf("%w: data after the zero padding that follows the last member", gzip.ErrHeader)}
		}
	}
}

// bzip2Streams decodes bzip2 as bzip2 -d does: concatenated streams (pbzip2
// output) are one image, and once a stream has ended, whatever follows that
// does not begin with a stream header ("BZh" and a level digit) is ignored
// ("trailing garbage after EOF ignored"): zero padding to a sector, or bytes
// a download appended. compress/bzip2 decodes concatenated streams itself
// but fails on anything else after one; bzip2Streams tells that failure
// from damage by what the decoder had consumed. Input that ends inside a
// stream header ("B", "BZ", "BZh", "BZh9") is still truncated, as bzip2 says.
type bzip2Streams struct {
	in  *bzip2Input
	dec io.Reader
}

func newBzip2Streams(r byteReader) *bzip2Streams {
	in := &bzip2Input{r: r}
	return &bzip2Streams{in: in, dec: bzip2.NewReader(in)}
}

func (b *bzip2Streams) Read(p []byte) (int, error) {
	n, err := b.dec.Read(p)
	if err != nil && err != io.EOF && b.trailing(err) {
		err = io.EOF
	}
	return n, err
}

// trailing reports whether err is compress/bzip2 failing on what follows
// the end of a stream, which bzip2 ignores.
func (b *bzip2Streams) trailing(err error) bool {
	switch err {
	case bzip2.StructuralError("bad magic value in continuation file"):
		// Two bytes after a stream, not "BZ".
		return true
	case bzip2.StructuralError("non-Huffman entropy encoding"), bzip2.StructuralError("invalid compression level"):
		// "BZ" and no "h", or "BZh" and no level digit. These come from
		// the stream header, which the first stream's is only at the
		// start of the input.
		return b.in.n > 4
	case io.ErrUnexpectedEOF:
		// One byte after a stream (compress/bzip2 reads two at once),
		// unless it is the "B" of a header cut short.
		return b.in.last(0) != 'B' && b.in.n > 1 && bzip2EndsStream(b.in, 1)
	}
	return false
}

// bzip2EndMagic opens the end-of-stream record: 48 bits, then the stream's
// 32-bit CRC, then zero bits to the byte boundary.
const bzip2EndMagic = 0x177245385090

// bzip2EndsStream reports whether the input consumed up to skip bytes from
// its end closes a bzip2 stream: the end-of-stream record, at any of the
// eight bit alignments, in the last 11 bytes before them.
func bzip2EndsStream(in *bzip2Input, skip int) bool {
	const n = 11 // 80 bits of record, up to 7 of padding, and the rest of a byte
	if in.n < int64(skip)+n {
		return false
	}
	var tail [n]byte
	for i := range tail {
		tail[i] = in.last(skip + n - 1 - i)
	}
	bits := func(from, count int) uint64 { // most significant bit first
		var v uint64
		for i := from; i < from+count; i++ {
			v = v<<1 | uint64(tail[i/8]>>(7-i%8)&1)
		}
		return v
	}
	for pad := range 8 {
		end := 8*n - pad // the record ends here; zero bits follow
		if bits(end-80, 48) == bzip2EndMagic && bits(end, pad) == 0 {
			return true
		}
	}
	return false
}

// bzip2Input is compress/bzip2's byte source: it counts what the decoder
// consumed and keeps the last bytes, for bzip2Streams to read its errors.
type bzip2Input struct {
	r    byteReader
	n    int64
	ring [16]byte
}

func (in *bzip2Input) ReadByte() (byte, error) {
	c, err := in.r.ReadByte()
	if err == nil {
		in.ring[in.n%int64(len(in.ring))] = c
		in.n++
	}
	return c, err
}

// Read is there for io.Reader; compress/bzip2 reads byte by byte.
func (in *bzip2Input) Read(p []byte) (int, error) {
	if len(p) == 0 {
		return 0, nil
	}
	c, err := in.ReadByte()
	if err != nil {
		return 0, err
	}
	p[0] = c
	return 1, nil
}

// last is the byte consumed back bytes before the most recent one.
func (in *bzip2Input) last(back int) byte {
	return in.ring[(in.n-1-int64(back))%int64(len(in.ring))]
}
