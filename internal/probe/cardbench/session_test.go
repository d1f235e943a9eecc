package cardbench

import (
	"bytes"
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/usbflash/usbflash/internal/drive"
	"github.com/usbflash/usbflash/internal/failure"
	"github.com/usbflash/usbflash/internal/lib/splitmix"
	"github.com/usbflash/usbflash/pipeline/filedev"
)

// cardFile is a 32 MiB card file full of a pattern, so any write shows.
func cardFile(t *testing.T) (string, []byte) {
	t.Helper()
	b := make([]byte, 32<<20)
	splitmix.Fill(b, 3)
	p := filepath.Join(t.TempDir(), "card.img")
	if err := os.WriteFile(p, b, 0o644); err != nil {
		t.Fatal(err)
	}
	return p, b
}

// TestRun: a bench session from its target: what it tells and in which
// order, what it leaves on the card, what it refuses before writing, and
// how it reads the kernel's disk first.
func TestRun(t *testing.T) {
	region := &Region{Name: "region", Offset: 12 << 20, Length: 4 << 20}
	refuse := errors.New("not confirmed")
	tests := []struct {
		name    string
		spec    string // after sim:CARD
		cfg     Config
		compare string // "card": the card file itself, "other": a 16 MiB file
		wantErr func(error) bool
		// wantEvents is the events in order, a StepStarted by its step
		// (Progress, Measured and the reader's notes left out).
		wantEvents []string
		points     int  // Measured events
		changes    bool // the region changed
		// transports is the rows of Report.Transports (a reader that
		// offers Bulk-Only and UAS), each a BOT and a UAS one per op.
		transports int
	}{
		{name: "reads only", cfg: Config{Plan: Plan{Sizes: []int64{4 << 10, 64 << 10, 1 << 20}}},
			wantEvents: []string{"Started", StepReadSweep, StepAlignment, StepRandomRead}, points: 9},
		{name: "writes inside its region", cfg: Config{Write: true, Plan: Plan{Sizes: []int64{64 << 10, 1 << 20}, Region: region}},
			wantEvents: []string{"Started", StepReadSweep, StepRandomRead, StepWriteSweep, StepRandomWrite}, points: 4, changes: true},
		{name: "preserves its region", cfg: Config{Write: true, Plan: Plan{Sizes: []int64{64 << 10, 1 << 20}, Region: region, Preserve: true}},
			wantEvents: []string{"Started", StepReadSweep, StepRandomRead, StepSave, StepWriteSweep, StepRandomWrite, StepRestore, "Restoring", "Restored"}, points: 4},
		{name: "both transports: reads on each", spec: "?uas=both&streams=4", cfg: Config{Plan: Plan{Sizes: []int64{64 << 10, 1 << 20}}},
			wantEvents: []string{"Started", StepReadSweep, StepAlignment, StepRandomRead, StepTransports}, points: 6, transports: 2},
		{name: "both transports at high speed: writes on each", spec: "?uas=both", cfg: Config{Write: true, Plan: Plan{Sizes: []int64{64 << 10, 1 << 20}, Region: region}},
			wantEvents: []string{"Started", StepReadSweep, StepRandomRead, StepWriteSweep, StepRandomWrite, StepTransports}, points: 4, changes: true, transports: 4},
		{name: "both transports, preserved: reads on each", spec: "?uas=both&streams=4", cfg: Config{Write: true, Plan: Plan{Sizes: []int64{64 << 10, 1 << 20}, Region: region, Preserve: true}},
			wantEvents: []string{"Started", StepReadSweep, StepRandomRead, StepSave, StepWriteSweep, StepRandomWrite, StepRestore, "Restoring", "Restored", StepTransports}, points: 4, transports: 2},
		{name: "a write-protected card is refused", spec: "?wp=1", cfg: Config{Write: true, Plan: Plan{Sizes: []int64{1 << 20}, Region: region}},
			wantErr: func(err error) bool { return drive.IsRefusal(err) }},
		{name: "an unconfirmed write writes nothing", cfg: Config{Write: true, Plan: Plan{Sizes: []int64{1 << 20}, Region: region},
			Confirm: func(d *drive.Device, r Region) error {
				if r != *region || !strings.HasPrefix(d.Name, "sim:") {
					t.Errorf("asked about %v of %s", r, d.Name)
				}
				return refuse
			}},
			wantErr: func(err error) bool { return errors.Is(err, refuse) }},
		{name: "a region past the card", cfg: Config{Write: true, Plan: Plan{Region: &Region{Name: "region", Offset: 30 << 20, Length: 4 << 20}}},
			wantErr: func(err error) bool { return isPlanError(err, wantRegion) }},
		{name: "a size past the memory bound, before opening", spec: "-missing", cfg: Config{Plan: Plan{Sizes: []int64{64 << 30}}},
			wantErr: func(err error) bool { return isPlanError(err, wantSizes) }},
		{name: "the kernel's disk first", compare: "card", cfg: Config{Plan: Plan{Sizes: []int64{64 << 10, 1 << 20}}},
			wantEvents: []string{"Started", PathKernelDirect, PathKernelBuffered, StepReadSweep}, points: 18},
		{name: "the kernel's disk is another medium", compare: "other", cfg: Config{Plan: Plan{Sizes: []int64{64 << 10, 1 << 20}}},
			wantEvents: []string{"Started", PathKernelDirect, PathKernelBuffered, "Note", StepReadSweep}, points: 18},
		{name: "a compared disk that cannot be one", compare: "/nonexistent.img", cfg: Config{Plan: Plan{Sizes: []int64{1 << 20}}},
			wantErr: func(err error) bool { return failure.SettingOf(err) == SettingCompare }},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			card, was := cardFile(t)
			spec, err := drive.Parse("sim:" + card + tt.spec)
			if err != nil {
				t.Fatal(err)
			}
			cfg := tt.cfg
			cfg.Target, cfg.PointTime, cfg.RandomTime = spec, 5*time.Millisecond, 5*time.Millisecond
			// The write rows measure writes alone; the read-only row
			// measures everything.
			cfg.Skip = Skip{Align: cfg.Write, RoundTrip: cfg.Write}
			switch tt.compare {
			case "card":
				cfg.Compare = card
			case "other":
				cfg.Compare, _ = cardFile(t)
				if err := os.Truncate(cfg.Compare, 16<<20); err != nil {
					t.Fatal(err)
				}
			default:
				cfg.Compare = tt.compare
			}
			if cfg.Compare != "" {
				cfg.Skip = Skip{Align: true, Random: true, RoundTrip: true}
			}
			var got []Event // Run tells one event at a time
			rep, err := Run(context.Background(), cfg, func(e Event) { got = append(got, e) })
			if tt.wantErr != nil {
				if !tt.wantErr(err) {
					t.Errorf("Run = %v, not the error wanted", err)
				}
			} else if err != nil {
				t.Fatalf("Run: %v", err)
			}
			now, _ := os.ReadFile(card)
			if changed := !bytes.Equal(now, was); changed != tt.changes {
				t.Errorf("card changed %v, want %v", changed, tt.changes)
			}
			if tt.changes && (!bytes.Equal(now[:region.Offset], was[:region.Offset]) || !bytes.Equal(now[region.End():], was[region.End():])) {
				t.Error("the run wrote outside its region")
			}
			if tt.wantErr != nil {
				return
			}
			var kinds []string
			points := 0
			for i, e := range got {
				switch e := e.(type) {
				case Started:
					if i != 0 {
						t.Errorf("Started is event %d, not the first", i)
					}
					if (e.Compare != "") != (cfg.Compare != "") || e.Target != "sim:"+card {
						t.Errorf("Started %+v for target %s, compare %q", e, spec.Raw, cfg.Compare)
					}
				case Measured:
					points++
					continue
				case Progress:
					continue
				case Note:
					if !strings.Contains(e.Message, "the kernel paths read another medium") {
						continue
					}
				}
				kinds = append(kinds, typeName(e))
			}
			if strings.Join(kinds, " ") != strings.Join(tt.wantEvents, " ") {
				t.Errorf("events %q, want %q", kinds, tt.wantEvents)
			}
			if points != tt.points || len(rep.Points) != tt.points {
				t.Errorf("%d Measured events, %d points reported; want %d", points, len(rep.Points), tt.points)
			}
			checkTransports(t, rep.Transports, tt.transports, cfg.Plan.Sizes)
			if rep.Target != "sim:"+card || rep.Capacity != 32<<20 || rep.BlockSize != 512 {
				t.Errorf("report of %s, %d bytes in %d-byte blocks", rep.Target, rep.Capacity, rep.BlockSize)
			}
		})
	}
}

