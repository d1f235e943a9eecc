package main

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/usbflash/usbflash/internal/drive"
	"github.com/usbflash/usbflash/internal/probe/cardbench"
	"github.com/usbflash/usbflash/internal/probe/region"
	"github.com/usbflash/usbflash/internal/ui/termui"
	"github.com/usbflash/usbflash/pipeline/blockdev"
)

// benchPattern is what a bench card holds: made once, as every test's
// card holds the same.
var benchPattern = sync.OnceValue(func() []byte { return testImage(16 << 20) })

// benchCard is a 16 MiB card file full of a pattern, so any write shows.
func benchCard(t *testing.T) string {
	t.Helper()
	return writeFile(t, "card.img", benchPattern())
}

// fast keeps every measurement short: the tests check what bench does,
// not how fast the machine is.
var fast = []string{"--time", "20ms", "--random-time", "20ms"}

func benchArgs(args ...string) []string { return append(append([]string{"bench"}, fast...), args...) }

// TestBench: what bench prints, for a person and as JSON, the file
// --plot saves (and one it cannot save after the run), and what it
// refuses once the card is open (its flags' refusals are TestFlags'); what
// a run measures and leaves on the card is cardbench's (TestRun).
func TestBench(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name  string
		args  []string
		spec  string // after sim:CARD
		stdin string // a terminal's answer; "": no terminal
		want  int
		// out and errOut must hold these; json: stdout's events, checked.
		out, errOut []string
		json        func(t *testing.T, events []map[string]any)
		changes     bool // the card may change (its region, restored or not)
	}{
		{name: "text: table, chart, alignment, random, round trip and advice", args: []string{"--sizes", "4KiB,1MiB"},
			out: []string{"MB/s by transfer size", "█", "a full bar is", "Alignment:", "Erase unit:",
				"Random 4 KiB reads:", "TEST UNIT READY round trip:", "Recommended --transfer-size"}},
		{name: "quiet: the recommendation alone", args: []string{"-q", "--sizes", "4KiB,1MiB", "--skip", "align,random,roundtrip"},
			out: []string{"Recommended --transfer-size "}},
		{name: "json: start, points, summary", args: []string{"--json", "--sizes", "4KiB,64KiB,1MiB"},
			json: func(t *testing.T, events []map[string]any) {
				points := 0
				for _, e := range events {
					if e["event"] == "point" {
						points++
					}
				}
				s := events[len(events)-1]
				if events[0]["event"] != "start" || points != 9 || s["event"] != "summary" {
					t.Errorf("%d points between %v and %v; want 9 (3 sizes in 3 regions) between start and summary", points, events[0]["event"], s["event"])
				}
				for _, key := range []string{"series", "points", "alignment", "random", "round_trip", "recommended_transfer_size"} {
					if _, ok := s[key]; !ok {
						t.Errorf("summary has no %q", key)
					}
				}
			}},
		{name: "json: a preserved region restored", args: []string{"--json", "--write", "--preserve", "--yes", "--region", "4MiB:8MiB", "--sizes", "1MiB", "--skip", "align,random,roundtrip"},
			json: func(t *testing.T, events []map[string]any) {
				for _, e := range events {
					if e["event"] == "restored" && e["verified"] == true && e["offset"] == float64(4<<20) {
						return
					}
				}
				t.Error("no restored event")
			}},
		{name: "compare, written with a space", args: []string{"--sizes", "64KiB,1MiB", "--skip", "align,random,roundtrip", "--compare", "file:CARD"},
			out: []string{"kernel O_DIRECT", "kernel buffered", "against the kernel", "Measuring sim:"}},
		{name: "json: compare starts with the kernel's disk", args: []string{"--json", "--sizes", "64KiB", "--skip", "align,random,roundtrip", "--compare=file:CARD"},
			json: func(t *testing.T, events []map[string]any) {
				if e := events[0]; e["event"] != "start" || !strings.HasPrefix(e["compare"].(string), "file:") || !strings.HasPrefix(e["target"].(string), "sim:") {
					t.Errorf("first event %v, want start naming the compared disk", e)
				}
			}},
		{name: "asks at a terminal, naming the card and the region", args: []string{"-q", "--write", "--preserve", "--region", "4MiB:4MiB", "--sizes", "1MiB", "--skip", "align,random,roundtrip"},
			spec: "?serial=CARD43", stdin: "y\n", errOut: []string{"CARD43", "bytes 4194304 to 8388608", "4.19 MB"}},
		{name: "not confirmed at a terminal", args: []string{"--write", "--region", "4MiB:4MiB"}, stdin: "n\n", want: exitRefused},
		{name: "no terminal to confirm", args: []string{"--write", "--region", "4MiB:4MiB"}, want: exitRefused},
		{name: "write-protected", args: []string{"--write", "--yes", "--region", "4MiB:4MiB"}, spec: "?wp=1", want: exitRefused},
		{name: "region past the card", args: []string{"--write", "--yes", "--region", "14MiB:4MiB"}, want: exitUsage, errOut: []string{"--region: "}},
		{name: "region not in blocks", args: []string{"--write", "--yes", "--region", "100:4MiB"}, want: exitUsage},
		{name: "size not in blocks", args: []string{"--sizes", "1000"}, want: exitUsage},
		{name: "size past the card", args: []string{"--sizes", "64MiB"}, want: exitUsage, errOut: []string{"which holds 16 MiB"}},
		{name: "size past the region", args: []string{"--write", "--yes", "--region", "4MiB:1MiB", "--sizes", "2MiB"}, want: exitUsage},
		{name: "compare without a kernel disk", args: []string{"--compare"}, want: exitUsage},
		{name: "compare with a missing file", args: []string{"--compare=file:/nonexistent.img"}, want: exitUsage, errOut: []string{"--compare: "}},
		{name: "a missing card is not made", spec: ".missing", want: exitUsage},
	}
	t.Run("plot saved", func(t *testing.T) {
		t.Parallel()
		testBenchPlot(t)
	})
	t.Run("plot not saved after the run", func(t *testing.T) {
		t.Parallel()
		testBenchPlotLost(t)
	})
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			card := benchCard(t)
			args := benchArgs(tt.args...)
			for i, a := range args {
				args[i] = strings.ReplaceAll(a, "file:CARD", "file:"+card)
			}
			args = append(args, "sim:"+card+tt.spec)
			var out, errOut bytes.Buffer
			a := &app{stdin: strings.NewReader(tt.stdin), stdout: &out, stderr: &errOut, interactive: tt.stdin != ""}
			if code := runApp(context.Background(), a, args); code != tt.want {
				t.Fatalf("exit %d, want %d\n%s", code, tt.want, errOut.String())
			}
			for _, want := range tt.out {
				if !strings.Contains(out.String(), want) {
					t.Errorf("stdout lacks %q:\n%s", want, out.String())
				}
			}
			for _, want := range tt.errOut {
				if !strings.Contains(errOut.String(), want) {
					t.Errorf("stderr lacks %q:\n%s", want, errOut.String())
				}
			}
			if tt.json != nil {
				tt.json(t, jsonEvents(t, out.String()))
			}
			if tt.name == "quiet: the recommendation alone" && (strings.Count(out.String(), "\n") != 1 || errOut.Len() != 0) {
				t.Errorf("stdout %q, stderr %q: want the one line", out.String(), errOut.String())
			}
			if got, _ := os.ReadFile(card); !tt.changes && !bytes.Equal(got, benchPattern()) {
				t.Error("the card changed")
			}
			if _, err := os.Stat(card + ".missing"); err == nil {
				t.Error("bench created a card file")
			}
		})
	}
}

