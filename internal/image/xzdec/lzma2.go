package xzdec

import (
	"errors"
	"io"
)

// lzma2Dec decodes an LZMA2 stream (the chunk layer around LZMA) from in
// into its window.
type lzma2Dec struct {
	lz        lzmaDec
	in        *inReader
	chunk     []byte // compressed bytes of the current chunk
	chunkOff  int64  // compressed offset of chunk[0]
	ip        int
	left      int  // uncompressed bytes left in the current chunk
	stored    bool // the current chunk is uncompressed
	needDict  bool
	needProps bool
	eos       bool
	compEnd   int64 // input offset the compressed data must not pass
}

// reset prepares for a new block reading from in; compEnd bounds the
// compressed data (maxVLI if unknown).
func (z *lzma2Dec) reset(in *inReader, compEnd int64) {
	z.in = in
	z.chunk, z.ip, z.left = nil, 0, 0
	z.stored, z.eos = false, false
	z.needDict, z.needProps = true, true
	z.compEnd = compEnd
}

// fill decodes more data into the window and returns it. The caller must
// consume the returned bytes before calling fill again. At the LZMA2 end
// marker it returns io.EOF.
func (z *lzma2Dec) fill() ([]byte, error) {
	for z.left == 0 {
		if z.eos {
			return nil, io.EOF
		}
		if err := z.nextChunk(); err != nil {
			return nil, err
		}
	}
	w := &z.lz.w
	if err := w.makeRoom(); err != nil {
		return nil, errAt(z.chunkOff+int64(z.ip), ErrFormat, "%v", err)
	}
	start := w.pos
	limit := min(len(w.buf), start+z.left)
	if z.stored {
		n := copy(w.buf[start:limit], z.chunk[z.ip:])
		z.ip += n
		w.pos += n
	} else {
		ip, err := z.lz.run(z.chunk, z.ip, limit)
		z.ip = ip
		if err != nil {
			return nil, errAt(z.chunkOff+int64(min(ip, len(z.chunk))), ErrFormat, "%v", err)
		}
		if ip > len(z.chunk) {
			return nil, errAt(z.chunkOff+int64(len(z.chunk)), ErrFormat, "%v", errLZMAOverrun)
		}
	}
	z.left -= w.pos - start
	if z.left == 0 && !z.stored {
		if err := z.endChunk(); err != nil {
			return nil, err
		}
	}
	return w.buf[start:w.pos], nil
}

// endChunk verifies that an LZMA chunk ended exactly where its header said.
func (z *lzma2Dec) endChunk() error {
	d := &z.lz
	z.ip = d.rcNormalize(z.chunk, z.ip)
	if d.pending > 0 {
		return errAt(z.chunkOff+int64(len(z.chunk)), ErrFormat, "LZMA match continues past the end of its chunk")
	}
	if z.ip != len(z.chunk) || d.code != 0 {
		return errAt(z.chunkOff+int64(min(z.ip, len(z.chunk))), ErrFormat,
			"LZMA2 chunk compressed size does not match its data")
	}
	return nil
}

var errLZMA2Props = errors.New("invalid LZMA properties byte")

// nextChunk reads one LZMA2 chunk header and the chunk's compressed data.
func (z *lzma2Dec) nextChunk() error {
	in := z.in
	off := in.offset()
	if off >= z.compEnd {
		return errAt(off, ErrFormat, "LZMA2 data runs past the compressed size of its block")
	}
	b, err := in.next(1)
	if err != nil {
		return err
	}
	ctl := b[0]
	if ctl == 0 {
		z.eos = true
		return nil
	}
	if ctl >= 0xE0 || ctl == 1 {
		z.needProps = true
		z.needDict = false
		z.lz.w.resetDict()
	} else if z.needDict {
		return errAt(off, ErrFormat, "LZMA2 stream does not start with a dictionary reset")
	}
	if ctl < 0x80 {
		if ctl > 2 {
			return errAt(off, ErrFormat, "invalid LZMA2 control byte %#02x", ctl)
		}
		h, err := in.next(2)
		if err != nil {
			return err
		}
		n := int(h[0])<<8 | int(h[1]) + 1
		if z.chunk, err = in.next(n); err != nil {
			return err
		}
		z.chunkOff, z.ip, z.left, z.stored = off+3, 0, n, true
		return z.checkEnd()
	}
	hn := 4
	if ctl >= 0xC0 {
		hn = 5
	}
	h, err := in.next(hn)
	if err != nil {
		return err
	}
	z.left = int(ctl&0x1F)<<16 | int(h[0])<<8 | int(h[1]) + 1
	csize := int(h[2])<<8 | int(h[3]) + 1
	d := &z.lz
	if ctl >= 0xC0 {
		if err := d.setProps(h[4]); err != nil {
			return errAt(off+5, ErrFormat, "%v", err)
		}
		z.needProps = false
	} else if z.needProps {
		return errAt(off, ErrFormat, "LZMA2 chunk without required properties")
	}
	if ctl >= 0xA0 {
		d.resetState()
	}
	if csize < 5 {
		return errAt(off, ErrFormat, "LZMA2 chunk too small")
	}
	if z.chunk, err = in.next(csize); err != nil {
		return err
	}
	z.chunkOff, z.stored = off+1+int64(hn), false
	if !d.rcInit(z.chunk) {
		return errAt(z.chunkOff, ErrFormat, "LZMA2 chunk range coder does not start with zero")
	}
	z.ip = 5
	return z.checkEnd()
}

func (z *lzma2Dec) checkEnd() error {
	if off := z.in.offset(); off > z.compEnd {
		return errAt(off, ErrFormat, "LZMA2 data runs past the compressed size of its block")
	}
	return nil
}

// setProps decodes the lc/lp/pb byte.
func (d *lzmaDec) setProps(b byte) error {
	if b >= 9*5*5 {
		return errLZMA2Props
	}
	lc := uint(b % 9)
	b /= 9
	lp := uint(b % 5)
	pb := uint(b / 5)
	if lc+lp > maxLcLp {
		return errLZMA2Props
	}
	d.lc, d.lp, d.pb = lc, lp, pb
	return nil
}
