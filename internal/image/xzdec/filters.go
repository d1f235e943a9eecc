package xzdec

import "encoding/binary"

// converter undoes one non-LZMA2 filter in place. convert returns how many
// leading bytes of b are final; the rest must be presented again with more
// data appended. With final set it must finish everything.
type converter interface {
	convert(b []byte, final bool) int
}

// newConverter builds the decoder for a filter already validated by
// checkFilter.
func newConverter(f filterSpec) converter {
	if f.id == filterDelta {
		return &deltaDec{dist: int(f.props[0]) + 1}
	}
	var start uint32
	if len(f.props) == 4 {
		start = binary.LittleEndian.Uint32(f.props)
	}
	b := &bcjDec{pos: start, prevPos: start - 5}
	switch f.id {
	case filterX86:
		b.code = b.x86
	case filterARM:
		b.code = armCode
	case filterARMThumb:
		b.code = armThumbCode
	case filterARM64:
		b.code = arm64Code
	case filterPowerPC:
		b.code = powerPCCode
	case filterSPARC:
		b.code = sparcCode
	case filterIA64:
		b.code = ia64Code
	}
	return b
}

// deltaDec undoes the delta filter: each byte is stored as the difference
// from the byte dist positions earlier.
type deltaDec struct {
	dist int
	pos  uint8
	hist [256]byte
}

func (d *deltaDec) convert(b []byte, final bool) int {
	pos := d.pos
	dist := uint8(d.dist) // 256 wraps to 0, which indexes the same slot
	for i := range b {
		b[i] += d.hist[uint8(pos+dist)]
		d.hist[pos] = b[i]
		pos--
	}
	d.pos = pos
	return len(b)
}

// bcjDec undoes a branch-call-jump filter. These convert absolute branch
// targets back to relative ones; code is the per-architecture routine
// ported from liblzma's simple/ directory, returning bytes processed.
type bcjDec struct {
	pos      uint32 // stream position of b[0] plus the start offset
	prevMask uint32 // x86 only
	prevPos  uint32 // x86 only
	code     func(pos uint32, b []byte) int
}

func (d *bcjDec) convert(b []byte, final bool) int {
	n := d.code(d.pos, b)
	d.pos += uint32(n)
	if final {
		return len(b) // trailing bytes too short for an instruction pass through
	}
	return n
}

func test86MSByte(b byte) bool { return b == 0 || b == 0xFF }

var (
	x86AllowedStatus = [8]bool{true, true, true, false, true, false, false, false}
	x86BitNumber     = [8]uint32{0, 1, 2, 2, 3, 3, 3, 3}
)

func (d *bcjDec) x86(nowPos uint32, b []byte) int {
	if len(b) < 5 {
		return 0
	}
	prevMask, prevPos := d.prevMask, d.prevPos
	if nowPos-prevPos > 5 {
		prevPos = nowPos - 5
	}
	limit := len(b) - 5
	i := 0
	for i <= limit {
		c := b[i]
		if c != 0xE8 && c != 0xE9 {
			i++
			continue
		}
		offset := nowPos + uint32(i) - prevPos
		prevPos = nowPos + uint32(i)
		if offset > 5 {
			prevMask = 0
		} else {
			for k := uint32(0); k < offset; k++ {
				prevMask &= 0x77
				prevMask <<= 1
			}
		}
		c = b[i+4]
		if test86MSByte(c) && x86AllowedStatus[(prevMask>>1)&7] && prevMask>>1 < 0x10 {
			src := uint32(c)<<24 | uint32(b[i+3])<<16 | uint32(b[i+2])<<8 | uint32(b[i+1])
			var dest uint32
			for {
				dest = src - (nowPos + uint32(i) + 5)
				if prevMask == 0 {
					break
				}
				k := x86BitNumber[prevMask>>1]
				c = byte(dest >> (24 - k*8))
				if !test86MSByte(c) {
					break
				}
				src = dest ^ (1<<(32-k*8) - 1)
			}
			b[i+4] = ^byte((dest>>24)&1 - 1)
			b[i+3] = byte(dest >> 16)
			b[i+2] = byte(dest >> 8)
			b[i+1] = byte(dest)
			i += 5
			prevMask = 0
		} else {
			i++
			prevMask |= 1
			if test86MSByte(c) {
				prevMask |= 0x10
			}
		}
	}
	d.prevMask, d.prevPos = prevMask, prevPos
	return i
}

func armCode(nowPos uint32, b []byte) int {
	i := 0
	for ; i+4 <= len(b); i += 4 {
		if b[i+3] == 0xEB {
			src := (uint32(b[i+2])<<16 | uint32(b[i+1])<<8 | uint32(b[i])) << 2
			dest := (src - (nowPos + uint32(i) + 8)) >> 2
			b[i+2] = byte(dest >> 16)
			b[i+1] = byte(dest >> 8)
			b[i] = byte(dest)
		}
	}
	return i
}

