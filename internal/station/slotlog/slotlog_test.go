package slotlog

import (
	"bufio"
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/usbflash/usbflash/internal/failure"
	"github.com/usbflash/usbflash/internal/image"
	"github.com/usbflash/usbflash/internal/session"
	"github.com/usbflash/usbflash/internal/testkit/factsonly"
	"github.com/usbflash/usbflash/internal/testkit/simcards"
	"github.com/usbflash/usbflash/internal/testkit/testpattern"
	"github.com/usbflash/usbflash/internal/ui/jsonevents"
)

// TestLogs: every card leaves its notes and its record in its slot's log,
// labelled with the station; a card that failed its verify says where it
// differs; a log past its size is rotated, the oldest past Keep gone.
func TestLogs(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	logs := filepath.Join(dir, "logs")
	if err := os.Mkdir(logs, 0o755); err != nil {
		t.Fatal(err)
	}
	imagePath := filepath.Join(dir, "os.img")
	if err := os.WriteFile(imagePath, testpattern.Bytes(2<<20+512, 3), 0o644); err != nil {
		t.Fatal(err)
	}
	cards := []string{"good.img?size=8MiB&fault=phase-error", "bad.img?size=8MiB&fault=corrupt:lba=3000,persistent"}
	// Three runs: the logs take two runs' lines, so the third rotates.
	const runs = 3
	var maxBytes int64
	for run := range runs {
		l, err := Open(Options{Dir: logs, MaxBytes: maxBytes, Keep: 1})
		if err != nil {
			t.Fatal(err)
		}
		_, _ = session.Run(context.Background(), session.Config{Image: image.Ref{Path: imagePath}, Engine: session.Engine{Verify: true}, Output: session.Output{Observer: l, Station: "line 3", Operator: "ana"}}, simcards.Specs(t, dir, cards...))
		if err := l.Close(); err != nil {
			t.Fatal(err)
		}
		if run == 0 {
			// Two runs' lines fit, a third's do not.
			st, err := os.Stat(filepath.Join(logs, FileName("sim:"+filepath.Join(dir, "bad.img"))))
			if err != nil {
				t.Fatal(err)
			}
			maxBytes = 2*st.Size() + st.Size()/2
		}
	}
	for _, tc := range []struct {
		card, result, note string
		bad                bool
	}{
		{card: "good.img", result: "ok", note: "resetting the reader"},
		{card: "bad.img", result: "verify", bad: true},
	} {
		path := filepath.Join(logs, FileName("sim:"+filepath.Join(dir, tc.card)))
		for _, f := range []struct {
			path    string
			records int
		}{{path, 1}, {path + ".1", 2}} {
			lines := readLines(t, f.path)
			var records []*jsonevents.Record
			notes := ""
			for _, ln := range lines {
				if ln.Record != nil {
					records = append(records, ln.Record)
				}
				notes += ln.Note + "\n"
			}
			if len(records) != f.records {
				t.Fatalf("%s: %d records, want %d", f.path, len(records), f.records)
			}
			r := records[0]
			if r.Result != tc.result || r.Station != "line 3" || r.Operator != "ana" || !strings.HasSuffix(r.Slot, tc.card) || r.Image != imagePath {
				t.Errorf("%s: record %+v", f.path, r)
			}
			if tc.bad != (r.BadLBA != nil && r.Expected != "" && r.Read != "" && r.Expected != r.Read) {
				t.Errorf("%s: the difference: LBA %v, expected %q, read %q", f.path, r.BadLBA, r.Expected, r.Read)
			}
			if !strings.Contains(notes, tc.note) {
				t.Errorf("%s: notes %q lack %q", f.path, notes, tc.note)
			}
		}
		if _, err := os.Stat(path + ".2"); !os.IsNotExist(err) {
			t.Errorf("%s.2: %v, want none (Keep 1)", path, err)
		}
	}
}

func readLines(t *testing.T, path string) []line {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var out []line
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		var ln line
		if err := json.Unmarshal(sc.Bytes(), &ln); err != nil {
			t.Fatalf("%s: %v", path, err)
		}
		out = append(out, ln)
	}
	return out
}

// TestOpen: the directory must be one.
func TestOpen(t *testing.T) {
	t.Parallel()
	base := t.TempDir()
	file := filepath.Join(base, "f")
	if err := os.WriteFile(file, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	readOnly := filepath.Join(base, "ro")
	if err := os.Mkdir(readOnly, 0o555); err != nil {
		t.Fatal(err)
	}
	for _, tt := range []struct {
		name string
		dir  string
		ok   bool
	}{
		{name: "exists", dir: base, ok: true},
		{name: "missing: made", dir: filepath.Join(base, "logs"), ok: true},
		{name: "missing with its parents: made", dir: filepath.Join(base, "a", "b", "logs"), ok: true},
		{name: "a file", dir: file},
		{name: "under a file", dir: filepath.Join(file, "x")},
		{name: "not writable", dir: readOnly},
	} {
		t.Run(tt.name, func(t *testing.T) {
			if tt.dir == readOnly && os.Geteuid() == 0 {
				t.Skip("root writes any directory")
			}
			l, err := Open(Options{Dir: tt.dir})
			if tt.ok {
				st, serr := os.Stat(tt.dir)
				if err != nil || serr != nil || !st.IsDir() {
					t.Fatalf("Open: %v; the directory: %v", err, serr)
				}
				if left, _ := filepath.Glob(filepath.Join(tt.dir, ".usbflash-*")); len(left) > 0 {
					t.Errorf("Open left %v", left)
				}
				if l == nil {
					t.Fatal("no Logs")
				}
				return
			}
			if failure.Of(err) != failure.Usage {
				t.Fatalf("%v, want a usage error", err)
			}
			factsonly.Check(t, err.Error())
		})
	}
}
