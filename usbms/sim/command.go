package sim

// dir is the direction of a data phase, as the device intends it.
type dir int

const (
	dirNone dir = iota
	dirIn
	dirOut
)

// CSW status values.
const (
	statusPassed     = 0
	statusFailed     = 1
	statusPhaseError = 2
)

// plan is what the device intends to do for one command, decided when its
// CBW arrives: BOT compares it with what the host announced (the thirteen
// cases) before any data moves.
type plan struct {
	dir dir
	// n is the length of the data phase the device intends (Dn, Di, Do).
	n int64
	// data is the data-in of a small response; nil for READ, which reads
	// the medium straight into the host's buffer.
	data []byte
	// lun and off locate READ/WRITE data on the medium (byte offset).
	lun *lun
	off int64
	lba int64
	// good is how many of the n bytes succeed: READ sends them and then
	// halts bulk-IN, WRITE commits them and discards the rest. It is n
	// unless a medium error cuts the command short.
	good int64
	// status is the CSW status the command ends with.
	status byte
	// corrupt: a WRITE stores block corruptLBA inverted (fault Corrupt).
	corrupt    bool
	corruptLBA int64
	// params collects a data-out that is no medium data (UNMAP's
	// parameter list, WRITE SAME's block), and then acts on it once the
	// whole of it has come; a sense it returns fails the command.
	params []byte
	then   func(params []byte) *sense
}

// failed returns a plan that ends in CHECK CONDITION with s as sense,
// moving no data.
func failed(l *lun, s sense) plan {
	if l != nil {
		l.sense = s
	}
	return plan{status: statusFailed}
}

// dataIn returns a plan that sends b, cut to the allocation length.
func dataIn(b []byte, alloc int) plan {
	if alloc < len(b) {
		b = b[:alloc]
	}
	return plan{dir: dirIn, n: int64(len(b)), good: int64(len(b)), data: b}
}

// cdbLen is the CDB length implied by the opcode's group code (SPC-4
// 4.2.5.1): the host must send at least that many bytes.
func cdbLen(op byte) int {
	switch op >> 5 {
	case 0:
		return 6
	case 1, 2:
		return 10
	case 4:
		return 16
	case 5:
		return 12
	}
	return 16
}
