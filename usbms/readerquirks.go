package usbms

import (
	"fmt"
	"os"
	"strconv"
	"strings"

	"github.com/usbflash/usbflash/internal/failure"
	"github.com/usbflash/usbflash/scsi"
	"github.com/usbflash/usbflash/usbms/usbdev"
)

// This file chooses a reader's quirk flags as Linux does, from the
// reader's USB identity, the table of the protocol it is driven with
// (usb-storage's unusual_devs.h for Bulk-Only, bot_quirktable.go; uas's
// unusual_uas.h for UAS, uas_quirktable.go) and the overrides the user
// gave, and the transport options that follow from them.

// QuirkSource is where a reader's quirk flags come from. The sources are
// applied in the order below: a later one replaces what an earlier one
// set for the same reader, as the kernel's usb-storage.quirks= replaces
// its table's flags.
type QuirkSource string

// The sources.
const (
	QuirkSourceTable    QuirkSource = "table"                                     // usb-storage's table (botQuirkTable), for Bulk-Only
	QuirkSourceUASTable QuirkSource = "uas table"                                 // uas's table (uasQuirkTable), for UAS
	QuirkSourceVendor   QuirkSource = "vendor"                                    // the kernel's capacity heuristics for a whole vendor
	QuirkSourceSysfs    QuirkSource = "/sys/module/usb_storage/parameters/quirks" // what the user gave the kernel
	QuirkSourceEnv      QuirkSource = "$" + QuirksEnv                             // the environment
	QuirkSourceSim      QuirkSource = "sim quirks="                               // a sim: target's own option
	QuirkSourceSetting  QuirkSource = "setting"                                   // the caller's own list (SettingQuirks; the CLI's flag)
)

// SettingQuirks is the setting that carries the caller's own quirk
// overrides (QuirkOverrides.Setting): an error about it is a
// *failure.SettingError naming it.
const SettingQuirks failure.Setting = "quirks"

// QuirksEnv is the environment variable that gives quirk overrides, in
// the syntax of QuirkSyntax.
const QuirksEnv = "USBFLASH_QUIRKS"

// sysfsQuirks is where the kernel shows its usb-storage.quirks= value.
const sysfsQuirks = "/sys/module/usb_storage/parameters/quirks"

// QuirkFlag is one quirk flag in force for a reader and where it came
// from.
type QuirkFlag struct {
	Flag   Quirks
	Source QuirkSource
	// Detail says more of the source: the table entry's product, the
	// override entry as given.
	Detail string
}

// ReaderQuirks are the quirk flags chosen for a reader.
type ReaderQuirks struct {
	Flags Quirks
	From  []QuirkFlag // one per flag in Flags, in flag order
	// Entry is the table entry that matched (vendor / product), "" when
	// none did.
	Entry string
}

// Source returns where flag f came from ("" when it is not in force).
func (q ReaderQuirks) Source(f Quirks) QuirkSource {
	for _, x := range q.From {
		if x.Flag == f {
			return x.Source
		}
	}
	return ""
}

// QuirkOverrides are the user's quirk overrides, each in QuirkSyntax, by
// source. The zero value has none.
type QuirkOverrides struct {
	Sysfs, Env string
	// Setting is the caller's own list (SettingQuirks), applied last.
	Setting string
}

// HostQuirkOverrides reads the overrides of this machine: the kernel's
// usb-storage.quirks= (sysfs) and $USBFLASH_QUIRKS, with setting (the
// caller's own list) on top. A malformed $USBFLASH_QUIRKS or setting is a
// usage error; a malformed sysfs entry is skipped, as the kernel skips it.
func HostQuirkOverrides(setting string) (QuirkOverrides, error) {
	o := QuirkOverrides{Env: os.Getenv(QuirksEnv), Setting: setting}
	if b, err := os.ReadFile(sysfsQuirks); err == nil {
		o.Sysfs = strings.TrimSpace(string(b))
	}
	return o, o.Check()
}