func armThumbCode(nowPos uint32, b []byte) int {
	i := 0
	for ; i+4 <= len(b); i += 2 {
		if b[i+1]&0xF8 == 0xF0 && b[i+3]&0xF8 == 0xF8 {
			src := (uint32(b[i+1])&7)<<19 | uint32(b[i])<<11 | (uint32(b[i+3])&7)<<8 | uint32(b[i+2])
			src <<= 1
			dest := (src - (nowPos + uint32(i) + 4)) >> 1
			b[i+1] = byte(0xF0 | (dest>>19)&7)
			b[i] = byte(dest >> 11)
			b[i+3] = byte(0xF8 | (dest>>8)&7)
			b[i+2] = byte(dest)
			i += 2
		}
	}
	return i
}

func arm64Code(nowPos uint32, b []byte) int {
	i := 0
	for ; i+4 <= len(b); i += 4 {
		pc := nowPos + uint32(i)
		instr := binary.LittleEndian.Uint32(b[i:])
		if instr>>26 == 0x25 {
			// BL
			src := instr
			instr = 0x94000000 | (src-pc>>2)&0x03FFFFFF
			binary.LittleEndian.PutUint32(b[i:], instr)
		} else if instr&0x9F000000 == 0x90000000 {
			// ADRP
			src := (instr>>29)&3 | (instr>>3)&0x001FFFFC
			if (src+0x00020000)&0x001C0000 != 0 {
				continue
			}
			instr &= 0x9000001F
			dest := src - pc>>12
			instr |= (dest & 3) << 29
			instr |= (dest & 0x0003FFFC) << 3
			instr |= (0 - (dest & 0x00020000)) & 0x00E00000
			binary.LittleEndian.PutUint32(b[i:], instr)
		}
	}
	return i
}

func powerPCCode(nowPos uint32, b []byte) int {
	i := 0
	for ; i+4 <= len(b); i += 4 {
		if b[i]>>2 == 0x12 && b[i+3]&3 == 1 {
			src := (uint32(b[i])&3)<<24 | uint32(b[i+1])<<16 | uint32(b[i+2])<<8 | uint32(b[i+3])&^3
			dest := src - (nowPos + uint32(i))
			b[i] = byte(0x48 | (dest>>24)&3)
			b[i+1] = byte(dest >> 16)
			b[i+2] = byte(dest >> 8)
			b[i+3] = b[i+3]&3 | byte(dest)
		}
	}
	return i
}

func sparcCode(nowPos uint32, b []byte) int {
	i := 0
	for ; i+4 <= len(b); i += 4 {
		if (b[i] == 0x40 && b[i+1]&0xC0 == 0) || (b[i] == 0x7F && b[i+1]&0xC0 == 0xC0) {
			src := binary.BigEndian.Uint32(b[i:]) << 2
			dest := (src - (nowPos + uint32(i))) >> 2
			dest = ((0-(dest>>22)&1)<<22)&0x3FFFFFFF | dest&0x3FFFFF | 0x40000000
			binary.BigEndian.PutUint32(b[i:], dest)
		}
	}
	return i
}

var ia64BranchTable = [32]uint32{
	0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0,
	4, 4, 6, 6, 0, 0, 7, 7, 4, 4, 0, 0, 4, 4, 0, 0,
}

func ia64Code(nowPos uint32, b []byte) int {
	i := 0
	for ; i+16 <= len(b); i += 16 {
		mask := ia64BranchTable[b[i]&0x1F]
		bitPos := uint32(5)
		for slot := 0; slot < 3; slot, bitPos = slot+1, bitPos+41 {
			if (mask>>slot)&1 == 0 {
				continue
			}
			bytePos := int(bitPos >> 3)
			bitRes := bitPos & 7
			var instr uint64
			for j := 0; j < 6; j++ {
				instr |= uint64(b[i+j+bytePos]) << (8 * j)
			}
			norm := instr >> bitRes
			if (norm>>37)&0xF != 0x5 || (norm>>9)&7 != 0 {
				continue
			}
			src := uint32((norm >> 13) & 0xFFFFF)
			src |= uint32((norm>>36)&1) << 20
			src <<= 4
			dest := (src - (nowPos + uint32(i))) >> 4
			norm &^= uint64(0x8FFFFF) << 13
			norm |= uint64(dest&0xFFFFF) << 13
			norm |= uint64(dest&0x100000) << (36 - 20)
			instr &= 1<<bitRes - 1
			instr |= norm << bitRes
			for j := 0; j < 6; j++ {
				b[i+j+bytePos] = byte(instr >> (8 * j))
			}
		}
	}
	return i
}

// filterChain runs the decoders of a block's non-LZMA2 filters, last filter
// of the header first. Each stage keeps the tail it could not finish yet.
type filterChain struct {
	stages []filterStage
}

type filterStage struct {
	conv    converter
	pending []byte
	out     []byte
}

func newFilterChain(specs []filterSpec) *filterChain {
	if len(specs) <= 1 {
		return nil
	}
	c := &filterChain{}
	for i := len(specs) - 2; i >= 0; i-- {
		c.stages = append(c.stages, filterStage{conv: newConverter(specs[i])})
	}
	return c
}

// process feeds data through every stage and returns the finished output,
// valid until the next call.
func (c *filterChain) process(data []byte, final bool) []byte {
	for i := range c.stages {
		s := &c.stages[i]
		s.pending = append(s.pending, data...)
		n := s.conv.convert(s.pending, final)
		s.out = append(s.out[:0], s.pending[:n]...)
		s.pending = s.pending[:copy(s.pending, s.pending[n:])]
		data = s.out
	}
	return data
}