// failingWrites is a device whose writes fail, as a card that died
// during a write test would.
type failingWrites struct{ blockdev.Device }

func (failingWrites) WriteBlocks(_ context.Context, lba int64, _ []byte) error {
	return fmt.Errorf("WRITE at LBA %d: medium error", lba)
}

// A restore that fails, or that a second Ctrl-C aborts, leaves the saved
// bytes in a file and says so once (exit 5, or 130 when aborted), and the
// last line printed is a command that puts them back, pasted as it is into
// a shell, also when the paths hold a space.
func TestBenchRestoreFailureKeepsTheBytes(t *testing.T) {
	t.Parallel()
	for _, tt := range []struct {
		name   string
		runErr error // what the write tests returned
		abort  bool  // a second Ctrl-C during the restore
		want   int
	}{
		{"the restore fails", nil, false, exitDevice},
		{"the restore fails after a cancel", context.Canceled, false, exitDevice},
		{"the restore is aborted", context.Canceled, true, exitCancelled},
	} {
		t.Run(tt.name, func(t *testing.T) {
			dir := filepath.Join(t.TempDir(), "my cards")
			if err := os.Mkdir(dir, 0o755); err != nil {
				t.Fatal(err)
			}
			card := filepath.Join(dir, "card.img")
			want := testImage(4 << 20)
			if err := os.WriteFile(card, want, 0o644); err != nil {
				t.Fatal(err)
			}
			spec, err := drive.Parse("sim:" + card)
			if err != nil {
				t.Fatal(err)
			}
			d, err := drive.Open(context.Background(), spec, drive.Options{})
			if err != nil {
				t.Fatal(err)
			}
			stated := cardbench.Region{Name: "region", Offset: 1 << 20, Length: 1 << 20}
			saved, err := region.Save(context.Background(), d.Dev, d.Name, stated)
			if err != nil {
				t.Fatal(err)
			}
			saved.Disk, saved.Claimed = d.Node() // as bench saves it
			// What the write tests left.
			if err := d.Dev.WriteBlocks(context.Background(), 2048, make([]byte, 1<<20)); err != nil {
				t.Fatal(err)
			}
			if tt.abort {
				err = saved.Abandon(dir)
			} else {
				err = saved.Finish(context.Background(), failingWrites{d.Dev}, tt.runErr, region.FinishOptions{Dir: dir})
			}
			d.Close()
			if code := exitCode(err); code != tt.want {
				t.Fatalf("restore = %v (exit %d), want %d", err, code, tt.want)
			}
			var out bytes.Buffer
			termui.PrintError(&out, newErrorEvent(err, exitCode(err)))
			lines := strings.Split(strings.TrimSuffix(out.String(), "\n"), "\n")
			paste := strings.TrimSpace(lines[len(lines)-1])
			if len(lines) != 3 || !strings.HasPrefix(paste, "dd if=") || !strings.Contains(lines[0], "the saved bytes are in "+dir) {
				t.Fatalf("printed %q: want the facts, the advice, and the command on a line of its own", out.String())
			}
			if out, err := exec.Command("sh", "-c", paste).CombinedOutput(); err != nil {
				t.Fatalf("%s: %v\n%s", paste, err, out)
			}
			if got, _ := os.ReadFile(card); !bytes.Equal(got, want) {
				t.Errorf("%s does not bring the card back", paste)
			}
		})
	}
}