// Check reports a malformed $USBFLASH_QUIRKS as a usage error and a
// malformed setting as a *failure.SettingError of SettingQuirks.
func (o QuirkOverrides) Check() error {
	if _, err := ParseQuirkOverrides(o.Env); err != nil {
		return failure.Errorf(failure.Usage, "%s=%q: %w", QuirksEnv, o.Env, err)
	}
	if _, err := ParseQuirkOverrides(o.Setting); err != nil {
		return &failure.SettingError{Setting: SettingQuirks, Err: fmt.Errorf("%q: %w", o.Setting, err)}
	}
	return nil
}

// QuirkSyntax is the syntax of a list of quirk overrides, for messages
// and help.
const QuirkSyntax = "VID:PID[:BCDLO-BCDHI]:FLAGS[,...], FLAGS being the kernel's usb-storage.quirks= letters and/or flag names (FIX_INQUIRY); a comma item without a colon adds to the item before"

// ErrQuirkSyntax is matched by the refusal of an override list that is
// not in QuirkSyntax (ParseQuirkOverrides, QuirkOverrides.Check).
var ErrQuirkSyntax = failure.New(failure.Usage, "not a quirk override")

// QuirkOverride is one entry of an override list.
type QuirkOverride struct {
	VID, PID     uint16
	BCDLo, BCDHi uint16 // 0000-ffff when not given
	Flags        Quirks
	Text         string // the entry as given
}

// ParseQuirkOverrides reads a list in QuirkSyntax: comma-separated
// entries VID:PID[:BCDLO-BCDHI]:FLAGS, as the kernel's
// usb-storage.quirks= (VID:PID:letters) with two additions: a bcdDevice
// range, and flag names for the flags the kernel sets only from its table
// (0781:0002:c,FIX_INQUIRY: a comma item without a colon adds to the
// entry before it). Letters the kernel does not know are ignored, as it
// ignores them.
func ParseQuirkOverrides(s string) ([]QuirkOverride, error) {
	var out []QuirkOverride
	for _, item := range strings.Split(s, ",") {
		item = strings.TrimSpace(item)
		if item == "" {
			continue
		}
		if !strings.Contains(item, ":") {
			if len(out) == 0 {
				return nil, fmt.Errorf("%q: %w: want %s", item, ErrQuirkSyntax, QuirkSyntax)
			}
			if _, ok := QuirkByName(item); !ok {
				return nil, fmt.Errorf("%q: %w: not a quirk flag name", item, ErrQuirkSyntax)
			}
			last := &out[len(out)-1]
			last.Flags |= ParseQuirks(item)
			last.Text += "," + item
			continue
		}
		e, err := parseQuirkEntry(item)
		if err != nil {
			return nil, err
		}
		out = append(out, e)
	}
	return out, nil
}

func parseQuirkEntry(item string) (QuirkOverride, error) {
	bad := func(why string) (QuirkOverride, error) {
		return QuirkOverride{}, fmt.Errorf("%q: %w: %s; want %s", item, ErrQuirkSyntax, why, QuirkSyntax)
	}
	parts := strings.Split(item, ":")
	if len(parts) < 3 || len(parts) > 4 {
		return bad("not VID:PID:FLAGS")
	}
	vid, err1 := strconv.ParseUint(parts[0], 16, 16)
	pid, err2 := strconv.ParseUint(parts[1], 16, 16)
	if err1 != nil || err2 != nil {
		return bad("VID and PID are 4 hexadecimal digits")
	}
	e := QuirkOverride{VID: uint16(vid), PID: uint16(pid), BCDHi: 0xffff, Text: item}
	flags := parts[len(parts)-1]
	if len(parts) == 4 {
		lo, hi, ok := strings.Cut(parts[2], "-")
		l, err1 := strconv.ParseUint(lo, 16, 16)
		h, err2 := strconv.ParseUint(hi, 16, 16)
		if !ok || err1 != nil || err2 != nil || l > h {
			return bad("the bcdDevice range is BCDLO-BCDHI, 4 hexadecimal digits each")
		}
		e.BCDLo, e.BCDHi = uint16(l), uint16(h)
	}
	for _, tok := range strings.FieldsFunc(flags, func(r rune) bool { return r == '+' }) {
		if _, ok := QuirkByName(tok); !ok && strings.Contains(tok, "_") {
			return bad(fmt.Sprintf("%s is not a quirk flag name", tok))
		}
	}
	e.Flags = ParseQuirks(flags)
	return e, nil
}

