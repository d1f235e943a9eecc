package xzdec

// LZMA model constants, named as in the LZMA SDK and xz-embedded.
const (
	lzmaStates       = 12
	posStatesMax     = 1 << 4
	lenLowSyms       = 1 << 3
	lenMidSyms       = 1 << 3
	lenHighSyms      = 1 << 8
	distStates       = 4
	distSlots        = 1 << 6
	distModelStart   = 4
	distModelEnd     = 14
	fullDistances    = 1 << (distModelEnd / 2)
	alignBits        = 4
	matchLenMin      = 2
	probInit         = 1 << 10
	rcTop            = 1 << 24
	literalCoderSize = 0x300
	maxLcLp          = 4 // LZMA2 limits lc+lp to 4
)

type lenProbs struct {
	choice  uint16
	choice2 uint16
	low     [posStatesMax][lenLowSyms]uint16
	mid     [posStatesMax][lenMidSyms]uint16
	high    [lenHighSyms]uint16
}

// lzmaProbs holds every adaptive probability in fixed-size arrays so the hot
// loop indexes memory directly with no slice headers to load.
type lzmaProbs struct {
	isMatch     [lzmaStates * posStatesMax]uint16
	isRep0Long  [lzmaStates * posStatesMax]uint16
	isRep       [lzmaStates]uint16
	isRep0      [lzmaStates]uint16
	isRep1      [lzmaStates]uint16
	isRep2      [lzmaStates]uint16
	distSlot    [distStates][distSlots]uint16
	distSpecial [fullDistances - distModelEnd]uint16
	distAlign   [1 << alignBits]uint16
	matchLen    lenProbs
	repLen      lenProbs
	literal     [literalCoderSize << maxLcLp]uint16
}

func fillProbs(s []uint16) {
	for i := range s {
		s[i] = probInit
	}
}

func (l *lenProbs) reset() {
	l.choice, l.choice2 = probInit, probInit
	for i := range l.low {
		fillProbs(l.low[i][:])
		fillProbs(l.mid[i][:])
	}
	fillProbs(l.high[:])
}

// reset sets all probabilities to 0.5; only the literal coders that lc+lp
// can reach are touched, which matters for small chunks.
func (p *lzmaProbs) reset(lclp uint) {
	fillProbs(p.isMatch[:])
	fillProbs(p.isRep0Long[:])
	fillProbs(p.isRep[:])
	fillProbs(p.isRep0[:])
	fillProbs(p.isRep1[:])
	fillProbs(p.isRep2[:])
	for i := range p.distSlot {
		fillProbs(p.distSlot[i][:])
	}
	fillProbs(p.distSpecial[:])
	fillProbs(p.distAlign[:])
	p.matchLen.reset()
	p.repLen.reset()
	fillProbs(p.literal[:literalCoderSize<<lclp])
}

// litNextState maps the state after a literal.
var litNextState = [lzmaStates]uint32{0, 0, 0, 0, 1, 2, 3, 4, 5, 6, 4, 5}
