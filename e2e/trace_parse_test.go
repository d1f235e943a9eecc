//go:build e2e

package e2e

import (
	"slices"
	"strings"
	"testing"
)

// The usbmon lines are the examples of the kernel's usbmon documentation
// (a hub's GetPortStatus, a READ(10) in its CBW), with the CSW added.
const usbmonSample = `d5ea89a0 3575914555 S Ci:1:001:0 s a3 00 0000 0003 0004 4 <
d5ea89a0 3575914560 C Ci:1:001:0 0 4 = 01050000
dd65f0e8 4128379752 S Bo:1:005:2 -115 31 = 55534243 ad000000 00800000 80010a28 20000000 20000040 00000000 000000
dd65f0e8 4128379808 C Bo:1:005:2 0 31 >
dd65f0e8 4128379808 S Bi:1:005:1 -115 32768 <
dd65f0e8 4128379809 C Bi:1:005:1 0 32768 = 00000000 00000000 00000000 00000000 00000000 00000000 00000000 00000000
dd65f0e8 4128380236 S Bi:1:005:1 -115 13 <
dd65f0e8 4128380237 C Bi:1:005:1 0 13 = 55534253 ad000000 00000000 01
`

func TestParseUsbmon(t *testing.T) {
	tr, err := parseUsbmon(usbmonSample)
	if err != nil {
		t.Fatal(err)
	}
	d := tr.devs["1:005"]
	if d == nil || len(d.cmds) != 1 {
		t.Fatalf("device 1:005: %+v", d)
	}
	c := d.cmds[0]
	if c.tag != 0xad || c.length != 0x8000 || !c.in || cdbKey(c.cdb) != "READ(10)" || len(c.cdb) != 10 || c.status != 1 {
		t.Errorf("CBW: %+v (%s)", c, cdbKey(c.cdb))
	}
	if got := d.sequence(-3); got != "READ(10) 32768 B (status 1)" {
		t.Errorf("sequence(-3) = %q", got)
	}
	if hub := tr.devs["1:001"]; hub == nil || !slices.Equal(hub.ctrl, []string{"a3 00 0000 0003 0004"}) {
		t.Errorf("control requests of 1:001: %+v", hub)
	}

	// A 31-byte bulk OUT whose data usbmon did not show would hide a
	// command: the trace is refused.
	if _, err := parseUsbmon("dd65f0e8 4128379752 S Bo:1:005:2 -115 31 D\n"); err == nil {
		t.Error("a CBW without data was accepted")
	}
}

func TestCdbKey(t *testing.T) {
	for _, tc := range []struct {
		cdb  []byte
		want string
	}{
		{[]byte{0x12, 0, 0, 0, 36, 0}, "INQUIRY"},
		{[]byte{0x12, 1, 0x80, 0, 252, 0}, "INQUIRY VPD page 0x80"},
		{[]byte{0x1A, 0, 0x3F, 0, 192, 0}, "MODE SENSE(6) page 0x3F"},
		{[]byte{0x1A, 8, 0x08, 0, 192, 0}, "MODE SENSE(6) page 0x08 DBD"},
		{[]byte{0x5A, 0, 0x3F, 0xFF, 0, 0, 0, 0, 192, 0}, "MODE SENSE(10) page 0x3F subpage 0xFF"},
		{[]byte{0x25, 0, 0, 0, 0, 0, 0, 0, 0, 0}, "READ CAPACITY(10)"},
		{[]byte{0x9E, 0x10, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 32, 0, 0}, "READ CAPACITY(16)"},
		{[]byte{0x2A, 8, 0, 0, 0, 0, 0, 0, 1, 0}, "WRITE(10) FUA"},
		{[]byte{0x1B, 0, 0, 0, 2, 0}, "START STOP UNIT (start 0, eject 1)"},
		{[]byte{0xC7}, "opcode 0xC7"},
	} {
		if got := cdbKey(tc.cdb); got != tc.want {
			t.Errorf("cdbKey(% x) = %q, want %q", tc.cdb, got, tc.want)
		}
	}
}

func TestNotSentByKernel(t *testing.T) {
	cmd := func(cdb ...byte) *traceCmd { return &traceCmd{cdb: cdb} }
	kernel := &devTrace{
		cmds: []*traceCmd{cmd(0x12, 0, 0, 0, 36, 0), cmd(0x00, 0, 0, 0, 0, 0), cmd(0x1A, 0, 0x3F, 0, 192, 0)},
		ctrl: []string{"a1 fe 0000 0000 0001"},
	}
	for _, tc := range []struct {
		name            string
		usbflash        *devTrace
		extra, tolerate int
		mention         string
	}{
		{"same", &devTrace{cmds: []*traceCmd{cmd(0x00, 0, 0, 0, 0, 0), cmd(0x12, 0, 0, 0, 36, 0)}, ctrl: []string{"a1 fe 0000 0000 0001"}}, 0, 0, ""},
		{"VPD", &devTrace{cmds: []*traceCmd{cmd(0x12, 1, 0, 0, 252, 0)}}, 1, 0, "INQUIRY VPD page 0x00"},
		{"other mode page", &devTrace{cmds: []*traceCmd{cmd(0x1A, 0, 0x08, 0, 192, 0)}}, 1, 0, "MODE SENSE(6) page 0x08"},
		{"sync tolerated", &devTrace{cmds: []*traceCmd{cmd(0x35, 0, 0, 0, 0, 0, 0, 0, 0, 0)}}, 0, 1, "SYNCHRONIZE CACHE(10)"},
		{"reset", &devTrace{ctrl: []string{"21 ff 0000 0000 0000"}}, 1, 0, "Bulk-Only Reset"},
	} {
		extra, tolerated := notSentByKernel(kernel, tc.usbflash)
		if len(extra) != tc.extra || len(tolerated) != tc.tolerate || !strings.Contains(strings.Join(append(extra, tolerated...), ";"), tc.mention) {
			t.Errorf("%s: extra %q, tolerated %q", tc.name, extra, tolerated)
		}
	}
}
