package xzdec

import "errors"

var (
	errLZMADistance = errors.New("LZMA match distance beyond the start of the dictionary")
	errLZMAOverrun  = errors.New("LZMA data runs past the end of its chunk")
)

// lzmaDec is the LZMA decoder state that survives between calls to run.
// run copies it into locals so the compiler keeps it in registers.
type lzmaDec struct {
	p                      lzmaProbs
	lc, lp, pb             uint
	state                  uint32
	rep0, rep1, rep2, rep3 uint32
	rng, code              uint32
	pending                int // bytes of the current match not yet copied
	w                      window
}

// resetState resets the probabilities, the state machine and the reps.
func (d *lzmaDec) resetState() {
	d.p.reset(d.lc + d.lp)
	d.state = 0
	d.rep0, d.rep1, d.rep2, d.rep3 = 0, 0, 0, 0
	d.pending = 0
}

// rcInit starts the range decoder on a chunk; it returns false if the
// chunk's first byte is not zero, as the format requires.
func (d *lzmaDec) rcInit(in []byte) bool {
	d.rng = 0xFFFFFFFF
	d.code = uint32(in[1])<<24 | uint32(in[2])<<16 | uint32(in[3])<<8 | uint32(in[4])
	return in[0] == 0
}

// rcBit decodes one bit with the adaptive probability *p. It is small
// enough for the compiler to inline, which keeps rng, code and ip in
// registers across the whole hot loop. Reading past the end of in yields
// zero bytes; the caller detects the overrun from ip afterwards.
func rcBit(p *uint16, rng, code uint32, in []byte, ip int) (uint32, uint32, int, uint32) {
	if rng < rcTop {
		rng <<= 8
		code <<= 8
		if ip < len(in) {
			code |= uint32(in[ip])
		}
		ip++
	}
	pv := uint32(*p)
	bound := (rng >> 11) * pv
	if code < bound {
		*p = uint16(pv + (2048-pv)>>5)
		return bound, code, ip, 0
	}
	*p = uint16(pv - pv>>5)
	return rng - bound, code - bound, ip, 1
}

// rcTree decodes an n-bit symbol MSB first with the bit tree probs[1:].
func rcTree(probs []uint16, n uint, rng, code uint32, in []byte, ip int) (uint32, uint32, uint32, int) {
	sym := uint32(1)
	var b uint32
	for i := uint(0); i < n; i++ {
		rng, code, ip, b = rcBit(&probs[sym], rng, code, in, ip)
		sym = sym<<1 | b
	}
	return sym - 1<<n, rng, code, ip
}

// rcTreeRev decodes an n-bit symbol LSB first with the bit tree probs
// (node k at probs[k-1], so distSpecial can be sliced without a -1 index).
func rcTreeRev(probs []uint16, n uint, rng, code uint32, in []byte, ip int) (uint32, uint32, uint32, int) {
	sym := uint32(1)
	var res, b uint32
	for i := uint(0); i < n; i++ {
		rng, code, ip, b = rcBit(&probs[sym-1], rng, code, in, ip)
		sym = sym<<1 | b
		res |= b << i
	}
	return res, rng, code, ip
}

// rcLen decodes a match length (already offset by matchLenMin).
func rcLen(l *lenProbs, posState int, rng, code uint32, in []byte, ip int) (int, uint32, uint32, int) {
	var b, sym uint32
	rng, code, ip, b = rcBit(&l.choice, rng, code, in, ip)
	if b == 0 {
		sym, rng, code, ip = rcTree(l.low[posState&(posStatesMax-1)][:], 3, rng, code, in, ip)
		return int(sym) + matchLenMin, rng, code, ip
	}
	rng, code, ip, b = rcBit(&l.choice2, rng, code, in, ip)
	if b == 0 {
		sym, rng, code, ip = rcTree(l.mid[posState&(posStatesMax-1)][:], 3, rng, code, in, ip)
		return int(sym) + matchLenMin + lenLowSyms, rng, code, ip
	}
	sym, rng, code, ip = rcTree(l.high[:], 8, rng, code, in, ip)
	return int(sym) + matchLenMin + lenLowSyms + lenMidSyms, rng, code, ip
}

// rcNormalize performs the range coder's final normalization of a chunk.
func (d *lzmaDec) rcNormalize(in []byte, ip int) int {
	if d.rng < rcTop {
		d.rng <<= 8
		d.code <<= 8
		if ip < len(in) {
			d.code |= uint32(in[ip])
		}
		ip++
	}
	return ip
}

