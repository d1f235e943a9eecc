package usbms

import (
	"fmt"
	"math/bits"
	"strings"
)

// Quirks are flags that adapt the transport and its LUNs to a reader that
// departs from the specs. They are Linux usb-storage's US_FL_ flags, with
// the kernel's names and, where it has one, its usb-storage.quirks=
// letter, so a reader fixed for Linux is fixed the same way here;
// ReaderSetup chooses them for a reader (the quirk table, the user's
// overrides). Flags that concern no Bulk-Only writer are carried so that
// a table or an override naming them is understood, and do nothing.
type Quirks uint64

// The flags with a letter, in the kernel's letter order.
const (
	QuirkSaneSense          Quirks = 1 << iota // a: the device gives full-length sense data
	QuirkBadSense                              // b: ask 18 bytes of sense, never more
	QuirkFixCapacity                           // c: READ CAPACITY reports the block count: one block less
	QuirkNoReadDiscInfo                        // d: optical only
	QuirkNoReadCapacity16                      // e: never READ CAPACITY(16); (10) saying 0xFFFFFFFF means no medium
	QuirkNoReportOpcodes                       // f: never REPORT SUPPORTED OPERATION CODES (never sent anyway)
	QuirkMaxSectors240                         // g: UAS only
	QuirkCapacityHeuristics                    // h: an odd block count is one too many
	QuirkIgnoreDevice                          // i: not a storage device
	QuirkNoReportLUNs                          // j: never REPORT LUNS (never sent anyway)
	QuirkNoSame                                // k: never WRITE SAME (never sent anyway)
	QuirkNotLockable                           // l: never PREVENT ALLOW MEDIUM REMOVAL
	QuirkMaxSectors64                          // m: at most 64 blocks per READ or WRITE
	QuirkInitialRead10                         // n: a READ(10) that fails after one passed is repeated
	QuirkCapacityOK                            // o: the capacity is right: no correction
	QuirkWriteCache                            // p: the device caches writes: always flush
	QuirkIgnoreResidue                         // r: the CSW residue means nothing
	QuirkSingleLUN                             // s: one LUN; never Get Max LUN
	QuirkNoATA1X                               // t: ATA pass-through only (never sent anyway)
	QuirkIgnoreUAS                             // u: prefer Bulk-Only (usbflash always does)
	QuirkNoWPDetect                            // w: never MODE SENSE for write protection
	QuirkAlwaysSync                            // y: always SYNCHRONIZE CACHE
	// The flags the kernel sets only from its table.
	QuirkIgnoreTag      // the CSW tag need not match the CBW's
	QuirkFixInquiry     // never INQUIRY: answer it from the USB identity
	QuirkGoSlow         // pause between the CBW and the data phase at high speed
	QuirkBulk32         // a 32-byte CBW
	QuirkNeedsCap16     // READ CAPACITY(16) first: (10) wraps past 2 TiB
	QuirkSenseAfterSync // REQUEST SENSE right after SYNCHRONIZE CACHE
	QuirkBrokenFUA      // FUA is not honoured (usbflash never sets it)
	QuirkNeedOverride   // the descriptors are wrong; the table's subclass and protocol hold
	QuirkMaxSectorsMin  // one page per command (a Control/Bulk device)
	QuirkSCMMultTarg    // a parallel-SCSI adapter with several targets
	QuirkTryVPDPages    // usbflash's own: read VPD pages 00, 80 and B0 (Linux asks none of a USB disk)
	quirkEnd
)

// quirkInfo is a flag's kernel name and letter (0: table only).
type quirkInfo struct {
	name   string
	letter byte
}

