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
	dictSize               int // distances must stay below this, as in liblzma
	w                      window
}

// resetState resets the probabilities, the state machine and the reps.
func (d *lzmaDec) resetState() {
	d.p.reset(d.lc + d.lp)
	d.state = stateLitLit
	d.rep0, d.rep1, d.rep2, d.rep3 = 0, 0, 0, 0
	d.pending = 0
}

// distOK reports whether a match distance (rep0: distance - 1) reaches only
// decoded bytes (total since the dictionary reset) within the dictionary
// (dlim). It compares unsigned: a corrupt stream can decode a rep0 of 2^31
// or more, which int(rep0) turns negative where int is 32 bits (arm, 386),
// passing a signed check and then slicing the window out of range.
func distOK(rep0 uint32, total, dlim int) bool {
	return int64(rep0) < int64(total) && int64(rep0) < int64(dlim)
}

// rcInit starts the range decoder on a chunk; it returns false if the
// chunk's first byte is not zero, as the format requires.
func (d *lzmaDec) rcInit(in []byte) bool {
	d.rng = 0xFFFFFFFF
	d.code = uint32(in[1])<<24 | uint32(in[2])<<16 | uint32(in[3])<<8 | uint32(in[4])
	return in[0] == 0
}

// run decodes symbols from in[ip:] into the window until its position
// reaches limit (limit <= len(w.buf)). It returns the new input position,
// which exceeds len(in) if the data was corrupt.
func (d *lzmaDec) run(in []byte, ip, limit int) (int, error) {
	w := &d.w
	buf := w.buf[:limit]
	pos := w.pos
	wlen := len(w.buf)
	dlim := min(wlen, d.dictSize) // farthest valid distance + 1 (besides total)
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
			lit := (*[literalCoderSize]uint16)(p.literal[li : li+literalCoderSize])
			var sym uint32
			if state < litStates {
				sym, rng, code, ip = decodeLiteral(lit, rng, code, in, ip)
			} else {
				mpos := pos - int(rep0) - 1
				if mpos < 0 {
					mpos += wlen
				}
				sym, rng, code, ip = decodeMatchedLiteral(lit, uint32(w.buf[mpos]), rng, code, in, ip)
			}
			prev = sym & 0xFF
			buf[pos] = byte(sym)
			pos++
			state = litNextState[state]
			continue
		}
		var lp *lenProbs
		rng, code, ip, b = rcBit(&p.isRep[state], rng, code, in, ip)
		isRep := b
		if isRep == 0 {
			// Simple match with a new distance: lzma_state_match.
			if state < litStates {
				state = stateLitMatch
			} else {
				state = stateNonlitMatch
			}
			rep3, rep2, rep1 = rep2, rep1, rep0
			lp = &p.matchLen
		} else {
			rng, code, ip, b = rcBit(&p.isRep0[state], rng, code, in, ip)
			if b == 0 {
				rng, code, ip, b = rcBit(&p.isRep0Long[state<<4|uint32(posState)], rng, code, in, ip)
				if b == 0 {
					// Short rep: one byte from rep0.
					if !distOK(rep0, total, dlim) {
						err = errLZMADistance
						break
					}
					// lzma_state_short_rep.
					if state < litStates {
						state = stateLitShortrep
					} else {
						state = stateNonlitRep
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
			// lzma_state_long_rep.
			if state < litStates {
				state = stateLitLongrep
			} else {
				state = stateNonlitRep
			}
			lp = &p.repLen
		}
		// Inlined lzma_len(s, l, pos_state) of xz_lzma2.c, bit trees and all:
		// Go has no callee-saved registers, so every call in this loop would
		// spill the whole decoder state.
		l := matchLenMin
		ps := posState & (posStatesMax - 1)
		rng, code, ip, b = rcBit(&lp.choice, rng, code, in, ip)
		if b == 0 {
			t := &lp.low[ps]
			// Inlined rc_bittree(&rc, l->low[pos_state], LEN_LOW_SYMBOLS).
			sym := uint32(1)
			pv := uint32(t[1])
			for sym < lenLowSyms {
				rng, code, ip = rcNorm(rng, code, in, ip)
				c0 := uint32(t[(sym<<1)&(lenLowSyms-1)])
				c1 := uint32(t[(sym<<1|1)&(lenLowSyms-1)])
				rng, code, b = rcBitPL(&t[sym&(lenLowSyms-1)], pv, rng, code)
				sym = sym<<1 | b&1
				pv = c0 ^ (c0^c1)&b
			}
			l += int(sym - lenLowSyms)
		} else {
			rng, code, ip, b = rcBit(&lp.choice2, rng, code, in, ip)
			if b == 0 {
				t := &lp.mid[ps]
				// Inlined rc_bittree(&rc, l->mid[pos_state], LEN_MID_SYMBOLS).
				sym := uint32(1)
				pv := uint32(t[1])
				for sym < lenMidSyms {
					rng, code, ip = rcNorm(rng, code, in, ip)
					c0 := uint32(t[(sym<<1)&(lenMidSyms-1)])
					c1 := uint32(t[(sym<<1|1)&(lenMidSyms-1)])
					rng, code, b = rcBitPL(&t[sym&(lenMidSyms-1)], pv, rng, code)
					sym = sym<<1 | b&1
					pv = c0 ^ (c0^c1)&b
				}
				l += lenLowSyms + int(sym-lenMidSyms)
			} else {
				t := &lp.high
				// Inlined rc_bittree(&rc, l->high, LEN_HIGH_SYMBOLS).
				sym := uint32(1)
				pv := uint32(t[1])
				for sym < lenHighSyms {
					rng, code, ip = rcNorm(rng, code, in, ip)
					c0 := uint32(t[(sym<<1)&(lenHighSyms-1)])
					c1 := uint32(t[(sym<<1|1)&(lenHighSyms-1)])
					rng, code, b = rcBitPL(&t[sym&(lenHighSyms-1)], pv, rng, code)
					sym = sym<<1 | b&1
					pv = c0 ^ (c0^c1)&b
				}
				l += lenLowSyms + lenMidSyms + int(sym-lenHighSyms)
			}
		}
		if isRep == 0 {
			// Distance: 6-bit slot, then reverse-tree or direct+align bits.
			// Inlined lzma_match's distance part of xz_lzma2.c.
			t := &p.distSlot[min(l-matchLenMin, distStates-1)]
			// Inlined rc_bittree(&rc, s->lzma.dist_slot[dist_state], DIST_SLOTS).
			slot := uint32(1)
			pv := uint32(t[1])
			for slot < distSlots {
				rng, code, ip = rcNorm(rng, code, in, ip)
				c0 := uint32(t[(slot<<1)&(distSlots-1)])
				c1 := uint32(t[(slot<<1|1)&(distSlots-1)])
				rng, code, b = rcBitPL(&t[slot&(distSlots-1)], pv, rng, code)
				slot = slot<<1 | b&1
				pv = c0 ^ (c0^c1)&b
			}
			slot -= distSlots
			if slot < distModelStart {
				rep0 = slot
			} else {
				nd := slot>>1 - 1
				rep0 = (2 | slot&1) << nd
				if slot < distModelEnd {
					sp := p.distSpecial[rep0-slot:]
					// Inlined rc_bittree_reverse(&rc, probs, &s->lzma.rep0, limit).
					sym := uint32(1)
					for i := uint32(0); i < nd; i++ {
						rng, code, ip = rcNorm(rng, code, in, ip)
						rng, code, b = rcBitBL(&sp[sym-1], rng, code)
						sym = sym<<1 | b
						rep0 += b << i
					}
				} else {
					// Inlined rc_direct(&rc, &s->lzma.rep0, limit - ALIGN_BITS),
					// without a data-dependent branch.
					var extra uint32
					for i := nd - alignBits; i > 0; i-- {
						if rng < rcTop {
							rng <<= 8
							code <<= 8
							if uint(ip) < uint(len(in)) {
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
					rep0 += extra << alignBits
					// Inlined rc_bittree_reverse(&rc, s->lzma.dist_align, &s->lzma.rep0, ALIGN_BITS).
					sym := uint32(1)
					for i := uint32(0); i < alignBits; i++ {
						rng, code, ip = rcNorm(rng, code, in, ip)
						rng, code, b = rcBitBL(&p.distAlign[(sym-1)&(1<<alignBits-1)], rng, code)
						sym = sym<<1 | b
						rep0 += b << i
					}
				}
			}
		}
		if !distOK(rep0, total, dlim) {
			err = errLZMADistance
			break
		}
		n := min(l, len(buf)-pos)
		dist1 := int(rep0) + 1
		if src := pos - dist1; src >= 0 && n <= dist1 && n <= 16 {
			// Inlined copyMatch (dict_repeat in xz_lzma2.c) for the common
			// case: short, non-overlapping, not wrapping.
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

// decodeLiteral decodes a plain literal. It is a separate function because
// inside run's big loop the register allocator spills rng and bound on
// every bit; here only the range coder is live.
func decodeLiteral(lit *[literalCoderSize]uint16, rng, code uint32, in []byte, ip int) (uint32, uint32, uint32, int) {
	// Both children's probabilities are loaded before the bit is known, so
	// the next bit's multiply does not wait for a load that depends on
	// this bit (on real executables about 3% of the whole decode).
	sym := uint32(1)
	pv := uint32(lit[1])
	var m uint32
	for sym < 0x100 {
		rng, code, ip = rcNorm(rng, code, in, ip)
		c0 := uint32(lit[(sym<<1)&0xFF])
		c1 := uint32(lit[(sym<<1|1)&0xFF])
		rng, code, m = rcBitPL(&lit[sym&0xFF], pv, rng, code)
		sym = sym<<1 | m&1
		pv = c0 ^ (c0^c1)&m
	}
	return sym, rng, code, ip
}

// decodeMatchedLiteral decodes a literal right after a match, using the
// byte at rep0 as context until the first bit that differs from it.
func decodeMatchedLiteral(lit *[literalCoderSize]uint16, match, rng, code uint32, in []byte, ip int) (uint32, uint32, uint32, int) {
	// As in decodeLiteral, the probabilities for both outcomes of a bit
	// are loaded before the bit is decoded: the next index depends on the
	// bit only through offs (cleared once a bit differs from the match
	// byte's) and sym. Indexes stay below 0x300: once offs is 0x100 for
	// the last bit, the match bit after it is 0.
	sym := uint32(1)
	offs := uint32(0x100)
	match <<= 1
	idx := offs + match&offs + sym
	pv := uint32(lit[idx&0x3FF])
	var m uint32
	for sym < 0x100 {
		mbit := match & offs
		match <<= 1
		offs0 := offs &^ mbit // next offs if this bit is 0
		offs1 := offs & mbit  // ... if it is 1
		i0 := offs0 + match&offs0 + sym<<1
		i1 := offs1 + match&offs1 + sym<<1 | 1
		c0 := uint32(lit[i0&0x3FF])
		c1 := uint32(lit[i1&0x3FF])
		rng, code, ip = rcNorm(rng, code, in, ip)
		rng, code, m = rcBitPL(&lit[idx&0x3FF], pv, rng, code)
		sym = sym<<1 | m&1
		offs = offs0 ^ (offs0^offs1)&m
		idx = i0 ^ (i0^i1)&m
		pv = c0 ^ (c0^c1)&m
	}
	return sym, rng, code, ip
}