// tableEntry is one line of a quirk table.
type tableEntry struct {
	vid, pid, lo, hi uint16
	flags            Quirks
	name             string // vendor / product
}

// botQuirkEntries and uasQuirkEntries are the tables parsed, once, when
// the program starts; they are never changed.
var (
	botQuirkEntries = parseQuirkTable(botQuirkTable)
	uasQuirkEntries = parseQuirkTable(uasQuirkTable)
)

// parseQuirkTable reads a quirk table's lines. A malformed line is a bug
// of the table, caught by its test; it is skipped.
func parseQuirkTable(text string) []tableEntry {
	var out []tableEntry
	for _, line := range strings.Split(text, "\n") {
		facts, name, _ := strings.Cut(line, "#")
		f := strings.Fields(facts)
		if len(f) < 3 {
			continue
		}
		var e tableEntry
		var lo, hi uint64
		ids, rng := strings.Split(f[0], ":"), strings.Split(f[1], "-")
		if len(ids) != 2 || len(rng) != 2 {
			continue
		}
		vid, err1 := strconv.ParseUint(ids[0], 16, 16)
		pid, err2 := strconv.ParseUint(ids[1], 16, 16)
		lo, err3 := strconv.ParseUint(rng[0], 16, 16)
		hi, err4 := strconv.ParseUint(rng[1], 16, 16)
		if err1 != nil || err2 != nil || err3 != nil || err4 != nil {
			continue
		}
		e.vid, e.pid, e.lo, e.hi, e.name = uint16(vid), uint16(pid), uint16(lo), uint16(hi), strings.TrimSpace(name)
		if f[2] != "-" {
			e.flags = ParseQuirks(f[2])
		}
		if len(f) > 3 && !strings.HasPrefix(f[3], "(") {
			for _, n := range strings.Split(f[3], ",") {
				if n == "IGNORE_TAG" {
					n = "BULK_IGNORE_TAG"
				}
				if q, ok := QuirkByName(n); ok {
					e.flags |= q
				}
			}
		}
		out = append(out, e)
	}
	return out
}

// Vendors whose every device gets CAPACITY_HEURISTICS from the kernel
// (unless FIX_CAPACITY or CAPACITY_OK is set): Nokia, Nikon, Pentax,
// Motorola phones and cameras, which count their blocks.
var heuristicVendors = map[uint16]bool{0x0421: true, 0x04b0: true, 0x0a17: true, 0x22b8: true}

// ResolveQuirks chooses the quirk flags of the reader with this identity
// when it is driven over Bulk-Only, as usb-storage does: the first entry
// of its table that matches VID, PID and the bcdDevice range; the
// vendor-wide capacity heuristics; then each source of overrides in turn
// (sysfs, environment, the sim's option, the caller's setting), the first
// entry of each that matches replacing the flags that have a letter and
// adding what it names. simQuirks is a sim: reader's quirks= option (""
// for others).
func ResolveQuirks(vid, pid, bcd uint16, o QuirkOverrides, simQuirks string) ReaderQuirks {
	return resolveQuirks(botQuirkEntries, QuirkSourceTable, true, vid, pid, bcd, o, simQuirks)
}

