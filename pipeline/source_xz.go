package pipeline

import (
	"io"

	"github.com/ulikunitz/xz"
	"github.com/ulikunitz/xz/lzma"
)

// newXzDecoder is the one place the xz decoder is built, so that the parallel
// decoder in pipeline/xzdec can replace it. It handles concatenated streams
// and stream padding. A replacement must report truncation as
// io.ErrUnexpectedEOF (or isTruncation must learn its sentinel), and one
// that verifies stream footers itself makes xzEndCheck unnecessary.
func newXzDecoder(r byteReader) (io.Reader, error) {
	t := &xzTail{r: r, br: r}
	// The smallest DictCap lets each block's header decide the dictionary
	// size; the default would allocate at least 8 MiB even for small ones.
	d, err := xz.ReaderConfig{DictCap: lzma.MinDictCap}.NewReader(t)
	if err != nil {
		return nil, err
	}
	return &xzEndCheck{d: d, tail: t}, nil
}

// xzFooterMagic ends every xz stream footer.
const xzFooterMagic = 'Y'<<8 | 'Z'

// xzEndCheck exists because ulikunitz/xz takes an input that ends where a
// block header or index should start for a clean end of stream: a download
// cut at a block boundary would decode "successfully" to a short image. A
// complete input ends in a stream footer, possibly followed by zero padding.
type xzEndCheck struct {
	d    io.Reader
	tail *xzTail
}

func (x *xzEndCheck) Read(p []byte) (int, error) {
	n, err := x.d.Read(p)
	if err == io.EOF && x.tail.endMark != xzFooterMagic {
		err = io.ErrUnexpectedEOF
	}
	return n, err
}

// xzTail passes input to the decoder and remembers the two bytes that end
// it, zero padding excluded.
type xzTail struct {
	r       io.Reader
	br      io.ByteReader
	last2   uint16 // the last two bytes read
	endMark uint16 // last2 as of the last non-zero byte
}

func (t *xzTail) Read(p []byte) (int, error) {
	n, err := t.r.Read(p)
	for _, b := range p[:n] {
		t.note(b)
	}
	return n, err
}

// ReadByte keeps the decoder on its byte-at-a-time fast path; without it
// ulikunitz/xz issues a one-byte Read per byte.
func (t *xzTail) ReadByte() (byte, error) {
	b, err := t.br.ReadByte()
	if err == nil {
		t.note(b)
	}
	return b, err
}

func (t *xzTail) note(b byte) {
	t.last2 = t.last2<<8 | uint16(b)
	if b != 0 {
		t.endMark = t.last2
	}
}
