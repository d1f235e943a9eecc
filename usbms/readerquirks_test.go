package usbms

import (
	"strings"
	"testing"

	"github.com/usbflash/usbflash/internal/failure"
	"github.com/usbflash/usbflash/usbms/usbdev"
)

// TestQuirkTableParses: every line of the table is an entry, and entries
// read as the kernel's.
func TestQuirkTableParses(t *testing.T) {
	for _, table := range []struct {
		name    string
		text    string
		entries []tableEntry
		atLeast int
	}{
		{"usb-storage", botQuirkTable, botQuirkEntries, 200},
		{"uas", uasQuirkTable, uasQuirkEntries, 23},
	} {
		lines := 0
		for _, l := range strings.Split(table.text, "\n") {
			if strings.TrimSpace(l) != "" {
				lines++
			}
		}
		if len(table.entries) != lines || lines < table.atLeast {
			t.Fatalf("%s: %d entries from %d lines", table.name, len(table.entries), lines)
		}
	}
	for _, tt := range []struct {
		vid, pid, bcd uint16
		want          Quirks
		entry         string
	}{
		{0x07c4, 0xa4a5, 0x0100, QuirkMaxSectors64 | QuirkIgnoreResidue, "Simple Tech/Datafab / CF+SM Reader"},
		{0x07c4, 0xa400, 0x1234, QuirkFixCapacity | QuirkFixInquiry, "Datafab / KECF-USB"},
		{0x13fe, 0x3600, 0x0100, QuirkIgnoreTag, "Kingston / DT 101 G2"},
		{0x05e3, 0x0702, 0x0100, QuirkMaxSectors64 | QuirkIgnoreResidue | QuirkGoSlow, "Genesys Logic / USB to IDE Disk"},
		{0x22b8, 0x6426, 0x0101, QuirkFixCapacity | QuirkFixInquiry | QuirkIgnoreTag, "Motorola / MSnc."},
		{0x090c, 0x6000, 0x0100, QuirkInitialRead10, "Feiya / SD/SDHC Card Reader"},
		// The bcdDevice range decides: 04ce:0002 up to 026b has IGNORE_TAG.
		{0x04ce, 0x0002, 0x026b, QuirkFixCapacity | QuirkIgnoreTag, "ScanLogic / SL11R-IDE"},
		{0x04ce, 0x0002, 0x026c, QuirkFixCapacity, "ScanLogic / SL11R-IDE"},
		{0x04ce, 0x0002, 0x026d, 0, ""},
		{0x0bda, 0x0158, 0x5888, 0, ""},
	} {
		rq := ResolveQuirks(tt.vid, tt.pid, tt.bcd, QuirkOverrides{}, "")
		if rq.Flags != tt.want || rq.Entry != tt.entry {
			t.Errorf("%04x:%04x %04x: %v (%q), want %v (%q)", tt.vid, tt.pid, tt.bcd, rq.Flags, rq.Entry, tt.want, tt.entry)
		}
		for _, f := range rq.From {
			if f.Source != QuirkSourceTable || !strings.Contains(f.Detail, tt.entry) {
				t.Errorf("%04x:%04x: %v from %q %q, want the table entry", tt.vid, tt.pid, f.Flag, f.Source, f.Detail)
			}
		}
	}
}

