package fakecheck

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/usbflash/usbflash/internal/drive"
	"github.com/usbflash/usbflash/internal/failure"
)

// TestRun: a check through the simulated reader (Bulk-Only Transport and
// SCSI all the way) opens the card, refuses what the pre-write checks
// refuse, tells the observer each step, says only what it proved, and
// leaves the card as it was; its errors say their class.
func TestRun(t *testing.T) {
	before := bytes.Repeat([]byte{0xA5, 0x5A, 0x3C, 0xC3}, (1<<20)/4)
	refuse := failure.Errorf(failure.Refused, "not confirmed")
	tests := []struct {
		name        string
		opts        string // the sim: target's options
		destructive bool
		confirm     error // what Confirm answers
		cancel      Step  // the step a cancel comes at
		wantClass   failure.Class
		wantKind    Kind
		wantUsable  int64
		// In the verdict's words (Result.Describe), and never.
		wantSaid, wantUnsaid string
	}{
		{name: "genuine", opts: "size=64MiB", wantKind: Genuine, wantUsable: 64 * mib,
			wantSaid: "every block probed across its 67.1 MB held what was written, also after", wantUnsaid: "all 67.1 MB"},
		{name: "a cache as large as the part it lacks (issue 31 item 6)", opts: "size=128MiB&fake=drop&real=124MiB&fake-cache=4MiB",
			wantKind: Genuine, wantUsable: 128 * mib, wantSaid: "a card whose cache is as large as the part it lacks would pass too, until it loses power"},
		{name: "fake", opts: "size=64MiB&fake=drop&real=20MiB&fake-cache=2MiB", wantClass: failure.Fake, wantKind: Drop, wantUsable: 20 * mib,
			wantSaid: "writes from LBA 40960 on are lost, behind a cache"},
		{name: "wrap behind a write-back cache its own timer flushes (issue 41)", opts: "size=64MiB&fake=wrap&real=16MiB&write-back=1MiB&write-back-every=8",
			wantClass: failure.Fake, wantKind: Wrap, wantUsable: 16 * mib,
			wantSaid: "LBA 32768 read back what the check wrote to LBA 0: writes past LBA 32767 wrap around onto the start (a second write to LBA 32768 did not read back at LBA 0 at once"},
		{name: "wrap, no cache", opts: "size=64MiB&fake=wrap&real=16MiB", wantClass: failure.Fake, wantKind: Wrap, wantUsable: 16 * mib,
			wantSaid: "a write to LBA 32768 lands on LBA 0: writes past it wrap around onto the start", wantUnsaid: "did not read back"},
		{name: "write-protected", opts: "size=64MiB&wp=1", wantClass: failure.Refused},
		{name: "destructive, not confirmed", opts: "size=64MiB", destructive: true, confirm: refuse, wantClass: failure.Refused},
		{name: "cancelled while probing", opts: "size=64MiB", cancel: StepCache, wantClass: failure.Interrupted},
		{name: "cancelled while putting back", opts: "size=64MiB", cancel: StepRestore, wantClass: failure.Interrupted},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			card := filepath.Join(t.TempDir(), "card.img")
			if err := os.WriteFile(card, before, 0o644); err != nil {
				t.Fatal(err)
			}
			spec, err := drive.Parse("sim:" + card + "?" + tt.opts)
			if err != nil {
				t.Fatal(err)
			}
			ctx, cancel := context.WithCancel(context.Background())
			defer cancel()
			var steps []Step
			var finished *Result
			confirmed := false
			cfg := Config{Target: spec, MaxCache: 16 * mib, Destructive: tt.destructive, SaveDir: t.TempDir(),
				Confirm: func(d *drive.Device) error { confirmed = true; return tt.confirm }}
			res, err := Run(ctx, cfg, ObserverFunc(func(e Event) {
				switch e := e.(type) {
				case Stepped:
					if step := Step(e.Step); len(steps) == 0 || steps[len(steps)-1] != step {
						steps = append(steps, step)
					}
					if Step(e.Step) == tt.cancel {
						cancel()
					}
				case Finished:
					finished = e.Result
				}
			}))
			got := failure.Of(err)
			if drive.IsRefusal(err) {
				got = failure.Refused // drive's refusals say it so
			}
			if (err == nil) != (tt.wantClass == failure.Unknown) || (err != nil && got != tt.wantClass) {
				t.Fatalf("Run: %v (class %v), want class %v", err, got, tt.wantClass)
			}
			if confirmed != tt.destructive {
				t.Errorf("Confirm asked %v, want %v", confirmed, tt.destructive)
			}
			if got, err := os.ReadFile(card); err != nil || !bytes.Equal(got[:len(before)], before) {
				t.Fatalf("the check changed the card's first %d bytes (%v)", len(before), err)
			}
			if tt.wantKind == "" {
				if finished != nil {
					t.Errorf("a verdict after %v", err)
				}
				return
			}
			if finished != res || res.Kind != tt.wantKind || res.Usable != tt.wantUsable || !res.Restored || !res.Verified {
				t.Fatalf("%+v, want %s with %d usable bytes, put back and read back", res, tt.wantKind, tt.wantUsable)
			}
			if len(steps) == 0 || steps[0] != StepSave || steps[len(steps)-1] != StepRestore {
				t.Errorf("steps %v, want save first and restore last", steps)
			}
			// A fake card's saved regions past its usable size are put
			// back where it puts them (on a wrap, the blocks they alias)
			// and said; a genuine card has none.
			if past := res.PastRegions > 0; past != res.Fake() {
				t.Errorf("%d saved regions past the usable size of a card fake %v", res.PastRegions, res.Fake())
			}
			said := res.Describe()
			if !strings.Contains(said, tt.wantSaid) || (tt.wantUnsaid != "" && strings.Contains(said, tt.wantUnsaid)) {
				t.Errorf("verdict %q, want it to say %q and not %q", said, tt.wantSaid, tt.wantUnsaid)
			}
		})
	}
}
