package sim

import "fmt"

// FaultKind names a misbehaviour the device can be told to show.
type FaultKind int

// The faults, each observable on the wire exactly as a real device shows it.
const (
	// StallDataOut halts bulk-OUT in the next data-out phase after
	// Fault.AfterBytes bytes; the CSW then says status 1 with the residue
	// of what was not taken, sense 0B/4B/00.
	StallDataOut FaultKind = iota + 1
	// StallDataIn halts bulk-IN in the next data-in phase after
	// Fault.AfterBytes bytes; CSW status 1, residue, sense 0B/4B/00.
	StallDataIn
	// StallCSW halts bulk-IN when the host reads the CSW. Count is the
	// number of stalls: 2 stalls the retry after ClearHalt too.
	StallCSW
	// BadCSWSignature sends the next CSW with a wrong signature.
	BadCSWSignature
	// BadCSWTag sends the next CSW with a tag that does not match the CBW.
	BadCSWTag
	// PhaseError sends the next CSW with status 2 (phase error).
	PhaseError
	// ShortDataIn ends the next data-in phase short after Fault.AfterBytes
	// bytes (0: half of it) with status 0 and the residue set.
	ShortDataIn
	// UnitAttention fails the next command (not INQUIRY or REQUEST SENSE)
	// with 6/28/00, medium may have changed.
	UnitAttention
	// NotReady fails the next Count commands with 2/04/01, becoming ready.
	NotReady
	// MediumError fails READs (3/11/00) and WRITEs (3/0C/00) covering
	// Fault.LBA, with INFORMATION = LBA and VALID = 1. Blocks before it are
	// moved; the failing one and those after are not.
	MediumError
	// Disconnect drops the device off the bus after Fault.AfterBytes data
	// bytes: every later call, ResetPort included, returns
	// usbms.ErrNoDevice.
	Disconnect
	// NeverAnswer makes the next command's data phase or CSW never come:
	// the transfer blocks until its ctx is done, and so does every bulk
	// transfer until a Mass Storage Reset or ResetPort.
	NeverAnswer
	// Corrupt stores the block Fault.LBA of the next Count WRITEs that
	// cover it with every byte inverted, and reports success: the silent
	// corruption a card's failing flash or lost cache shows only when it
	// is read back. Persistent: every WRITE of it.
	Corrupt
)

// String is the name the fault has in a sim: target's fault= option.
func (k FaultKind) String() string {
	switch k {
	case StallDataOut:
		return "stall-out"
	case StallDataIn:
		return "stall-in"
	case StallCSW:
		return "stall-csw"
	case BadCSWSignature:
		return "bad-csw-signature"
	case BadCSWTag:
		return "bad-csw-tag"
	case PhaseError:
		return "phase-error"
	case ShortDataIn:
		return "short-in"
	case UnitAttention:
		return "unit-attention"
	case NotReady:
		return "not-ready"
	case MediumError:
		return "medium-error"
	case Disconnect:
		return "disconnect"
	case NeverAnswer:
		return "never-answer"
	case Corrupt:
		return "corrupt"
	}
	return fmt.Sprintf("FaultKind(%d)", int(k))
}

// known reports whether k is one of the kinds above.
func (k FaultKind) known() bool { return k >= StallDataOut && k <= Corrupt }

// Fault is one injected misbehaviour.
type Fault struct {
	Kind FaultKind
	// LUN is the logical unit whose commands are affected (Disconnect
	// affects the whole device).
	LUN int
	// Count is how many commands are affected (for StallCSW: how many
	// stalls); 0 means 1.
	Count int
	// LBA is the failing block of MediumError, the corrupted one of
	// Corrupt.
	LBA int64
	// AfterBytes is, for Disconnect, the data bytes moved (from Inject on)
	// before the device drops off; for StallDataOut, StallDataIn and
	// ShortDataIn, the bytes of the data phase moved before it halts or
	// ends.
	AfterBytes int64
	// Persistent faults are never used up; only ResetPort clears them
	// (for testing the paths where the host gives up).
	Persistent bool
}

// pendingFault is an injected fault and how much of it is left.
type pendingFault struct {
	Fault
	left int
}

// Inject arms f. Faults of the same kind are used in the order injected.
// An unknown kind is ignored.
func (d *Device) Inject(f Fault) {
	if !f.Kind.known() {
		return
	}
	d.mu.Lock()
	defer d.mu.Unlock()
	if f.Kind == Disconnect {
		at := d.stats.BytesOut + d.stats.BytesIn + max(f.AfterBytes, 0)
		if d.disconnectAt < 0 || at < d.disconnectAt {
			d.disconnectAt = at
		}
		return
	}
	d.faults = append(d.faults, &pendingFault{Fault: f, left: max(f.Count, 1)})
}

// takeFault uses up one instance of the first armed fault of kind on lun
// for which ok (if not nil) holds, and returns it; nil when none is armed.
func (d *Device) takeFault(kind FaultKind, lunIdx int, ok func(*Fault) bool) *Fault {
	for i, p := range d.faults {
		if p.Kind != kind || p.LUN != lunIdx || (ok != nil && !ok(&p.Fault)) {
			continue
		}
		f := p.Fault
		if !p.Persistent {
			p.left--
			if p.left <= 0 {
				d.faults = append(d.faults[:i], d.faults[i+1:]...)
			}
		}
		return &f
	}
	return nil
}