var quirkInfos = [...]quirkInfo{
	{"SANE_SENSE", 'a'}, {"BAD_SENSE", 'b'}, {"FIX_CAPACITY", 'c'}, {"NO_READ_DISC_INFO", 'd'},
	{"NO_READ_CAPACITY_16", 'e'}, {"NO_REPORT_OPCODES", 'f'}, {"MAX_SECTORS_240", 'g'},
	{"CAPACITY_HEURISTICS", 'h'}, {"IGNORE_DEVICE", 'i'}, {"NO_REPORT_LUNS", 'j'}, {"NO_SAME", 'k'},
	{"NOT_LOCKABLE", 'l'}, {"MAX_SECTORS_64", 'm'}, {"INITIAL_READ10", 'n'}, {"CAPACITY_OK", 'o'},
	{"WRITE_CACHE", 'p'}, {"IGNORE_RESIDUE", 'r'}, {"SINGLE_LUN", 's'}, {"NO_ATA_1X", 't'},
	{"IGNORE_UAS", 'u'}, {"NO_WP_DETECT", 'w'}, {"ALWAYS_SYNC", 'y'},
	{"BULK_IGNORE_TAG", 0}, {"FIX_INQUIRY", 0}, {"GO_SLOW", 0}, {"BULK32", 0}, {"NEEDS_CAP16", 0},
	{"SENSE_AFTER_SYNC", 0}, {"BROKEN_FUA", 0}, {"NEED_OVERRIDE", 0}, {"MAX_SECTORS_MIN", 0},
	{"SCM_MULT_TARG", 0}, {"TRY_VPD_PAGES", 0},
}

// QuirkLettered is every flag that has a letter: what a kernel-style
// override (VID:PID:letters) replaces.
const QuirkLettered = QuirkIgnoreTag - 1

// Each returns the flags of q, one by one, lowest first.
func (q Quirks) Each() []Quirks {
	var out []Quirks
	for q != 0 {
		f := Quirks(1) << bits.TrailingZeros64(uint64(q))
		out = append(out, f)
		q &^= f
	}
	return out
}

func (q Quirks) info() (quirkInfo, bool) {
	i := bits.TrailingZeros64(uint64(q))
	if bits.OnesCount64(uint64(q)) != 1 || i >= len(quirkInfos) {
		return quirkInfo{}, false
	}
	return quirkInfos[i], true
}

// Name is the kernel's name of a single flag (FIX_CAPACITY), without
// US_FL_.
func (q Quirks) Name() string {
	if in, ok := q.info(); ok {
		return in.name
	}
	return fmt.Sprintf("Quirks(%#x)", uint64(q))
}

// Letter is a single flag's usb-storage.quirks= letter, or 0 for a flag
// the kernel sets only from its table.
func (q Quirks) Letter() byte {
	in, _ := q.info()
	return in.letter
}

// String lists the flags: letters first, as the kernel writes them, then
// the names of the others ("mr+FIX_INQUIRY,GO_SLOW"); "-" for none.
func (q Quirks) String() string {
	var letters []byte
	var names []string
	for _, f := range q.Each() {
		if l := f.Letter(); l != 0 {
			letters = append(letters, l)
		} else {
			names = append(names, f.Name())
		}
	}
	switch {
	case len(letters) == 0 && len(names) == 0:
		return "-"
	case len(names) == 0:
		return string(letters)
	case len(letters) == 0:
		return strings.Join(names, ",")
	}
	return string(letters) + "+" + strings.Join(names, ",")
}

// ParseQuirks reads flags as usbflash's --quirks takes them after
// VID:PID: the kernel's letters (case-insensitive, unknown letters
// ignored, as the kernel does) and flag names (FIX_INQUIRY, with or
// without US_FL_), comma- or plus-separated: "mr", "FIX_INQUIRY",
// "m,FIX_INQUIRY". A token that is not a flag name is read as letters.
func ParseQuirks(s string) Quirks {
	var q Quirks
	for _, tok := range strings.FieldsFunc(s, func(r rune) bool { return r == ',' || r == '+' }) {
		if f, ok := QuirkByName(tok); ok {
			q |= f
			continue
		}
		for i := range len(tok) {
			q |= QuirkByLetter(tok[i])
		}
	}
	return q
}

// QuirkByName finds a flag by its kernel name, with or without US_FL_,
// in any case.
func QuirkByName(name string) (Quirks, bool) {
	name = strings.TrimPrefix(strings.ToUpper(name), "US_FL_")
	for i, in := range quirkInfos {
		if in.name == name {
			return Quirks(1) << i, true
		}
	}
	return 0, false
}

// QuirkByLetter is the flag of a usb-storage.quirks= letter (any case); 0
// for a letter the kernel does not know.
func QuirkByLetter(c byte) Quirks {
	if c >= 'A' && c <= 'Z' {
		c += 'a' - 'A'
	}
	for i, in := range quirkInfos {
		if in.letter != 0 && in.letter == c {
			return Quirks(1) << i
		}
	}
	return 0
}
