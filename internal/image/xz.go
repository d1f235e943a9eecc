package image

import (
	"context"
	"errors"
	"io"

	"github.com/usbflash/usbflash/internal/image/xzdec"
)

// newXzDecoder decodes a .xz stream (a download, a pipe) with xzdec, which
// verifies every block check, index and stream footer itself (so a download
// cut at a block boundary is reported as truncated, not as a short image)
// and handles concatenated streams and stream padding. Blocks whose headers
// record their sizes (xz -T) are decoded on up to GOMAXPROCS goroutines, as
// a file's are, with at most xzdec.DefaultMaxInFlight bytes held; others on
// the goroutine that reads the stream.
func newXzDecoder(r io.Reader) (io.ReadCloser, error) {
	return xzdec.NewParallelStreamReader(context.Background(), r, xzdec.Options{})
}

// openParallelXz decodes a seekable .xz file whose index lists several
// blocks (xz -T0, pixz) on up to GOMAXPROCS goroutines, in order, with at
// most xzdec.DefaultMaxInFlight decoded bytes held in memory. Single-block
// files fall back to the streaming decoder inside xzdec. The index, read
// once, also gives the exact decoded size.
//
// It reports false when the file's index cannot be read: a truncated
// download has no footer. The streaming decoder then decodes what is there
// and names the offset where the data really ends or breaks.
func (s *Source) openParallelXz(ra io.ReaderAt, size int64) (bool, error) {
	// Read unmetered: the index at the end of the file is not progress.
	idx, err := xzdec.ReadIndex(ra, size)
	if err != nil {
		return false, nil
	}
	s.Size, s.SizeExact = idx.UncompressedSize, true
	s.HasChecksum = true
	for _, st := range idx.Streams {
		s.HasChecksum = s.HasChecksum && st.Check != xzdec.CheckNone
	}
	ctx, cancel := context.WithCancel(context.Background())
	d, err := xzdec.NewParallelReaderIndex(ctx, &meteredReaderAt{ra: ra, m: s.meter}, size, idx, xzdec.Options{})
	if err != nil {
		cancel()
		return true, s.classify(err)
	}
	s.dec = d
	s.closers = append(s.closers, func() error {
		cancel()
		return d.Close()
	})
	return true, nil
}

// xzErrorOffset is where xzdec found a problem in the compressed input: more
// precise than how far the input was read, since blocks are read ahead.
func xzErrorOffset(err error) (offset int64, cause error, ok bool) {
	var xe *xzdec.Error
	if errors.As(err, &xe) {
		return xe.Offset, xe.Err, true
	}
	return 0, err, false
}
