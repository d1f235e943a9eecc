package scsi

import (
	"strings"
	"testing"
)

// Seeds live in testdata/fuzz/FuzzXxx; these fuzzers only check that no
// input panics and that decoded strings stay printable.

func printable(t *testing.T, s string) {
	t.Helper()
	if strings.ContainsFunc(s, func(r rune) bool { return r < 0x20 || r > 0x7E }) {
		t.Errorf("decoded string %q has non-printable characters", s)
	}
}

func FuzzParseInquiry(f *testing.F) {
	f.Fuzz(func(t *testing.T, b []byte) {
		d, err := ParseInquiry(b)
		if err != nil {
			return
		}
		printable(t, d.Vendor)
		printable(t, d.Product)
		printable(t, d.Revision)
	})
}

func FuzzParseVPDSupportedPages(f *testing.F) {
	f.Fuzz(func(t *testing.T, b []byte) {
		p, err := ParseVPDSupportedPages(b)
		if err == nil && len(p) > len(b) {
			t.Errorf("%d pages from %d bytes", len(p), len(b))
		}
	})
}

func FuzzParseVPDSerial(f *testing.F) {
	f.Fuzz(func(t *testing.T, b []byte) {
		s, err := ParseVPDSerial(b)
		if err == nil {
			printable(t, s)
		}
	})
}

func FuzzParseBlockLimits(f *testing.F) {
	f.Fuzz(func(t *testing.T, b []byte) {
		_, _ = ParseBlockLimits(b)
	})
}

func FuzzParseReadCapacity10(f *testing.F) {
	f.Fuzz(func(t *testing.T, b []byte) {
		c, err := ParseReadCapacity10(b)
		if err == nil {
			_ = c.Validate()
			_ = c.Bytes()
		}
	})
}

func FuzzParseReadCapacity16(f *testing.F) {
	f.Fuzz(func(t *testing.T, b []byte) {
		c, err := ParseReadCapacity16(b)
		if err == nil {
			_ = c.Validate()
			if c.Blocks() == 0 {
				t.Errorf("Blocks() = 0 for last LBA %d", c.LastLBA)
			}
			_ = c.Bytes()
		}
	})
}

func FuzzParseModeSense6(f *testing.F) {
	f.Fuzz(func(t *testing.T, b []byte) {
		_, _ = ParseModeSense6(b)
	})
}

func FuzzParseSense(f *testing.F) {
	f.Fuzz(func(t *testing.T, b []byte) {
		se, err := ParseSense(b)
		if err != nil {
			return
		}
		if se.Error() == "" {
			t.Error("empty Error()")
		}
		_ = se.Action()
		_ = se.Key.String()
	})
}