// run decodes symbols from in[ip:] into the window until its position
// reaches limit (limit <= len(w.buf)). It returns the new input position,
// which exceeds len(in) if the data was corrupt.
func (d *lzmaDec) run(in []byte, ip, limit int) (int, error) {
	w := &d.w
	buf := w.buf[:limit]
	pos := w.pos
	wlen := len(w.buf)
	if d.pending > 0 {
		n := min(d.pending, limit-pos)
		copyMatch(w.buf, pos, int(d.rep0)+1, n)
		pos += n
		d.pending -= n
	}
	rng, code := d.rng, d.code
	state := d.state
	rep0, rep1, rep2, rep3 := d.rep0, d.rep1, d.rep2, d.rep3
	base := w.base
	pbMask := 1<<d.pb - 1
	lpMask := 1<<d.lp - 1
	lc := d.lc
	p := &d.p
	var prev uint32
	if pos+base > 0 {
		if pos > 0 {
			prev = uint32(w.buf[pos-1])
		} else {
			prev = uint32(w.buf[wlen-1])
		}
	}
	var err error
	var b uint32
	for pos < len(buf) {
		total := pos + base
		posState := total & pbMask
		rng, code, ip, b = rcBit(&p.isMatch[state<<4|uint32(posState)], rng, code, in, ip)
		if b == 0 {
			// Literal.
			li := literalCoderSize * ((total&lpMask)<<lc + int(prev>>(8-lc)))
			lit := p.literal[li : li+literalCoderSize]
			sym := uint32(1)
			if state < 7 {
				for sym < 0x100 {
					rng, code, ip, b = rcBit(&lit[sym], rng, code, in, ip)
					sym = sym<<1 | b
				}
			} else {
				mpos := pos - int(rep0) - 1
				if mpos < 0 {
					mpos += wlen
				}
				match := uint32(w.buf[mpos])
				offs := uint32(0x100)
				for sym < 0x100 {
					match <<= 1
					mbit := match & offs
					rng, code, ip, b = rcBit(&lit[offs+mbit+sym], rng, code, in, ip)
					sym = sym<<1 | b
					if b == 0 {
						offs &= ^mbit
					} else {
						offs &= mbit
					}
				}
			}
			prev = sym & 0xFF
			buf[pos] = byte(sym)
			pos++
			state = litNextState[state]
			continue
		}
		var l int
		rng, code, ip, b = rcBit(&p.isRep[state], rng, code, in, ip)
		if b == 0 {
			// Simple match with a new distance.
			if state < 7 {
				state = 7
			} else {
				state = 10
			}
			l, rng, code, ip = rcLen(&p.matchLen, posState, rng, code, in, ip)
			rep3, rep2, rep1 = rep2, rep1, rep0
			ls := min(l-matchLenMin, distStates-1)
			var slot uint32
			slot, rng, code, ip = rcTree(p.distSlot[ls][:], 6, rng, code, in, ip)
			if slot < distModelStart {
				rep0 = slot
			} else {
				nd := uint(slot>>1 - 1)
				rep0 = (2 | slot&1) << nd
				var extra uint32
				if slot < distModelEnd {
					extra, rng, code, ip = rcTreeRev(p.distSpecial[rep0-slot:], nd, rng, code, in, ip)
				} else {
					for i := nd - alignBits; i > 0; i-- {
						if rng < rcTop {
							rng <<= 8
							code <<= 8
							if ip < len(in) {
								code |= uint32(in[ip])
							}
							ip++
						}
						rng >>= 1
						code -= rng
						t := 0 - code>>31
						code += rng & t
						extra = extra<<1 + t + 1
					}
					var al uint32
					al, rng, code, ip = rcTreeRev(p.distAlign[:], alignBits, rng, code, in, ip)
					extra = extra<<alignBits | al
				}
				rep0 += extra
			}
		} else {
			rng, code, ip, b = rcBit(&p.isRep0[state], rng, code, in, ip)
			if b == 0 {
				rng, code, ip, b = rcBit(&p.isRep0Long[state<<4|uint32(posState)], rng, code, in, ip)
				if b == 0 {
					// Short rep: one byte from rep0.
					if int(rep0) >= total || int(rep0) >= wlen {
						err = errLZMADistance
						break
					}
					if state < 7 {
						state = 9
					} else {
						state = 11
					}
					mpos := pos - int(rep0) - 1
					if mpos < 0 {
						mpos += wlen
					}
					prev = uint32(w.buf[mpos])
					buf[pos] = byte(prev)
					pos++
					continue
				}
			} else {
				var dist uint32
				rng, code, ip, b = rcBit(&p.isRep1[state], rng, code, in, ip)
				if b == 0 {
					dist = rep1
				} else {
					rng, code, ip, b = rcBit(&p.isRep2[state], rng, code, in, ip)
					if b == 0 {
						dist = rep2
					} else {
						dist = rep3
						rep3 = rep2
					}
					rep2 = rep1
				}
				rep1 = rep0
				rep0 = dist
			}
			if state < 7 {
				state = 8
			} else {
				state = 11
			}
			l, rng, code, ip = rcLen(&p.repLen, posState, rng, code, in, ip)
		}
		if int(rep0) >= total || int(rep0) >= wlen {
			err = errLZMADistance
			break
		}
		n := min(l, len(buf)-pos)
		dist1 := int(rep0) + 1
		if src := pos - dist1; src >= 0 && n <= dist1 && n <= 16 {
			// Common case: short, non-overlapping, not wrapping.
			dst := buf[pos : pos+n]
			s := w.buf[src : src+n]
			for i := range dst {
				dst[i] = s[i]
			}
		} else {
			copyMatch(w.buf, pos, dist1, n)
		}
		pos += n
		prev = uint32(w.buf[pos-1])
		if n < l {
			d.pending = l - n
			break
		}
	}
	d.rng, d.code = rng, code
	d.state = state
	d.rep0, d.rep1, d.rep2, d.rep3 = rep0, rep1, rep2, rep3
	w.pos = pos
	return ip, err
}
