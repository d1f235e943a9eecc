package xzdec

import (
	"bytes"
	"encoding/binary"
	"errors"
	"hash/crc32"
	"io"
)

// Reader is the single-threaded streaming decoder. It handles concatenated
// streams and stream padding, verifies every check, every index and every
// footer, and needs only an io.Reader. Memory is one dictionary-sized
// window (grown as data arrives) plus a 1 MiB input buffer.
type Reader struct {
	in      *inReader
	flags   streamFlags
	records []indexRecord // blocks seen in the current stream
	lz      lzma2Dec
	blk     blockDec
	inBlock bool
	span    []byte // decoded bytes not yet returned
	err     error  // sticky; io.EOF after the last stream
}

type indexRecord struct {
	unpadded, uncomp int64
}

// NewReader returns a streaming decoder reading .xz data from r. It reads
// and checks the first stream header before returning.
func NewReader(r io.Reader) (*Reader, error) {
	z := &Reader{in: newInReader(r, 0, inBufSize)}
	if err := z.startStream(); err != nil {
		return nil, err
	}
	return z, nil
}

// Read implements io.Reader.
func (z *Reader) Read(p []byte) (int, error) {
	for len(z.span) == 0 {
		if z.err != nil {
			return 0, z.err
		}
		z.err = z.step()
	}
	n := copy(p, z.span)
	z.span = z.span[n:]
	return n, nil
}

// WriteTo implements io.WriterTo, handing w slices of the decoder's window
// directly so no intermediate copy is made.
func (z *Reader) WriteTo(w io.Writer) (int64, error) {
	var total int64
	for {
		for len(z.span) == 0 {
			if z.err != nil {
				if z.err == io.EOF {
					return total, nil
				}
				return total, z.err
			}
			z.err = z.step()
		}
		n, err := w.Write(z.span)
		total += int64(n)
		z.span = z.span[n:]
		if err != nil {
			return total, err
		}
		if len(z.span) > 0 {
			return total, io.ErrShortWrite
		}
	}
}

// step makes progress: decodes more of the current block, or moves to the
// next block, index, or stream.
func (z *Reader) step() error {
	if z.inBlock {
		span, err := z.blk.next()
		if err == io.EOF {
			z.records = append(z.records, indexRecord{z.blk.unpadded, z.blk.out})
			z.inBlock = false
			return nil
		}
		z.span = span
		return err
	}
	if atIndex, err := z.streamEnd(); atIndex || err != nil {
		return err
	}
	if err := z.startBlock(); err != nil {
		return err
	}
	z.inBlock = true
	return nil
}

// startBlock reads the header of the block at the input position and
// prepares z.blk to decode it in the streaming window.
func (z *Reader) startBlock() error {
	hdr, start, err := readBlockHeader(z.in)
	if err != nil {
		return err
	}
	z.lz.lz.w.setStreaming(windowMax(hdr))
	return z.blk.init(z.in, start, hdr, z.flags.check(), &z.lz, -1, -1)
}

// streamEnd, where a block or the index starts, reports whether it is the
// index; if it is, it checks the index and footer and moves to the next
// stream (io.EOF at the end of the input).
func (z *Reader) streamEnd() (atIndex bool, err error) {
	p, err := z.in.peek(1)
	if err != nil {
		return false, err
	}
	if p[0] != 0 {
		return false, nil
	}
	if err := z.endStream(); err != nil {
		return true, err
	}
	return true, z.nextStream()
}

func (z *Reader) startStream() error {
	off := z.in.offset()
	b, err := z.in.next(streamHeaderSize)
	if err != nil {
		return err
	}
	z.flags, err = parseStreamHeader(b, off)
	z.records = z.records[:0]
	return err
}

// nextStream skips stream padding and starts the next stream, or returns
// io.EOF at the end of the input.
func (z *Reader) nextStream() error {
	for {
		eof, err := z.in.atEOF()
		if err != nil {
			return err
		}
		if eof {
			return io.EOF
		}
		off := z.in.offset()
		p, err := z.in.peek(len(headerMagic))
		if err != nil && !errors.Is(err, ErrTruncated) {
			return err
		}
		if err != nil {
			p = z.in.buffered()
		}
		if len(p) >= 4 && binary.LittleEndian.Uint32(p) == 0 {
			z.in.next(4)
			continue
		}
		// What follows a stream is padding or another stream; anything
		// else is trailing data, not a stream cut short. Only the start of
		// another stream's magic at the end of the input is a download
		// cut short, as xz itself reports it ("Unexpected end of input").
		if len(bytes.Trim(p, "\x00")) == 0 {
			return errAt(off, ErrFormat, "stream padding of %d bytes, not a multiple of four", len(p))
		}
		if !bytes.HasPrefix(headerMagic, p) && !bytes.HasPrefix(p, headerMagic) {
			return errAt(off, ErrFormat, "data after the end of the stream is neither stream padding nor another stream")
		}
		if err != nil {
			return errAt(off+int64(len(p)), ErrTruncated, "input ends inside the header of the next stream")
		}
		return z.startStream()
	}
}

// endStream reads the index and stream footer and checks them against the
// blocks just decoded.
func (z *Reader) endStream() error {
	in := z.in
	start := in.offset()
	crc := crc32.NewIEEE()
	take := func(n int) ([]byte, error) {
		b, err := in.next(n)
		if err == nil {
			crc.Write(b)
		}
		return b, err
	}
	readVLI := func() (int64, error) {
		var v uint64
		off := in.offset()
		for i := 0; i < maxVLIBytes; i++ {
			b, err := take(1)
			if err != nil {
				return 0, err
			}
			v |= uint64(b[0]&0x7F) << (7 * i)
			if b[0]&0x80 == 0 {
				if b[0] == 0 && i > 0 {
					break
				}
				return int64(v), nil
			}
		}
		return 0, errAt(off, ErrFormat, "invalid variable-length integer in index")
	}
	take(1) // the index indicator, already peeked
	off := in.offset()
	n, err := readVLI()
	if err != nil {
		return err
	}
	if n != int64(len(z.records)) {
		return errAt(off, ErrFormat, "index lists %d blocks, stream has %d", n, len(z.records))
	}
	for i, r := range z.records {
		off := in.offset()
		u, err := readVLI()
		if err != nil {
			return err
		}
		c, err := readVLI()
		if err != nil {
			return err
		}
		if u != r.unpadded || c != r.uncomp {
			return errAt(off, ErrFormat, "the index says block %d holds %d bytes (%d compressed), but it held %d (%d compressed)",
				i+1, c, u, r.uncomp, r.unpadded)
		}
	}
	off = in.offset()
	pad, err := take(int(-(off - start) & 3))
	if err != nil {
		return err
	}
	for _, c := range pad {
		if c != 0 {
			return errAt(off, ErrFormat, "non-zero index padding")
		}
	}
	sum := crc.Sum32()
	off = in.offset()
	b, err := in.next(4)
	if err != nil {
		return err
	}
	if binary.LittleEndian.Uint32(b) != sum {
		return errAt(off, ErrFormat, "index CRC32 mismatch")
	}
	size := in.offset() - start
	off = in.offset()
	b, err = in.next(streamFooterSize)
	if err != nil {
		return err
	}
	flags, back, err := parseStreamFooter(b, off)
	if err != nil {
		return err
	}
	if flags != z.flags {
		return errAt(off+8, ErrFormat, "stream footer flags differ from the stream header")
	}
	if back != size {
		return errAt(off+4, ErrFormat, "stream footer backward size %d, index is %d bytes", back, size)
	}
	return nil
}
