package termui

import (
	"strings"
	"testing"

	"github.com/usbflash/usbflash/internal/session"
)

// TestCardTableCells: whatever a card's cells hold, the table has one line
// per card and its columns stay where the header puts them.
func TestCardTableCells(t *testing.T) {
	for _, tc := range []struct {
		name string
		rec  session.Record
		want string // in the card's line
	}{
		{"an error of two lines (unreadable sense)", session.Record{Target: "sim:m2.img", Serial: "SIM2", Capacity: 4 << 20,
			Error: "WRITE(10) on sim:m2.img LUN 0, LBA 0-2047: command failed with unreadable sense data: no sense data\nscsi: sense response code 0x00 is neither fixed nor descriptor format: malformed response"},
			"unreadable sense data: no sense data; scsi: sense response code 0x00"},
		{"CR LF", session.Record{Target: "sim:a.img", Error: "one\r\ntwo"}, "one; two"},
		{"a serial of raw bytes", session.Record{Target: "sim:b.img", Serial: "AB\x07\tC", Verified: true}, `AB\a\tC`},
		{"a target with a newline", session.Record{Target: "sim:c\nd.img", Verified: true}, "sim:c; d.img"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ok := session.Record{Target: "sim:m1.img", Serial: "SIM1", Capacity: 4 << 20, Verified: true}
			lines := strings.Split(CardTable([]session.Record{ok, tc.rec, ok}, false), "\n")
			if len(lines) != 4 {
				t.Fatalf("%d lines, want a header and 3 cards:\n%s", len(lines), strings.Join(lines, "\n"))
			}
			if !strings.Contains(lines[2], tc.want) {
				t.Errorf("line %q does not hold %q", lines[2], tc.want)
			}
			col := strings.Index(lines[0], "CAPACITY")
			if strings.Index(lines[3], "4.19 MB") != col+1 {
				t.Errorf("the line after the card is out of its columns:\n%s", strings.Join(lines, "\n"))
			}
		})
	}
}
