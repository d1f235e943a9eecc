package termui

import (
	"bytes"
	"strings"
	"testing"
	"time"

	"github.com/usbflash/usbflash/internal/ui/jsonevents"
)

// fakeClock advances only when told.
type fakeClock struct{ t time.Time }

func (c *fakeClock) now() time.Time { return c.t }

func TestTextProgress(t *testing.T) {
	t.Parallel()
	type step struct {
		advance time.Duration
		p       jsonevents.Progress
	}
	rate := func(r float64) *float64 { return &r }
	n := func(v int64) *int64 { return &v }
	tests := []struct {
		name  string
		steps []step
		want  string // stderr
	}{
		{"a line every 5 s, no rate in the first second, sync as a line", []step{
			{0, jsonevents.Progress{Phase: jsonevents.PhaseWrite, Done: 0, Total: 4e9}},
			{300 * time.Millisecond, jsonevents.Progress{Phase: jsonevents.PhaseWrite, Done: 1e9, Total: 4e9, ElapsedS: 0.3}},
			{5 * time.Second, jsonevents.Progress{Phase: jsonevents.PhaseWrite, Done: 2e9, Total: 4e9, ElapsedS: 5.3, Rate: rate(2e9 / 5.3)}},
			{time.Second, jsonevents.Progress{Phase: jsonevents.PhaseWrite, Done: 2.2e9, Total: 4e9, ElapsedS: 6.3, Rate: rate(2.2e9 / 6.3)}},
			{4 * time.Second, jsonevents.Progress{Phase: jsonevents.PhaseWrite, Done: 4e9, Total: 4e9, ElapsedS: 10.3, Rate: rate(4e9 / 10.3)}},
			{0, jsonevents.Progress{Phase: jsonevents.PhaseSync, Done: 4e9, Total: 4e9}},
			{0, jsonevents.Progress{Phase: jsonevents.PhaseVerify, Done: 0, Total: 4e9}},
		},
			"write: 2.00 GB of 4.00 GB (50%), 377.4 MB/s, ETA 5s\n" +
				"write: 4.00 GB of 4.00 GB (100%), 388.3 MB/s, ETA 0s\n" +
				"Syncing: waiting for the card to store every block it has buffered\n"},
		{"unknown size: bytes and the share of the file read", []step{
			{0, jsonevents.Progress{Phase: jsonevents.PhaseWrite, Done: 0, Total: -1, CompressedDone: n(0), CompressedTotal: n(1e8)}},
			{6 * time.Second, jsonevents.Progress{Phase: jsonevents.PhaseWrite, Done: 123456789, Total: -1, CompressedDone: n(25e6), CompressedTotal: n(1e8), ElapsedS: 6, Rate: rate(123456789 / 6.0)}},
		},
			"write: 123.5 MB (25% of the image file read), 20.6 MB/s, ETA 18s\n"},
		{"standard input: bytes only", []step{
			{0, jsonevents.Progress{Phase: jsonevents.PhaseWrite, Done: 0, Total: -1}},
			{6 * time.Second, jsonevents.Progress{Phase: jsonevents.PhaseWrite, Done: 5e6, Total: -1, ElapsedS: 6, Rate: rate(5e6 / 6.0)}},
		},
			"write: 5.00 MB, 0.8 MB/s\n"},
		{"from a URL: the download beside the write, and which sets the pace", []step{
			{0, jsonevents.Progress{Phase: jsonevents.PhaseWrite, Done: 0, Total: 4e9}},
			{6 * time.Second, jsonevents.Progress{Phase: jsonevents.PhaseWrite, Done: 1e9, Total: 4e9, ElapsedS: 6, Rate: rate(1e9 / 6.0),
				Download: &jsonevents.Download{Bytes: 3e8, Total: 12e8, Rate: 5e7, Resumes: 2, Bound: "download"}}},
			{6 * time.Second, jsonevents.Progress{Phase: jsonevents.PhaseWrite, Done: 2e9, Total: 4e9, ElapsedS: 12, Rate: rate(2e9 / 12.0),
				Download: &jsonevents.Download{Bytes: 6e8, Total: -1, Rate: 5e7, Bound: "write"}}},
		},
			"write: 1.00 GB of 4.00 GB (25%), 166.7 MB/s, ETA 18s | download: 300.0 MB of 1.20 GB, 50.0 MB/s, 2 resumed, sets the pace\n" +
				"write: 2.00 GB of 4.00 GB (50%), 166.7 MB/s, ETA 12s | download: 600.0 MB, 50.0 MB/s, the write sets the pace\n"},
		{"bench: points, not bytes; a step has no count", []step{
			{0, jsonevents.Progress{Phase: jsonevents.PhaseReadSweep, Done: 0, Total: 36, Unit: jsonevents.UnitPoints}},
			{6 * time.Second, jsonevents.Progress{Phase: jsonevents.PhaseReadSweep, Done: 9, Total: 36, ElapsedS: 6, Unit: jsonevents.UnitPoints}},
			{0, jsonevents.Progress{Phase: jsonevents.PhaseAlignment, Done: 0, Total: 1, Unit: jsonevents.UnitPoints}},
			{6 * time.Second, jsonevents.Progress{Phase: jsonevents.PhaseAlignment, Done: 0, Total: 1, Unit: jsonevents.UnitPoints}},
		},
			"read sweep: 9 of 36 points (25%)\n" +
				"alignment\n"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			clock := &fakeClock{time.Unix(1e9, 0)}
			var out, errOut bytes.Buffer
			r := New(&out, &errOut, Options{Now: clock.now})
			for _, s := range tt.steps {
				clock.t = clock.t.Add(s.advance)
				r.Progress(s.p)
			}
			if errOut.String() != tt.want {
				t.Errorf("stderr\n%q\nwant\n%q", errOut.String(), tt.want)
			}
			if out.Len() != 0 {
				t.Errorf("stdout %q", out.String())
			}
		})
	}
	// quiet prints no progress at all.
	var out, errOut bytes.Buffer
	r := New(&out, &errOut, Options{Quiet: true})
	r.Progress(jsonevents.Progress{Phase: jsonevents.PhaseWrite, Done: 1, Total: 2})
	r.Progress(jsonevents.Progress{Phase: jsonevents.PhaseSync, Done: 1, Total: 2})
	if out.Len()+errOut.Len() != 0 {
		t.Errorf("quiet printed %q %q", out.String(), errOut.String())
	}
}

