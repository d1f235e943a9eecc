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

// The states of the LZMA state machine: what the last symbols were, as
// enum lzma_state in xz-embedded's xz_lzma2.h (stateLitLit is STATE_LIT_LIT
// and so on). Below litStates (LIT_STATES) the last symbol was a literal.
const (
	stateLitLit         = iota // STATE_LIT_LIT
	stateMatchLitLit           // STATE_MATCH_LIT_LIT
	stateRepLitLit             // STATE_REP_LIT_LIT
	stateShortrepLitLit        // STATE_SHORTREP_LIT_LIT
	stateMatchLit              // STATE_MATCH_LIT
	stateRepLit                // STATE_REP_LIT
	stateShortrepLit           // STATE_SHORTREP_LIT
	stateLitMatch              // STATE_LIT_MATCH
	stateLitLongrep            // STATE_LIT_LONGREP
	stateLitShortrep           // STATE_LIT_SHORTREP
	stateNonlitMatch           // STATE_NONLIT_MATCH
	stateNonlitRep             // STATE_NONLIT_REP

	litStates = 7 // LIT_STATES
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
// (lzma_state_literal in xz_lzma2.h, as a table).
var litNextState = [lzmaStates]uint32{
	stateLitLit:         stateLitLit,
	stateMatchLitLit:    stateLitLit,
	stateRepLitLit:      stateLitLit,
	stateShortrepLitLit: stateLitLit,
	stateMatchLit:       stateMatchLitLit,
	stateRepLit:         stateRepLitLit,
	stateShortrepLit:    stateShortrepLitLit,
	stateLitMatch:       stateMatchLit,
	stateLitLongrep:     stateRepLit,
	stateLitShortrep:    stateShortrepLit,
	stateNonlitMatch:    stateMatchLit,
	stateNonlitRep:      stateRepLit,
}
