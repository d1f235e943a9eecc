// How real readers depart from the Bulk-Only and SCSI specs, one
// Misbehaviour field each, and the USB identity that lets a host look the
// reader up in its quirk table.

package sim

import (
	"encoding/binary"
	"fmt"
	"strings"
	"time"
)

// Misbehaviour is how the simulated reader departs from the specs, as real
// readers do (Linux's usb-storage and sd carry a leniency or a quirk flag
// for each). The zero value is a well-behaved reader. Every field applies
// to every LUN.
type Misbehaviour struct {
	// ChokeBlocks > 0: a READ or WRITE of more blocks than this fails as
	// ChokeMode says, every time; smaller ones work.
	ChokeBlocks int64
	ChokeMode   ChokeMode

	// Residue makes every CSW's dCSWDataResidue lie.
	Residue ResidueMode

	// CSWSignature, when not 0, is the dCSWSignature of every CSW (as
	// read little-endian from the wire: "USBU" is 0x55425355).
	CSWSignature uint32

	// CSWInData: a data-in command that fails before any data sends its
	// CSW in the data phase instead of stalling bulk-IN.
	CSWInData bool

	// MaxLUN is how Get Max LUN is answered; MaxLUNValue is the answer of
	// MaxLUNReport.
	MaxLUN      MaxLUNMode
	MaxLUNValue int

	// IgnoreLUN: the device ignores bCBWLUN; every LUN is LUN 0.
	IgnoreLUN bool

	// Sense makes READs and WRITEs end in CHECK CONDITION with the
	// condition SenseMode names: the next SenseCount of them (0: every
	// one).
	Sense      SenseMode
	SenseCount int

	// NotReady fails every command but INQUIRY and REQUEST SENSE with
	// NOT READY, ASC/ASCQ NotReadyASC/NotReadyASCQ: until a START STOP
	// UNIT with Start=1 (NotReadyUntilStart), else for the next
	// NotReadyCount commands (0: 1).
	NotReady           bool
	NotReadyASC        byte
	NotReadyASCQ       byte
	NotReadyUntilStart bool
	NotReadyCount      int

	// Hang lists commands the device never answers (data phase and CSW
	// never come) until reset recovery: every time one is sent.
	Hang []HangCommand

	// ModePlaceholder: MODE SENSE reports the medium write-protected
	// until the first READ of that LUN, as readers whose mode data is a
	// placeholder until the card is touched.
	ModePlaceholder bool

	// LastSectorBug > 0: a READ or WRITE of more than one block that
	// touches the last LastSectorBug blocks fails with MEDIUM ERROR at the
	// first of them; single-block commands work.
	LastSectorBug int64

	// CapacityOffByOne: READ CAPACITY reports the block count where the
	// last LBA belongs, one block more than the card has.
	CapacityOffByOne bool

	// WriteCache: the caching mode page says the write cache is on
	// (WCE), so a host that honours it flushes with SYNCHRONIZE CACHE.
	WriteCache bool

	// InitialRead10 > 0: the first InitialRead10 READ(10)s after the
	// device opens (or its port is reset) fail with ILLEGAL REQUEST,
	// LBA out of range (5/21/00), as a Feiya reader fails the first READ
	// after a card goes in.
	InitialRead10 int

	// ResetSettle: after a Bulk-Only Mass Storage Reset the device is
	// still resetting for this long (on its clock): a CBW that comes
	// sooner is lost, and its command never answered until the next
	// reset.
	ResetSettle time.Duration
}

// ChokeMode is what a READ or WRITE larger than Misbehaviour.ChokeBlocks
// does.
type ChokeMode int

// Choke modes.
const (
	// ChokeHang: the data phase never comes; only reset recovery (or a
	// port reset) brings the device back.
	ChokeHang ChokeMode = iota
	// ChokeStall: the device halts the data endpoint at once and ends
	// the command with a phase error (CSW status 2).
	ChokeStall
	// ChokeDisconnect: the device drops off the bus when the data phase
	// begins and comes back only when the host resets the port (it
	// re-enumerates).
	ChokeDisconnect
)

var chokeNames = []string{"hang", "stall", "disconnect"}

func (m ChokeMode) String() string { return enumName(chokeNames, int(m)) }

// ResidueMode is how the CSW residue lies.
type ResidueMode int

// Residue modes.
const (
	ResidueTrue ResidueMode = iota
	// ResidueOver: dCBWDataTransferLength + 512, more than the command
	// could leave over (512 on TEST UNIT READY).
	ResidueOver
	// ResidueGarbage: a nonzero value below the length that has nothing
	// to do with what moved.
	ResidueGarbage
	// ResidueLength: the whole length, as if nothing moved.
	ResidueLength
)

var residueNames = []string{"", "over", "garbage", "length"}

func (m ResidueMode) String() string { return enumName(residueNames, int(m)) }

// MaxLUNMode is how Get Max LUN is answered.
type MaxLUNMode int

