package sim

import (
	"fmt"

	"github.com/usbflash/usbflash/usbms"
)

// phase is where the BOT state machine is: CBW, then an optional data
// phase, then CSW (BOT 5.3).
type phase int

const (
	phaseCBW phase = iota
	phaseDataOut
	phaseDataIn
	phaseCSW
)

// botState is the transport state of the device.
//
// Data toggles are not modelled as bits: the simulator delivers whole
// transfers, so a toggle mismatch cannot occur. What toggles are for is kept
// as rules instead: a halted endpoint answers STALL until ClearHalt for it,
// and ClearHalt resets both the host's and the device's toggle (USB 2.0
// 9.4.5), which is why it is always safe here and never loses a packet.
type botState struct {
	phase   phase
	haltIn  bool
	haltOut bool
	// wedged follows an invalid CBW: ClearHalt does not clear the halts
	// until a Bulk-Only Mass Storage Reset (BOT 6.6.1).
	wedged bool
	// hung follows NeverAnswer: bulk transfers block until a reset.
	hung bool

	tag    uint32
	lun    int
	host   int64 // dCBWDataTransferLength
	hostIn bool
	plan   plan
	// done counts data bytes moved in this data phase.
	done int64
	// limit is how many bytes the device sends in a data-in phase (fewer
	// than host ends it short); commit is how many bytes of a data-out
	// phase reach the medium (the rest is accepted and discarded).
	limit, commit int64
	// stallAt halts the data endpoint once done reaches it; -1 never.
	stallAt int64
	status  byte
	residue int64
}

// begin runs a well-formed CBW: the command executes (or is planned), and
// the device's intent is reconciled with the host's (BOT 6.7, the thirteen
// cases).
func (d *Device) begin(c cbw) {
	if d.cfg.Misbehaviour.IgnoreLUN {
		c.lun = 0
	}
	d.stats.Commands++
	if d.stats.Opcodes == nil {
		d.stats.Opcodes = make(map[byte]int64)
	}
	d.stats.Opcodes[c.cdb[0]]++
	d.addLatency()

	p := d.execute(c.lun, c.cdb)
	d.addBusy(d.commandCost(p))
	b := &d.bot
	*b = botState{haltIn: b.haltIn, haltOut: b.haltOut,
		tag: c.tag, lun: c.lun, host: int64(c.length), hostIn: c.in,
		plan: p, status: p.status, stallAt: -1}
	if d.takeFault(NeverAnswer, c.lun, nil) != nil || d.misbehaveCommand(c) {
		b.hung = true
	}
	p = b.plan
	intends := p.dir != dirNone && p.n > 0
	switch {
	case b.host == 0:
		// Cases 1-3: the host expects no data. A device that wanted to
		// move some reports a phase error and moves none.
		if intends {
			b.status = statusPhaseError
		}
		d.toCSW()
	case b.hostIn && p.dir == dirOut && intends:
		// Case 8 (Hi <> Do): refuse the data phase.
		b.status = statusPhaseError
		d.haltAndCSW(true)
	case !b.hostIn && p.dir == dirIn && intends:
		// Case 10 (Ho <> Di).
		b.status = statusPhaseError
		d.haltAndCSW(false)
	case !intends && p.status != statusPassed && b.hostIn && d.cfg.Misbehaviour.CSWInData:
		// A reader that sends its CSW where the data should be.
		d.toCSW()
	case !intends && p.status != statusPassed:
		// The command failed before any data: halt the endpoint the host
		// will use, so it reads the CSW instead (cases 4 and 9).
		d.haltAndCSW(b.hostIn)
	case b.hostIn:
		d.beginDataIn()
	case !intends:
		// Case 9 (Ho > Dn) for a command that passed: the device wants
		// no data, so it halts bulk-OUT; the residue tells the host.
		d.haltAndCSW(false)
	default:
		d.beginDataOut()
	}
}