// ResolveUASQuirks chooses the quirk flags of the reader with this
// identity when it is driven over UAS, as Linux's uas does: ResolveQuirks
// with uas's own table (uas_quirktable.go) and no vendor-wide heuristics
// (usb-storage's alone).
func ResolveUASQuirks(vid, pid, bcd uint16, o QuirkOverrides, simQuirks string) ReaderQuirks {
	return resolveQuirks(uasQuirkEntries, QuirkSourceUASTable, false, vid, pid, bcd, o, simQuirks)
}

// resolveQuirks is ResolveQuirks with the table, the name of its source,
// and whether the vendor-wide heuristics apply.
func resolveQuirks(table []tableEntry, tableSource QuirkSource, vendors bool, vid, pid, bcd uint16, o QuirkOverrides, simQuirks string) ReaderQuirks {
	var rq ReaderQuirks
	src := map[Quirks]QuirkFlag{}
	set := func(q Quirks, source QuirkSource, detail string) {
		for _, f := range q.Each() {
			src[f] = QuirkFlag{Flag: f, Source: source, Detail: detail}
		}
	}
	for _, e := range table {
		if e.vid == vid && e.pid == pid && bcd >= e.lo && bcd <= e.hi {
			rq.Flags, rq.Entry = e.flags, e.name
			set(e.flags, tableSource, fmt.Sprintf("%04x:%04x %04x-%04x %s", e.vid, e.pid, e.lo, e.hi, e.name))
			break
		}
	}
	if vendors && heuristicVendors[vid] && rq.Flags&(QuirkFixCapacity|QuirkCapacityOK) == 0 {
		rq.Flags |= QuirkCapacityHeuristics
		set(QuirkCapacityHeuristics, QuirkSourceVendor, fmt.Sprintf("every device of vendor %04x", vid))
	}
	apply := func(list string, source QuirkSource) {
		var entries []QuirkOverride
		if source == QuirkSourceSysfs {
			entries = kernelEntries(list)
		} else {
			entries, _ = ParseQuirkOverrides(list)
		}
		for _, e := range entries {
			if e.VID == vid && e.PID == pid && bcd >= e.BCDLo && bcd <= e.BCDHi {
				rq.Flags = rq.Flags&^QuirkLettered | e.Flags
				set(e.Flags, source, e.Text)
				return
			}
		}
	}
	apply(o.Sysfs, QuirkSourceSysfs)
	apply(o.Env, QuirkSourceEnv)
	if simQuirks != "" {
		flags := ParseQuirks(simQuirks)
		rq.Flags = rq.Flags&^QuirkLettered | flags
		set(flags, QuirkSourceSim, simQuirks)
	}
	apply(o.Setting, QuirkSourceSetting)
	for _, f := range rq.Flags.Each() {
		rq.From = append(rq.From, src[f])
	}
	return rq
}

// kernelEntries reads the kernel's own syntax (VID:PID:letters), skipping
// what it would skip.
func kernelEntries(s string) []QuirkOverride {
	var out []QuirkOverride
	for _, item := range strings.Split(s, ",") {
		if e, err := parseQuirkEntry(strings.TrimSpace(item)); err == nil {
			out = append(out, e)
		}
	}
	return out
}

// readerQuirks chooses the flags of a real reader driven over Bulk-Only,
// adjusted to its interface: GO_SLOW only at high speed, as the kernel
// does.
func readerQuirks(info usbdev.Info, o QuirkOverrides) ReaderQuirks {
	rq := ResolveQuirks(info.VID, info.PID, info.BCDDevice, o, "")
	if rq.Flags&QuirkGoSlow != 0 && info.Speed != usbdev.SpeedHigh {
		rq.Flags &^= QuirkGoSlow
		from := rq.From[:0]
		for _, f := range rq.From {
			if f.Flag != QuirkGoSlow {
				from = append(from, f)
			}
		}
		rq.From = from
	}
	return rq
}

// commandSet is the usbms command set of an interface subclass.
func commandSet(subclass uint8) CommandSet {
	switch subclass {
	case usbdev.Subclass8020i, usbdev.SubclassQIC, usbdev.Subclass8070i:
		return SetATAPI
	}
	return SetSCSI
}

