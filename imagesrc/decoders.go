package imagesrc

import (
	"compress/bzip2"
	"fmt"
	"io"
	"runtime"

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
}

// newStreamDecoder wraps r in the decoder for f. The returned close
// function, if any, releases decoder resources.
func newStreamDecoder(f Format, r byteReader) (io.Reader, func() error, error) {
	switch f {
	case FormatGzip:
		z, err := gzip.NewReader(r)
		if err != nil {
			return nil, nil, err
		}
		z.Multistream(false)
		return &gzipMembers{r: r, z: z}, z.Close, nil
	case FormatXz:
		d, err := newXzDecoder(r)
		return d, nil, err
	case FormatZstd:
		d, err := zstd.NewReader(r, zstdOptions()...)
		if err != nil {
			return nil, nil, err
		}
		return d, func() error { d.Close(); return nil }, nil
	case FormatBzip2:
		// compress/bzip2 decodes concatenated streams (pbzip2 output).
		return bzip2.NewReader(r), nil, nil
	}
	return nil, nil, fmt.Errorf("no stream decoder for %s", f)
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
// member must be another member.
type gzipMembers struct {
	r    byteReader
	z    *gzip.Reader
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
	b, err := g.r.ReadByte()
	switch {
	case err == io.EOF:
		return false, nil
	case err != nil:
		return false, err
	case b == 0:
		return false, g.skipZeros()
	}
	if err := g.r.UnreadByte(); err != nil {
		return false, err
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
			return fmt.Errorf("%w: data after the zero padding that follows the last member", gzip.ErrHeader)
		}
	}
}