// checkTransports: a reader that offers both transports has a row per
// transport and op, BOT and UAS alike, of the largest size, each with
// bytes moved, and the faster named by its rate; other readers none.
func checkTransports(t *testing.T, tr *Transports, rows int, sizes []int64) {
	t.Helper()
	if rows == 0 {
		if tr != nil {
			t.Errorf("transports %+v on a reader that offers one", tr)
		}
		return
	}
	if tr == nil || len(tr.Rates) != rows {
		t.Fatalf("transports %+v, want %d rows", tr, rows)
	}
	seen := map[string]float64{}
	for _, r := range tr.Rates {
		if r.Size != sizes[len(sizes)-1] || r.Bytes <= 0 || r.Rate <= 0 {
			t.Errorf("row %+v: want %d-byte transfers that moved bytes", r, sizes[len(sizes)-1])
		}
		seen[r.Transport+" "+r.Op] = r.Rate
	}
	for _, want := range []string{"BOT " + OpRead, "UAS " + OpRead} {
		if _, ok := seen[want]; !ok {
			t.Errorf("no %s row in %+v", want, tr.Rates)
		}
	}
	op := OpRead
	if rows == 4 {
		op = OpWrite
	}
	other := map[string]string{"BOT": "UAS", "UAS": "BOT"}[tr.Faster]
	if tr.Op != op || other == "" || seen[tr.Faster+" "+op] < seen[other+" "+op] || tr.Ratio < 1 {
		t.Errorf("faster %s at %s (%.2fx), rates %v", tr.Faster, tr.Op, tr.Ratio, seen)
	}
}