// TestTextEscapesOutsideText: a note or an error quoting a name from
// outside (a catalog entry, a server's file name, a card's serial) reaches
// the terminal with its control characters escaped; JSON escapes its own.
func TestTextEscapesOutsideText(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name, text, want string
	}{
		{"clear screen and retitle", "\"OS\x1b[2J\x1b]0;pwned\x07\" is an entry", `"OS\x1b[2J\x1b]0;pwned\x07" is an entry`},
		{"C1 CSI", "serial AB\u009b31m", `serial AB\u009b31m`},
		{"carriage return overwrites", "ok\rFAILED", `ok\x0dFAILED`},
		{"lines kept", "a\nb", "a\nb"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			var out, errOut bytes.Buffer
			r := New(&out, &errOut, Options{})
			r.Event(jsonevents.NewNote(tc.text), tc.text)
			r.Fail(&jsonevents.Error{Message: tc.text, Hint: "check " + tc.text})
			if got := strings.TrimSuffix(out.String(), "\n"); got != tc.want {
				t.Errorf("note printed %q, want %q", got, tc.want)
			}
			if strings.ContainsAny(out.String()+errOut.String(), "\x1b\x07\r\u009b") {
				t.Errorf("a control character reached the terminal: %q / %q", out.String(), errOut.String())
			}
			if !strings.Contains(errOut.String(), "usbflash: "+tc.want) {
				t.Errorf("error printed %q, want it to hold %q", errOut.String(), tc.want)
			}
		})
	}
}

// TestPlural: counts in words that agree with them.
func TestPlural(t *testing.T) {
	for _, tt := range []struct {
		n    int
		want string
	}{{0, "0 commands"}, {1, "1 command"}, {2, "2 commands"}} {
		if got := Plural(tt.n, "command"); got != tt.want {
			t.Errorf("Plural(%d) = %q, want %q", tt.n, got, tt.want)
		}
	}
}
