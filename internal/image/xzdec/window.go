package xzdec

import "errors"

// window is the LZMA dictionary and, at the same time, the output buffer:
// decoded bytes are written once and handed to the consumer from here.
//
// In streaming mode it is a circular buffer that grows lazily up to max
// (the dictionary size, or the block size if smaller), so a small file or
// a hostile header claiming a 4 GiB dictionary costs only what is decoded.
// In fixed mode (parallel blocks) buf is the block's output buffer of the
// exact size the index gives; it never wraps.
type window struct {
	buf   []byte
	pos   int // next write position in buf
	base  int // pos+base is the number of bytes since the last dictionary reset
	max   int
	fixed bool
}

var errWindowFull = errors.New("block decodes to more data than its recorded size")

// minWindow is where lazy growth starts.
const minWindow = 64 << 10

// setStreaming prepares w for a new block with dictionary size max,
// keeping an existing buffer for reuse.
func (w *window) setStreaming(max int) {
	if w.fixed {
		w.buf = nil
	}
	w.fixed = false
	w.max = max
	w.pos, w.base = 0, 0
}

// setFixed makes buf the window; its length is the exact output size.
func (w *window) setFixed(buf []byte) {
	w.buf, w.fixed, w.max = buf, true, len(buf)
	w.pos, w.base = 0, 0
}

// resetDict starts a new dictionary at the current position.
func (w *window) resetDict() { w.base = -w.pos }

// makeRoom ensures pos < len(buf), growing or wrapping. The caller must
// have consumed everything before pos.
func (w *window) makeRoom() error {
	if w.pos < len(w.buf) {
		return nil
	}
	if w.fixed {
		return errWindowFull
	}
	if len(w.buf) < w.max {
		n := max(2*len(w.buf), minWindow)
		n = min(n, w.max)
		nb := make([]byte, n)
		copy(nb, w.buf[:w.pos])
		w.buf = nb
		return nil
	}
	w.base += w.pos
	w.pos = 0
	return nil
}

// copyMatch performs an LZ77 copy of n bytes from dist1 bytes back
// (dist1 >= 1) to buf[pos:]. The destination never wraps (the caller
// limits n); the source may. LZ77 semantics require that overlapping copies
// repeat the pattern, which a plain copy() does not do when the source is
// behind the destination by less than n.
func copyMatch(buf []byte, pos, dist1, n int) {
	src := pos - dist1
	if src < 0 {
		src += len(buf)
		k := len(buf) - src
		if k >= n {
			copy(buf[pos:pos+n], buf[src:src+n])
			return
		}
		copy(buf[pos:pos+k], buf[src:])
		pos += k
		n -= k
		src = 0
	}
	if n <= dist1 {
		if n <= 8 {
			d := buf[pos : pos+n]
			s := buf[src : src+n]
			for i := range d {
				d[i] = s[i]
			}
			return
		}
		copy(buf[pos:pos+n], buf[src:src+n])
		return
	}
	if dist1 == 1 {
		// Runs of one byte; zero runs (unused disk space) are the bulk of
		// an OS image, and clear compiles to memclr.
		b := buf[src]
		d := buf[pos : pos+n]
		if b == 0 {
			clear(d)
			return
		}
		if n < 16 {
			for i := range d {
				d[i] = b
			}
			return
		}
	}
	// Overlapping: buf[src:pos] is one period; copying it with doubling
	// lengths reproduces the byte-by-byte result.
	for n > 0 {
		k := min(n, pos-src)
		copy(buf[pos:pos+k], buf[src:src+k])
		pos += k
		n -= k
	}
}