// beginDataIn sets up a data-in phase: cases 4-7.
func (d *Device) beginDataIn() {
	b := &d.bot
	p := b.plan
	b.phase = phaseDataIn
	b.limit = min(p.n, b.host)
	if p.dir == dirNone {
		b.limit = 0 // case 4: the host gets a zero-length packet
	}
	if p.n > b.host {
		b.status = statusPhaseError // case 7: send what fits, then say so
	}
	if p.good < p.n {
		b.stallAt = min(p.good, b.limit) // a READ that fails part-way
	}
	if f := d.takeFault(ShortDataIn, b.lun, nil); f != nil && b.limit > 0 {
		short := b.limit / 2
		if f.AfterBytes > 0 {
			short = min(f.AfterBytes, b.limit-1)
		}
		b.limit = short
		if b.stallAt > short {
			b.stallAt = -1
		}
	}
	if f := d.takeFault(StallDataIn, b.lun, nil); f != nil {
		at := clampStall(f.AfterBytes, b.limit)
		if b.stallAt < 0 || at < b.stallAt {
			b.stallAt = at
			b.status = statusFailed
			d.setSense(b.lun, senseDataPhaseError())
		}
	}
}

// beginDataOut sets up a data-out phase: cases 11-13.
func (d *Device) beginDataOut() {
	b := &d.bot
	p := b.plan
	b.phase = phaseDataOut
	b.commit = min(p.good, p.n)
	if p.n > b.host {
		// Case 13 (Ho < Do): take the host's bytes but write none of
		// them: a partial block write is no write at all.
		b.status = statusPhaseError
		b.commit = 0
	}
	if f := d.takeFault(StallDataOut, b.lun, nil); f != nil {
		b.stallAt = clampStall(f.AfterBytes, b.host)
		b.status = statusFailed
		d.setSense(b.lun, senseDataPhaseError())
	}
}

// clampStall puts a stall strictly inside a data phase of n bytes, so it
// really cuts it short (at 0 when there is no data).
func clampStall(after, n int64) int64 {
	return max(0, min(after, n-1))
}

// haltAndCSW halts bulk-IN (in) or bulk-OUT and makes the CSW ready.
func (d *Device) haltAndCSW(in bool) {
	d.halt(in)
	d.toCSW()
}

// halt sets ENDPOINT_HALT on one endpoint.
func (d *Device) halt(in bool) {
	d.stats.Stalls++
	if in {
		d.bot.haltIn = true
	} else {
		d.bot.haltOut = true
	}
}

// toCSW ends the data phase and fixes the residue: what the host expected
// minus what the device really processed.
func (d *Device) toCSW() {
	b := &d.bot
	processed := b.done
	if b.phase == phaseDataOut {
		processed = min(b.done, b.commit)
		if p := b.plan; p.then != nil && b.status == statusPassed && b.done >= p.n {
			if s := p.then(p.params); s != nil {
				b.status = statusFailed
				d.setSense(b.lun, *s)
			}
		}
	}
	b.residue = b.host - processed
	b.phase = phaseCSW
}

// wedge answers an invalid or meaningless CBW: stall both endpoints until
// reset recovery.
func (d *Device) wedge() {
	d.stats.BadCBWs++
	d.bot = botState{phase: phaseCBW, wedged: true, stallAt: -1}
	d.halt(true)
	d.halt(false)
}

// stallError is the error a halted endpoint gives.
func stallError(in bool) error {
	if in {
		return fmt.Errorf("sim: bulk-in: %w", usbms.ErrStall)
	}
	return fmt.Errorf("sim: bulk-out: %w", usbms.ErrStall)
}

// setSense records sense for a LUN; a LUN that does not exist keeps none
// (its REQUEST SENSE always answers 5/25/00).
func (d *Device) setSense(lunIdx int, s sense) {
	if lunIdx >= 0 && lunIdx < len(d.luns) {
		d.luns[lunIdx].sense = s
	}
}