// fixedInquiry is the INQUIRY data a QuirkFixInquiry reader reports
// without being asked, as the kernel makes it: a removable direct-access
// device, the vendor and product of the table entry (else the USB
// strings), the bcdDevice as its revision.
func fixedInquiry(rq ReaderQuirks, manufacturer, product string, bcd uint16) scsi.InquiryData {
	inq := scsi.InquiryData{DeviceType: scsi.TypeDirectAccess, Removable: true, Vendor: manufacturer, Product: product}
	if v, p, ok := strings.Cut(rq.Entry, " / "); ok {
		inq.Vendor, inq.Product = v, p
	}
	inq.Vendor = clip(inq.Vendor, 8)
	inq.Product = clip(inq.Product, 16)
	inq.Revision = fmt.Sprintf("%04X", bcd)
	return inq
}

// clip cuts s to n bytes, as INQUIRY's fixed fields hold it.
func clip(s string, n int) string {
	if len(s) > n {
		return strings.TrimSpace(s[:n])
	}
	return s
}

// Identified is an Endpoint that says who it is, as a real reader's
// descriptors do: the simulator.
type Identified interface {
	USBID() (vid, pid, bcd uint16)
	Identity() (manufacturer, product, serial string)
	Quirks() string
}

// readerUASQuirks chooses the flags of a real reader driven over UAS.
func readerUASQuirks(info usbdev.Info, o QuirkOverrides) ReaderQuirks {
	return ResolveUASQuirks(info.VID, info.PID, info.BCDDevice, o, "")
}

// ReaderSetup chooses a reader's quirk flags and the transport options
// that follow from them and from its interface: a real reader by its
// descriptors (info), a simulated one (info nil) by what its Endpoint
// says of itself. The flags come from the quirk table of the protocol the
// reader is driven with: ep's (UAS when it is a UASEndpoint in UAS mode);
// for a reader not opened yet (ep nil), Bulk-Only's when it offers
// Bulk-Only, as auto drives it, else UAS's.
func ReaderSetup(ep Endpoint, info *usbdev.Info, o QuirkOverrides) (ReaderQuirks, TransportOptions) {
	var rq ReaderQuirks
	var topts TransportOptions
	uas := drivenOverUAS(ep, info)
	switch {
	case info != nil && uas:
		rq = readerUASQuirks(*info, o)
	case info != nil:
		rq = readerQuirks(*info, o)
	}
	switch {
	case info != nil:
		topts.CommandSet = commandSet(info.SubClass)
		topts.Inquiry = fixedInquiry(rq, info.Manufacturer, info.Product, info.BCDDevice)
	default:
		if id, ok := ep.(Identified); ok {
			vid, pid, bcd := id.USBID()
			m, p, _ := id.Identity()
			resolve := ResolveQuirks
			if uas {
				resolve = ResolveUASQuirks
			}
			rq = resolve(vid, pid, bcd, o, id.Quirks())
			topts.Inquiry = fixedInquiry(rq, m, p, bcd)
		}
	}
	topts.Quirks = rq.Flags
	return rq, topts
}

// drivenOverUAS reports whether the reader is driven over UAS: ep speaks
// it, or, with no ep, the interface offers UAS and not Bulk-Only.
func drivenOverUAS(ep Endpoint, info *usbdev.Info) bool {
	if u, ok := ep.(UASEndpoint); ok {
		on, _ := u.UASMode()
		return on
	}
	return ep == nil && info != nil && !info.HasBOT() && info.UAS.Present()
}

// ReaderID is a reader's VID:PID, as an override names it; "" when
// neither info nor ep says.
func ReaderID(ep Endpoint, info *usbdev.Info) string {
	if info != nil {
		return fmt.Sprintf("%04x:%04x", info.VID, info.PID)
	}
	if id, ok := ep.(Identified); ok {
		vid, pid, _ := id.USBID()
		return fmt.Sprintf("%04x:%04x", vid, pid)
	}
	return ""
}
