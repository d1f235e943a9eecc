package termui

import (
	"fmt"
	"strconv"
	"strings"
	"unicode"

	"github.com/usbflash/usbflash/internal/lib/units"
	"github.com/usbflash/usbflash/internal/session"
)

// CardTable is the table a person reads at the end of a session of
// several cards: one line per card.
func CardTable(cards []session.Record, noVerify bool) string {
	var b strings.Builder
	fmt.Fprintf(&b, "%-28s %-14s %9s %9s %-8s %s\n", "TARGET", "SERIAL", "CAPACITY", "MB/s", "VERIFIED", "RESULT")
	for _, c := range cards {
		verified := "yes"
		switch {
		case noVerify:
			verified = "skipped"
		case !c.Verified:
			verified = "no"
		}
		result := "ok"
		switch {
		case c.Error != "":
			result = c.Error
		case c.Bound == session.BoundSlowest:
			result = "ok (the slowest card: it set the pace)"
		}
		fmt.Fprintf(&b, "%-28s %-14s %9s %9.1f %-8s %s\n", tableCell(c.Target), tableCell(orDash(c.Serial)),
			units.FormatBytes(c.Capacity), c.Rate/1e6, verified, tableCell(result))
	}
	return strings.TrimRight(b.String(), "\n")
}

// tableCell makes s one line of printable text: a cell holding a newline
// (an error joined from two, garbage a reader sent) or another control
// character (a serial number of raw bytes) breaks the columns of every
// line after it. Lines are joined with "; ", control characters shown
// escaped.
func tableCell(s string) string {
	var b strings.Builder
	for _, line := range strings.FieldsFunc(s, func(r rune) bool { return r == '\n' || r == '\r' }) {
		if b.Len() > 0 {
			b.WriteString("; ")
		}
		for _, r := range line {
			if unicode.IsPrint(r) {
				b.WriteRune(r)
			} else {
				b.WriteString(strings.Trim(strconv.QuoteRune(r), "'"))
			}
		}
	}
	return b.String()
}

// orDash is s, or "-" for nothing.
func orDash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}