// Get Max LUN modes (MaxLUNStall is also Config.StallGetMaxLUN).
const (
	MaxLUNTrue MaxLUNMode = iota
	// MaxLUNHang: the request is never answered (NAKed until the host's
	// timeout).
	MaxLUNHang
	// MaxLUNError: the request fails with a transfer error that is not
	// a STALL.
	MaxLUNError
	// MaxLUNReport: the answer is Misbehaviour.MaxLUNValue, whatever the
	// LUNs are.
	MaxLUNReport
)

var maxLUNNames = []string{"", "hang", "error", "N"}

func (m MaxLUNMode) String() string { return enumName(maxLUNNames, int(m)) }

// SenseMode is the condition Misbehaviour.Sense reports.
type SenseMode int

// Sense modes.
const (
	SenseNone SenseMode = iota
	// SenseRecovered: the command moves all its data and then reports
	// RECOVERED ERROR (1/17/01: recovered data with retries).
	SenseRecovered
	// SenseEmpty: the command fails before any data and REQUEST SENSE
	// returns NO SENSE (0/00/00).
	SenseEmpty
	// SenseHardware: the command fails before any data with HARDWARE
	// ERROR (4/44/00: internal target failure).
	SenseHardware
	// SenseGarbage: the command fails before any data and REQUEST SENSE
	// returns bytes that are not sense data (response code 0).
	SenseGarbage
)

var senseModeNames = []string{"", "recovered", "empty", "hwerror", "garbage"}

func (m SenseMode) String() string { return enumName(senseModeNames, int(m)) }

// HangCommand names a command Misbehaviour.Hang can make the device
// ignore.
type HangCommand int

// Commands that can hang.
const (
	HangInquiry   HangCommand = iota // standard INQUIRY (EVPD=0)
	HangVPD                          // INQUIRY with EVPD=1
	HangModeSense                    // MODE SENSE(6) and (10)
	HangSync                         // SYNCHRONIZE CACHE
	HangPrevent                      // PREVENT ALLOW MEDIUM REMOVAL
	HangRC16                         // READ CAPACITY(16)
	HangStartStop                    // START STOP UNIT
)

var hangNames = []string{"inquiry", "vpd", "modesense", "sync", "prevent", "rc16", "startstop"}

func (h HangCommand) String() string { return enumName(hangNames, int(h)) }

// matches reports whether cdb is the command h names.
func (h HangCommand) matches(cdb []byte) bool {
	switch h {
	case HangInquiry:
		return cdb[0] == opInquiry && len(cdb) > 1 && cdb[1]&1 == 0
	case HangVPD:
		return cdb[0] == opInquiry && len(cdb) > 1 && cdb[1]&1 != 0
	case HangModeSense:
		return cdb[0] == opModeSense6 || cdb[0] == opModeSense10
	case HangSync:
		return cdb[0] == opSyncCache10
	case HangPrevent:
		return cdb[0] == opPreventAllow
	case HangRC16:
		return cdb[0] == opServiceIn16
	case HangStartStop:
		return cdb[0] == opStartStopUnit
	}
	return false
}

func enumName(names []string, i int) string {
	if i >= 0 && i < len(names) {
		return names[i]
	}
	return fmt.Sprintf("mode(%d)", i)
}

// isReadWrite reports whether op is READ or WRITE (10) or (16).
func isReadWrite(op byte) bool {
	return op == opRead10 || op == opRead16 || op == opWrite10 || op == opWrite16
}

// rwBlocks decodes the LBA and block count of a READ or WRITE.
func rwBlocks(cdb []byte) (lba, count uint64) {
	switch cdb[0] {
	case opRead10, opWrite10:
		if len(cdb) >= 10 {
			return uint64(binary.BigEndian.Uint32(cdb[2:6])), uint64(binary.BigEndian.Uint16(cdb[7:9]))
		}
	default:
		if len(cdb) >= 16 {
			return binary.BigEndian.Uint64(cdb[2:10]), uint64(binary.BigEndian.Uint32(cdb[10:14]))
		}
	}
	return 0, 0
}

// misbehaveCommand applies the misbehaviours that decide how a command
// goes once its CBW arrived (choke, hang): it returns true when the
// command will never be answered. Called from begin.
func (d *Device) misbehaveCommand(c cbw) (hang bool) {
	m := &d.cfg.Misbehaviour
	for _, h := range m.Hang {
		if h.matches(c.cdb) {
			return true
		}
	}
	if m.ChokeBlocks <= 0 || !isReadWrite(c.cdb[0]) || d.bot.plan.status != statusPassed {
		return false
	}
	if _, count := rwBlocks(c.cdb); int64(count) <= m.ChokeBlocks {
		return false
	}
	d.stats.Chokes++
	switch m.ChokeMode {
	case ChokeStall:
		b := &d.bot
		b.plan.status = statusPhaseError
		b.status = statusPhaseError
		b.plan.good = 0
		b.stallAt = 0
		b.commit = 0
		return false
	case ChokeDisconnect:
		d.gone, d.backOnReset = true, true
		return false
	}
	return true
}