// TestQuirkOverrides checks the overrides' syntax and the order the sources
// are applied in, each replacing the lettered flags of the one before.
func TestQuirkOverrides(t *testing.T) {
	for s, want := range map[string]string{
		"07c4:a4a5:":                        "",
		"07c4:a4a5:mr,0bda:0158:c":          "",
		"0781:0002:c,FIX_INQUIRY,GO_SLOW":   "",
		"0781:0002:0000-0009:FIX_INQUIRY+c": "",
		"0781:0002:xyz":                     "", // unknown letters are ignored, as by the kernel
		"0781:0002":                         "not VID:PID:FLAGS",
		"zz:0002:c":                         "hexadecimal",
		"0781:0002:9-1:c":                   "BCDLO-BCDHI",
		"FIX_INQUIRY":                       "want VID:PID",
		"0781:0002:c,NO_SUCH":               "not a quirk flag name",
		"0781:0002:NO_SUCH_FLAG":            "not a quirk flag name",
	} {
		_, err := ParseQuirkOverrides(s)
		if (want == "") != (err == nil) || err != nil && !strings.Contains(err.Error(), want) {
			t.Errorf("ParseQuirkOverrides(%q) = %v, want %q", s, err, want)
		}
	}
	e, _ := ParseQuirkOverrides("0781:0002:c,FIX_INQUIRY,GO_SLOW,0bda:0158:s")
	if len(e) != 2 || e[0].Flags != QuirkFixCapacity|QuirkFixInquiry|QuirkGoSlow || e[1].Flags != QuirkSingleLUN {
		t.Errorf("entries %+v", e)
	}

	// Datafab 07c4:a4a5 has m and r in the table.
	o := QuirkOverrides{Sysfs: "07c4:a4a5:r", Env: "1234:5678:c", Setting: "07c4:a4a5:0000-0200:w+FIX_INQUIRY"}
	rq := ResolveQuirks(0x07c4, 0xa4a5, 0x0100, o, "")
	if rq.Flags != QuirkNoWPDetect|QuirkFixInquiry {
		t.Errorf("flags %v, want w+FIX_INQUIRY: the setting replaces the lettered flags", rq.Flags)
	}
	if rq.Source(QuirkNoWPDetect) != QuirkSourceSetting || rq.Source(QuirkFixInquiry) != QuirkSourceSetting {
		t.Errorf("sources %+v", rq.From)
	}
	// Out of the setting's bcdDevice range: sysfs's r replaces the table's m and r.
	rq = ResolveQuirks(0x07c4, 0xa4a5, 0x0300, o, "")
	if rq.Flags != QuirkIgnoreResidue || rq.Source(QuirkIgnoreResidue) != QuirkSourceSysfs {
		t.Errorf("flags %v from %+v, want r from sysfs", rq.Flags, rq.From)
	}
	// A table-only flag stays when an override replaces the letters.
	rq = ResolveQuirks(0x13fe, 0x3600, 0x0100, QuirkOverrides{Env: "13fe:3600:m"}, "")
	if rq.Flags != QuirkIgnoreTag|QuirkMaxSectors64 || rq.Source(QuirkIgnoreTag) != QuirkSourceTable || rq.Source(QuirkMaxSectors64) != QuirkSourceEnv {
		t.Errorf("flags %v from %+v", rq.Flags, rq.From)
	}
	// A sim's quirks= sits between the environment and the setting.
	rq = ResolveQuirks(0x1234, 0x5678, 0, QuirkOverrides{Env: "1234:5678:c"}, "mr")
	if rq.Flags != QuirkMaxSectors64|QuirkIgnoreResidue || rq.Source(QuirkMaxSectors64) != QuirkSourceSim {
		t.Errorf("flags %v from %+v", rq.Flags, rq.From)
	}
	// The kernel's heuristics for whole vendors, unless c or o is set.
	if rq := ResolveQuirks(0x0421, 0x1111, 0, QuirkOverrides{}, ""); rq.Flags != QuirkCapacityHeuristics || rq.Source(QuirkCapacityHeuristics) != QuirkSourceVendor {
		t.Errorf("Nokia: %v", rq.Flags)
	}
	if rq := ResolveQuirks(0x0421, 0x042e, 0x0100, QuirkOverrides{}, ""); rq.Flags&QuirkCapacityHeuristics != 0 {
		t.Errorf("Nokia 3250 (FIX_CAPACITY): %v", rq.Flags)
	}
	// A malformed override is a usage error; the kernel's own entries
	// are skipped when malformed.
	if err := (QuirkOverrides{Setting: "bad"}).Check(); failure.SettingOf(err) != SettingQuirks || failure.Of(err) != failure.Usage {
		t.Errorf("Check of a bad setting: %v, want a usage error about %s", err, SettingQuirks)
	}
	if err := (QuirkOverrides{Env: "bad"}).Check(); failure.Of(err) != failure.Usage || failure.SettingOf(err) != "" || !strings.Contains(err.Error(), QuirksEnv) {
		t.Errorf("Check of a bad $%s: %v, want a usage error naming it", QuirksEnv, err)
	}
	if err := (QuirkOverrides{Sysfs: "bad,07c4:a4a5:c"}).Check(); err != nil {
		t.Errorf("Check of a bad sysfs entry: %v", err)
	}
	if rq := ResolveQuirks(0x07c4, 0xa4a5, 0, QuirkOverrides{Sysfs: "bad,07c4:a4a5:c"}, ""); rq.Flags != QuirkFixCapacity {
		t.Errorf("sysfs after a bad entry: %v", rq.Flags)
	}
}

// TestReaderQuirksGoSlow: GO_SLOW applies at high speed only.
func TestReaderQuirksGoSlow(t *testing.T) {
	info := usbdev.Info{VID: 0x05e3, PID: 0x0702, BCDDevice: 0x0100, Speed: usbdev.SpeedFull}
	if rq := readerQuirks(info, QuirkOverrides{}); rq.Flags&QuirkGoSlow != 0 || len(rq.From) != 2 {
		t.Errorf("full speed: %v %+v", rq.Flags, rq.From)
	}
	info.Speed = usbdev.SpeedHigh
	if rq := readerQuirks(info, QuirkOverrides{}); rq.Flags&QuirkGoSlow == 0 {
		t.Errorf("high speed: %v", rq.Flags)
	}
}

