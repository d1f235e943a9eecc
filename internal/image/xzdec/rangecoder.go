package xzdec

// The range decoder. Helpers take and return rng, code and ip by value so
// that, once inlined, they stay in registers inside lzmaDec.run.

// rcBit decodes one bit with the adaptive probability *p. It is small
// enough for the compiler to inline, which keeps rng, code and ip in
// registers across the whole hot loop. Reading past the end of in yields
// zero bytes; the caller detects the overrun from ip afterwards.
func rcBit(p *uint16, rng, code uint32, in []byte, ip int) (uint32, uint32, int, uint32) {
	if rng < rcTop {
		rng <<= 8
		code <<= 8
		if uint(ip) < uint(len(in)) {
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

// rcNorm is the range decoder's normalization step.
func rcNorm(rng, code uint32, in []byte, ip int) (uint32, uint32, int) {
	if rng < rcTop {
		rng <<= 8
		code <<= 8
		if uint(ip) < uint(len(in)) {
			code |= uint32(in[ip])
		}
		ip++
	}
	return rng, code, ip
}

// rcBitBL decodes a bit like rcBit (after rcNorm) without a data-dependent
// branch. Literal and tree bits of dense data are close to random, and a
// mispredicted branch costs more than the extra arithmetic.
func rcBitBL(p *uint16, rng, code uint32) (uint32, uint32, uint32) {
	pv := uint32(*p)
	bound := (rng >> 11) * pv
	mask := uint32((uint64(code)-uint64(bound))>>63) - 1 // all ones for a 1 bit
	code -= bound & mask
	rng = bound + (rng-bound-bound)&mask
	*p = uint16(pv + (2048-pv)>>5&^mask - pv>>5&mask)
	return rng, code, mask & 1
}

// rcBitPL is rcBitBL for a probability already loaded (pv == *p), which
// lets bit-tree loops load both children of a node before its bit is known
// and take the next probability off the multiply's dependency chain. It
// returns a mask that is all ones for a 1 bit.
func rcBitPL(p *uint16, pv, rng, code uint32) (uint32, uint32, uint32) {
	bound := (rng >> 11) * pv
	mask := uint32((uint64(code)-uint64(bound))>>63) - 1
	code -= bound & mask
	rng = bound + (rng-bound-bound)&mask
	// pv + (2048-pv)>>5 for a 0 bit and pv - pv>>5 for a 1 bit in one
	// expression: an arithmetic shift of pv-2017 rounds toward minus
	// infinity, which makes it -((2048-pv)>>5) (the LZMA SDK's trick).
	*p = uint16(int32(pv) - (int32(pv)-int32(2017&^mask))>>5)
	return rng, code, mask
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
