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
	io.ByteReader
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
		// Concatenated members are one image (pigz, `cat a.gz b.gz`).
		z.Multistream(true)
		return z, z.Close, nil
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