func typeName(e Event) string {
	switch e := e.(type) {
	case Started:
		return "Started"
	case Note:
		return "Note"
	case StepStarted:
		return e.Step
	case Restoring:
		return "Restoring"
	case Restored:
		return "Restored"
	}
	return "other"
}

// TestRunOpensReadOnly: without Write the target is opened read-only, so
// it shares the card with another reader (a verify's shared lock); Write
// takes the card for itself, and waits its turn.
func TestRunOpensReadOnly(t *testing.T) {
	card, was := cardFile(t)
	held, err := filedev.Open(card, filedev.Options{ReadOnly: true})
	if err != nil {
		t.Fatal(err)
	}
	defer held.Close()
	spec, err := drive.Parse("sim:" + card)
	if err != nil {
		t.Fatal(err)
	}
	for _, write := range []bool{false, true} {
		cfg := Config{Target: spec, Write: write, PointTime: time.Millisecond, RandomTime: time.Millisecond,
			Plan: Plan{Sizes: []int64{64 << 10}, Region: &Region{Name: "region", Offset: 4 << 20, Length: 4 << 20}},
			Skip: Skip{Align: true, Random: true, RoundTrip: true}}
		_, err := Run(context.Background(), cfg, nil)
		if refused := drive.IsRefusal(err); refused != write || !write && err != nil {
			t.Errorf("write %v beside a reader: %v", write, err)
		}
	}
	if now, _ := os.ReadFile(card); !bytes.Equal(now, was) {
		t.Error("the card changed")
	}
}