// cswResidue is the residue the CSW reports for a data phase of host
// bytes that left residue over.
func (d *Device) cswResidue(host, residue int64) uint32 {
	switch d.cfg.Misbehaviour.Residue {
	case ResidueOver:
		return uint32(min(host+512, 0xFFFFFFFF))
	case ResidueGarbage:
		if host == 0 {
			return 0
		}
		return uint32(1 + (host*7919+13)%host)
	case ResidueLength:
		return uint32(host)
	}
	return uint32(residue)
}

// cswSignature is the signature every CSW carries.
func (d *Device) cswSignature() uint32 {
	if s := d.cfg.Misbehaviour.CSWSignature; s != 0 {
		return s
	}
	return cswSignature
}

// misbehaveMedia applies the misbehaviours of READ and WRITE that a card
// (or the reader's handling of it) shows: injected sense conditions and
// the last-sector bug. It returns the plan to use instead of p, and
// whether there is one. Called from readWrite once the command is valid.
func (d *Device) misbehaveMedia(l *lun, p plan, lba, count uint64, write bool) (plan, bool) {
	m := &d.cfg.Misbehaviour
	if !write && d.lastOp == opRead10 && d.read10Failed < m.InitialRead10 {
		d.read10Failed++
		return failed(l, senseLBAOutOfRange()), true
	}
	if !write {
		l.readSeen = true
	}
	if m.Sense != SenseNone && (m.SenseCount == 0 || d.senseUsed < m.SenseCount) {
		d.senseUsed++
		switch m.Sense {
		case SenseRecovered:
			// Everything moves, then the CSW says "failed".
			p.status = statusFailed
			l.sense = sense{key: keyRecoveredError, asc: 0x17, ascq: 0x01}
			return p, true
		case SenseEmpty:
			return failed(l, sense{}), true
		case SenseHardware:
			return failed(l, sense{key: keyHardwareError, asc: 0x44}), true
		case SenseGarbage:
			l.garbageSense = true
			return failed(l, sense{key: keyHardwareError}), true
		}
	}
	if n := m.LastSectorBug; n > 0 && count > 1 {
		first := uint64(max(l.cfg.Blocks-n, 0))
		if lba+count > first {
			bad := max(int64(first), int64(lba))
			p.good = (bad - int64(lba)) * l.blockSize
			p.status = statusFailed
			if write {
				l.sense = senseWriteError(bad)
			} else {
				l.sense = senseReadError(bad)
			}
			return p, true
		}
	}
	return p, false
}

// notReady reports the NOT READY condition a command meets, if any. Called
// from execute for every command but INQUIRY and REQUEST SENSE.
func (d *Device) notReady(cdb []byte) (sense, bool) {
	m := &d.cfg.Misbehaviour
	if !m.NotReady || d.readyAgain {
		return sense{}, false
	}
	if m.NotReadyUntilStart {
		if cdb[0] == opStartStopUnit && len(cdb) > 4 && cdb[4]&0x01 != 0 {
			d.readyAgain = true
			return sense{}, false
		}
	} else if d.notReadyUsed++; d.notReadyUsed >= max(m.NotReadyCount, 1) {
		d.readyAgain = true
	}
	return sense{key: keyNotReady, asc: m.NotReadyASC, ascq: m.NotReadyASCQ}, true
}

// readCapacityLast is the last LBA READ CAPACITY reports for l.
func (d *Device) readCapacityLast(l *lun) uint64 {
	if d.cfg.Misbehaviour.CapacityOffByOne {
		return uint64(l.cfg.Blocks)
	}
	return uint64(l.cfg.Blocks - 1)
}

// clockNow is the device's clock: the modelled clock when it is virtual,
// wall time since New otherwise.
func (d *Device) clockNow() time.Duration {
	if d.cfg.VirtualClock {
		return d.stats.ModelTime
	}
	return time.Since(d.created)
}

// startSettling begins ResetSettle after a Mass Storage Reset.
func (d *Device) startSettling() {
	if s := d.cfg.Misbehaviour.ResetSettle; s > 0 {
		d.settleUntil = d.clockNow() + s
	}
}

// losesCBW reports whether a CBW arriving now is lost because the device
// is still resetting.
func (d *Device) losesCBW() bool {
	return d.cfg.Misbehaviour.ResetSettle > 0 && d.clockNow() < d.settleUntil
}

// parseHang reads inquiry,modesense,... for the hang= option.
func parseHang(s string) ([]HangCommand, error) {
	var out []HangCommand
	for _, name := range strings.Split(s, ",") {
		found := false
		for i, n := range hangNames {
			if n == name {
				out = append(out, HangCommand(i))
				found = true
			}
		}
		if !found {
			return nil, fmt.Errorf("unknown command %q: want one or more of %s, comma-separated", name, strings.Join(hangNames, ", "))
		}
	}
	return out, nil
}