// TestFixedInquiry: the identity a FIX_INQUIRY reader gets.
func TestFixedInquiry(t *testing.T) {
	rq := ResolveQuirks(0x07c4, 0xa400, 0x0113, QuirkOverrides{}, "")
	inq := fixedInquiry(rq, "Some Maker", "Some Reader", 0x0113)
	if inq.Vendor != "Datafab" || inq.Product != "KECF-USB" || inq.Revision != "0113" || !inq.Removable {
		t.Errorf("%+v", inq)
	}
	inq = fixedInquiry(ReaderQuirks{}, "A Very Long Maker Name", "Reader", 0x2)
	if inq.Vendor != "A Very L" || inq.Product != "Reader" || inq.Revision != "0002" {
		t.Errorf("%+v", inq)
	}
}

// TestUASQuirkTable: a reader driven over UAS takes its flags from uas's
// table, not usb-storage's, as in Linux, with the overrides on top and
// without usb-storage's vendor-wide heuristics.
func TestUASQuirkTable(t *testing.T) {
	for _, tt := range []struct {
		vid, pid, bcd uint16
		o             QuirkOverrides
		want          Quirks
		entry         string
	}{
		{vid: 0x0bc2, pid: 0x331a, want: QuirkNoReportLUNs, entry: "Seagate / Expansion Desk"},
		{vid: 0x152d, pid: 0x0567, bcd: 0x0100, want: QuirkNoReportOpcodes | QuirkBrokenFUA, entry: "JMicron / JMS567"},
		{vid: 0x357d, pid: 0x7788, want: QuirkNoReportOpcodes | QuirkIgnoreUAS, entry: "JMicron / JMS566"},
		// Apricorn's entry holds for bcdDevice 0128 only.
		{vid: 0x0984, pid: 0x0301, bcd: 0x0128, want: QuirkIgnoreUAS, entry: "Apricorn"},
		{vid: 0x0984, pid: 0x0301, bcd: 0x0129},
		// usb-storage's entries and its vendor heuristics are not uas's.
		{vid: 0x07c4, pid: 0xa4a5, bcd: 0x0100},
		{vid: 0x0421, pid: 0x1111},
		// An override replaces the lettered flags, as for Bulk-Only.
		{vid: 0x4971, pid: 0x8024, o: QuirkOverrides{Env: "4971:8024:m"}, want: QuirkMaxSectors64, entry: "SimpleTech / External HDD"},
	} {
		rq := ResolveUASQuirks(tt.vid, tt.pid, tt.bcd, tt.o, "")
		if rq.Flags != tt.want || rq.Entry != tt.entry {
			t.Errorf("%04x:%04x %04x: %v (%q), want %v (%q)", tt.vid, tt.pid, tt.bcd, rq.Flags, rq.Entry, tt.want, tt.entry)
		}
		for _, f := range rq.From {
			if f.Source != QuirkSourceUASTable && f.Source != QuirkSourceEnv {
				t.Errorf("%04x:%04x: %v from %q", tt.vid, tt.pid, f.Flag, f.Source)
			}
		}
	}
}

// TestReaderSetupTable: ReaderSetup takes the table of the protocol the
// reader is driven with: the endpoint's, or before it is opened, Bulk-Only's
// when the interface offers it.
func TestReaderSetupTable(t *testing.T) {
	both := usbdev.Info{VID: 0x4971, PID: 0x8024, BCDDevice: 0x0100, Speed: usbdev.SpeedSuper,
		SubClass: usbdev.SubclassSCSI, Protocol: usbdev.ProtocolBOT,
		UAS: usbdev.UASSetting{Alt: 1, Command: 0x01, Status: 0x82, DataIn: 0x83, DataOut: 0x04, MaxStreams: 32}}
	uasOnly := both
	uasOnly.Protocol, uasOnly.UAS.Alt = usbdev.ProtocolUAS, 0
	for _, tt := range []struct {
		name string
		ep   Endpoint
		info usbdev.Info
		want QuirkSource
	}{
		{"not open, offers both", nil, both, QuirkSourceTable},
		{"not open, UAS only", nil, uasOnly, QuirkSourceUASTable},
		{"open over Bulk-Only", &uasModeEndpoint{}, both, QuirkSourceTable},
		{"open over UAS", &uasModeEndpoint{on: true}, both, QuirkSourceUASTable},
	} {
		rq, topts := ReaderSetup(tt.ep, &tt.info, QuirkOverrides{})
		// 4971:8024 is ALWAYS_SYNC in both tables.
		if rq.Source(QuirkAlwaysSync) != tt.want || topts.Quirks != rq.Flags {
			t.Errorf("%s: %v from %q, options %v; want it from %q", tt.name, rq.Flags, rq.Source(QuirkAlwaysSync), topts.Quirks, tt.want)
		}
	}
}

// uasModeEndpoint is an Endpoint that is a UASEndpoint, in UAS mode or not.
type uasModeEndpoint struct {
	Endpoint
	UASEndpoint
	on bool
}

func (e *uasModeEndpoint) UASMode() (bool, int) { return e.on, 0 }
