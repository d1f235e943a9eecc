package main

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"testing"

	"github.com/usbflash/usbflash/blockdev"
	"github.com/usbflash/usbflash/cardbench"
	"github.com/usbflash/usbflash/drive"
	"github.com/usbflash/usbflash/filedev"
	"github.com/usbflash/usbflash/region"
)

// benchCard is a 32 MiB card file full of a pattern, so any write shows.
func benchCard(t *testing.T) string {
	t.Helper()
	return writeFile(t, "card.img", testImage(32<<20))
}

// fast keeps every measurement short: the tests check what bench does,
// not how fast the machine is.
var fast = []string{"--time", "20ms", "--random-time", "20ms"}

func benchArgs(args ...string) []string { return append(append([]string{"bench"}, fast...), args...) }

func TestBenchReadOnlyLeavesCardUnchanged(t *testing.T) {
	t.Parallel()
	card := benchCard(t)
	before := fileHash(t, card)
	r := runCLI(t, benchArgs("--json", "--sizes", "4KiB,64KiB,1MiB", "sim:"+card+"?speed=200MB/s&latency=100us")...)
	if r.code != exitOK {
		t.Fatalf("exit %d\n%s", r.code, r.stderr)
	}
	if fileHash(t, card) != before {
		t.Error("a read-only bench changed the card")
	}
	points := 0
	for _, e := range jsonEvents(t, r.stdout) {
		if e["event"] == "point" {
			points++
		}
	}
	if points != 9 { // 3 sizes in 3 regions
		t.Errorf("%d point events, want 9", points)
	}
	s := lastEvent(t, r.stdout, "summary")
	for _, key := range []string{"series", "points", "alignment", "random", "round_trip", "recommended_transfer_size"} {
		if _, ok := s[key]; !ok {
			t.Errorf("summary has no %q: %v", key, s)
		}
	}
	if rec, _ := s["recommended_transfer_size"].(float64); rec != 4<<10 && rec != 64<<10 && rec != 1<<20 {
		t.Errorf("recommended %v, not one of the sizes measured", s["recommended_transfer_size"])
	}
}

func TestBenchTextShowsTableChartAndAdvice(t *testing.T) {
	t.Parallel()
	card := benchCard(t)
	r := runCLI(t, benchArgs("--sizes", "4KiB,1MiB", "sim:"+card)...)
	if r.code != exitOK {
		t.Fatalf("exit %d\n%s", r.code, r.stderr)
	}
	for _, want := range []string{"MB/s by transfer size", "█", "a full bar is", "Alignment:", "Erase unit:",
		"Random 4 KiB reads:", "TEST UNIT READY round trip:", "Recommended --transfer-size"} {
		if !strings.Contains(r.stdout, want) {
			t.Errorf("output lacks %q:\n%s", want, r.stdout)
		}
	}
}

// -q prints the one line a quiet user wants: the recommendation.
func TestBenchQuietRecommends(t *testing.T) {
	t.Parallel()
	card := benchCard(t)
	r := runCLI(t, benchArgs("-q", "--sizes", "4KiB,1MiB", "--skip", "align,random,roundtrip", "sim:"+card)...)
	if r.code != exitOK || !regexp.MustCompile(`^Recommended --transfer-size (4 KiB|1 MiB): [^\n]*\n$`).MatchString(r.stdout) || r.stderr != "" {
		t.Errorf("exit %d, stdout %q, stderr %q; want the recommendation alone", r.code, r.stdout, r.stderr)
	}
}

// regionHashes hashes a card file before, inside and after [off, off+n).
func regionHashes(t *testing.T, card string, off, n int64) [3]string {
	t.Helper()
	b, err := os.ReadFile(card)
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	var out [3]string
	for i, part := range [][]byte{b[:off], b[off : off+n], b[off+n:]} {
		p := filepath.Join(dir, "part")
		if err := os.WriteFile(p, part, 0o644); err != nil {
			t.Fatal(err)
		}
		out[i] = fileHash(t, p)
	}
	return out
}

func TestBenchWriteTouchesOnlyTheRegion(t *testing.T) {
	t.Parallel()
	card := benchCard(t)
	const off, n = 12 << 20, 4 << 20
	before := regionHashes(t, card, off, n)
	r := runCLI(t, benchArgs("--write", "--yes", "--region", "12MiB:4MiB", "--sizes", "4KiB,1MiB", "sim:"+card)...)
	if r.code != exitOK {
		t.Fatalf("exit %d\n%s", r.code, r.stderr)
	}
	after := regionHashes(t, card, off, n)
	if after[0] != before[0] || after[2] != before[2] {
		t.Error("bench --write changed the card outside its region")
	}
	if after[1] == before[1] {
		t.Error("bench --write did not write its region")
	}
	if !strings.Contains(r.stdout, "direct write") || !strings.Contains(r.stdout, "Random 4 KiB writes") {
		t.Errorf("output lacks the write results:\n%s", r.stdout)
	}
}

func TestBenchPreserveRestores(t *testing.T) {
	t.Parallel()
	card := benchCard(t)
	before := fileHash(t, card)
	r := runCLI(t, benchArgs("--write", "--preserve", "--yes", "--json", "--region", "4MiB:8MiB", "--sizes", "64KiB,1MiB", "sim:"+card)...)
	if r.code != exitOK {
		t.Fatalf("exit %d\n%s", r.code, r.stderr)
	}
	if fileHash(t, card) != before {
		t.Error("bench --write --preserve left the card changed")
	}
	if e := lastEvent(t, r.stdout, "restored"); e["verified"] != true {
		t.Errorf("restored event %v", e)
	}
}

// cancelInPhase cancels the run at the first progress event of a phase.
type cancelInPhase struct {
	mu     sync.Mutex
	phase  string
	cancel context.CancelFunc
	seen   bool
}

func (c *cancelInPhase) Write(p []byte) (int, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if !c.seen && bytes.Contains(p, []byte(`"event":"progress"`)) && bytes.Contains(p, []byte(`"phase":"`+c.phase+`"`)) {
		c.seen = true
		c.cancel()
	}
	return len(p), nil
}

func TestBenchPreserveRestoresWhenCancelled(t *testing.T) {
	t.Parallel()
	for _, phase := range []string{"write sweep", "random write", "restore"} {
		t.Run(phase, func(t *testing.T) {
			card := benchCard(t)
			before := fileHash(t, card)
			ctx, cancel := context.WithCancel(context.Background())
			defer cancel()
			args := []string{"bench", "--write", "--preserve", "--yes", "--json", "--region", "4MiB:8MiB", "--sizes", "64KiB,1MiB",
				"--time", "50ms", "--random-time", "500ms", "sim:" + card + "?speed=40MB/s"}
			r := runCLIContext(t, ctx, &cancelInPhase{phase: phase, cancel: cancel}, args...)
			if r.code != exitCancelled {
				t.Fatalf("exit %d, want %d\n%s\n%s", r.code, exitCancelled, r.stdout, r.stderr)
			}
			if fileHash(t, card) != before {
				t.Error("a cancelled bench --preserve left the card changed")
			}
			lastEvent(t, r.stdout, "restored")
			if e := lastEvent(t, r.stdout, "error"); !strings.Contains(e["message"].(string), "restored and verified") {
				t.Errorf("error event %v does not say the region was restored", e)
			}
		})
	}
}

func TestBenchCancelledReadSaysNothingWasWritten(t *testing.T) {
	t.Parallel()
	card := benchCard(t)
	before := fileHash(t, card)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	r := runCLIContext(t, ctx, &cancelInPhase{phase: "read sweep", cancel: cancel}, "bench", "--json", "--sizes", "64KiB,1MiB", "--time", "1s", "sim:"+card+"?speed=20MB/s")
	if r.code != exitCancelled {
		t.Fatalf("exit %d, want %d\n%s", r.code, exitCancelled, r.stderr)
	}
	if e := lastEvent(t, r.stdout, "error"); !strings.Contains(e["message"].(string), "cancelled (nothing was written)") {
		t.Errorf("error event %v", e)
	}
	if fileHash(t, card) != before {
		t.Error("a cancelled read-only bench changed the card")
	}
}

func TestBenchRefusesAndRejects(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name string
		args []string
		spec string
		want int
	}{
		{"write needs a region", []string{"--write", "--yes"}, "", exitUsage},
		{"preserve needs write", []string{"--preserve"}, "", exitUsage},
		{"region past the card", []string{"--write", "--yes", "--region", "30MiB:4MiB"}, "", exitUsage},
		{"region not in blocks", []string{"--write", "--yes", "--region", "100:4MiB"}, "", exitUsage},
		{"size not in blocks", []string{"--sizes", "1000"}, "", exitUsage},
		{"size past the card", []string{"--sizes", "64KiB,64MiB"}, "", exitUsage},
		{"size past the region", []string{"--write", "--yes", "--region", "4MiB:1MiB", "--sizes", "2MiB"}, "", exitUsage},
		{"plot format", []string{"--plot", "x.pdf"}, "", exitUsage},
		{"plot in a missing directory", []string{"--plot", "/nonexistent/bench.svg"}, "", exitUsage},
		{"skip what", []string{"--skip", "sweep"}, "", exitUsage},
		{"compare without a kernel disk", []string{"--compare"}, "", exitUsage},
		{"compare syntax", []string{"--compare=/dev/sdb"}, "", exitUsage},
		{"compare with a missing file", []string{"--compare=file:/nonexistent.img"}, "", exitUsage},
		{"compare and two targets", []string{"--compare", "sim:other.img"}, "", exitUsage},
		{"two targets", []string{"file:other.img"}, "", exitUsage},
		{"write not confirmed", []string{"--write", "--region", "4MiB:4MiB"}, "", exitRefused},
		{"write-protected card", []string{"--write", "--yes", "--region", "4MiB:4MiB"}, "?wp=1", exitRefused},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			card := benchCard(t)
			before := fileHash(t, card)
			r := runCLI(t, append(benchArgs(tt.args...), "sim:"+card+tt.spec)...)
			if r.code != tt.want {
				t.Errorf("exit %d, want %d\n%s", r.code, tt.want, r.stderr)
			}
			if fileHash(t, card) != before {
				t.Error("the card changed")
			}
		})
	}
}

// What no card could run is refused before anything is opened: the
// target here would fail otherwise.
func TestBenchRefusesBeforeOpening(t *testing.T) {
	t.Parallel()
	for _, tt := range []struct {
		name string
		args []string
		msg  string
	}{
		{"a size past the memory bound", []string{"--sizes", "64KiB,64GiB"}, "--sizes: transfer size 64 GiB is more than the 1 GiB one transfer may hold in memory"},
		{"a preserved region past the memory bound", []string{"--write", "--preserve", "--yes", "--region", "0:600MiB"}, "a region of 600 MiB cannot be preserved"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			r := runCLI(t, benchArgs(append(tt.args, "usb:ffff:fffe")...)...)
			if r.code != exitUsage || !strings.Contains(r.stderr, tt.msg) {
				t.Errorf("exit %d, want %d saying %q\n%s", r.code, exitUsage, tt.msg, r.stderr)
			}
		})
	}
	// A size the card cannot hold names the card's size.
	card := benchCard(t)
	if r := runCLI(t, benchArgs("--sizes", "64MiB", "sim:"+card)...); r.code != exitUsage || !strings.Contains(r.stderr, "which holds 32 MiB") {
		t.Errorf("exit %d, want %d naming the card's 32 MiB\n%s", r.code, exitUsage, r.stderr)
	}
}

func TestBenchCompareWithAFile(t *testing.T) {
	t.Parallel()
	card := benchCard(t)
	before := fileHash(t, card)
	for _, args := range [][]string{
		{"--compare=file:" + card, "sim:" + card},
		{"--compare", "file:" + card, "sim:" + card}, // with a space
		{"sim:" + card, "--compare", "file:" + card},
	} {
		r := runCLI(t, benchArgs(append([]string{"--sizes", "64KiB,1MiB", "--skip", "align,random,roundtrip"}, args...)...)...)
		if r.code != exitOK {
			t.Fatalf("%q: exit %d\n%s", args, r.code, r.stderr)
		}
		for _, want := range []string{"kernel O_DIRECT", "kernel buffered", "against the kernel", "Measuring sim:"} {
			if !strings.Contains(r.stdout, want) {
				t.Errorf("%q: output lacks %q:\n%s", args, want, r.stdout)
			}
		}
	}
	if fileHash(t, card) != before {
		t.Error("--compare changed the card")
	}
}

// With --compare, start still comes first (before the kernel's points),
// and a kernel disk of another size than the target is noted.
func TestBenchCompareEvents(t *testing.T) {
	t.Parallel()
	card := benchCard(t)
	other := writeFile(t, "other.img", testImage(16<<20))
	for _, tt := range []struct {
		compare  string
		capacity float64
		note     bool
	}{
		{card, 32 << 20, false},
		{other, 16 << 20, true},
	} {
		r := runCLI(t, benchArgs("--json", "--sizes", "64KiB,1MiB", "--skip", "align,random,roundtrip", "--compare=file:"+tt.compare, "sim:"+card)...)
		if r.code != exitOK {
			t.Fatalf("exit %d\n%s", r.code, r.stderr)
		}
		events := jsonEvents(t, r.stdout)
		if e := events[0]; e["event"] != "start" || e["compare"] != "file:"+tt.compare || e["capacity"] != tt.capacity || e["target"] != "sim:"+card {
			t.Errorf("first event %v, want start naming the compared disk", e)
		}
		noted := false
		for i, e := range events {
			if e["event"] == "start" && i > 0 {
				t.Errorf("a second start: %v", e)
			}
			if e["event"] == "note" && strings.Contains(e["message"].(string), "the kernel paths read another medium") {
				noted = strings.Contains(e["message"].(string), "holds 32 MiB in 512-byte blocks, the compared file:"+other+" 16 MiB")
			}
		}
		if noted != tt.note {
			t.Errorf("compare %s: noted %v, want %v\n%s", tt.compare, noted, tt.note, r.stdout)
		}
	}
}

func TestBenchPlot(t *testing.T) {
	t.Parallel()
	for _, tt := range []struct{ ext, magic string }{{".svg", "<?xml"}, {".png", "\x89PNG"}} {
		t.Run(tt.ext, func(t *testing.T) {
			card := benchCard(t)
			plot := filepath.Join(t.TempDir(), "bench"+tt.ext)
			r := runCLI(t, benchArgs("--quiet", "--plot", plot, "--sizes", "4KiB,64KiB", "sim:"+card)...)
			if r.code != exitOK {
				t.Fatalf("exit %d\n%s", r.code, r.stderr)
			}
			b, err := os.ReadFile(plot)
			if err != nil || !bytes.HasPrefix(b, []byte(tt.magic)) {
				t.Errorf("plot %s: %v, starts %q", plot, err, b[:min(len(b), 8)])
			}
		})
	}
}

// A plot that cannot be saved is refused before the run, naming it; one
// that cannot be saved after the run (its directory went away meanwhile)
// is an error with its exit code, also with -q, after the results.
func TestBenchPlotFailures(t *testing.T) {
	t.Parallel()
	card := benchCard(t)
	missing := filepath.Join(t.TempDir(), "missing", "bench.svg")
	r := runCLI(t, benchArgs("-q", "--plot", missing, "sim:"+card)...)
	if r.code != exitUsage || !strings.Contains(r.stderr, "--plot: cannot create "+missing+": no such file or directory") || strings.Contains(r.stderr, ".bench.svg.") {
		t.Errorf("exit %d, want %d naming the plot\n%s", r.code, exitUsage, r.stderr)
	}

	for _, quiet := range []string{"-q", "--json"} {
		dir := filepath.Join(t.TempDir(), "plots")
		os.Mkdir(dir, 0o755)
		plot := filepath.Join(dir, "bench.svg")
		var out, errOut bytes.Buffer
		// The question comes after the checks: the directory goes away
		// while the user answers.
		answer := readFunc(func(p []byte) (int, error) {
			os.RemoveAll(dir)
			return copy(p, "y\n"), io.EOF
		})
		a := &app{stdin: answer, stdout: &out, stderr: &errOut, interactive: true}
		code := runApp(context.Background(), a, benchArgs(quiet, "--write", "--preserve", "--skip", "align,random,roundtrip",
			"--sizes", "1MiB", "--region", "4MiB:4MiB", "--plot", plot, "sim:"+card))
		if code != exitDevice {
			t.Errorf("%s: exit %d, want %d\n%s", quiet, code, exitDevice, errOut.String())
		}
		msg := errOut.String()
		if quiet == "--json" {
			msg = lastEvent(t, out.String(), "error")["message"].(string)
			if s := lastEvent(t, out.String(), "summary"); s["plot"] != nil {
				t.Errorf("the summary names a plot that was not saved: %v", s["plot"])
			}
		}
		if !strings.Contains(msg, "--plot: writing "+plot+": no such file or directory") {
			t.Errorf("%s: %q does not say the plot was not written", quiet, msg)
		}
	}
}

type readFunc func([]byte) (int, error)

func (f readFunc) Read(p []byte) (int, error) { return f(p) }

func TestBenchWriteAsksAtATerminal(t *testing.T) {
	t.Parallel()
	for _, tt := range []struct {
		answer string
		want   int
	}{{"n\n", exitRefused}, {"", exitRefused}, {"y\n", exitOK}} {
		card := benchCard(t)
		before := regionHashes(t, card, 4<<20, 4<<20)
		var out, errOut bytes.Buffer
		a := &app{stdin: strings.NewReader(tt.answer), stdout: &out, stderr: &errOut, interactive: true}
		code := runApp(context.Background(), a, benchArgs("--quiet", "--write", "--preserve", "--skip", "align,random,roundtrip",
			"--sizes", "1MiB", "--region", "4MiB:4MiB", "sim:"+card+"?serial=CARD43"))
		if code != tt.want {
			t.Errorf("answer %q: exit %d, want %d (%s)", tt.answer, code, tt.want, errOut.String())
		}
		// The question names the card and the region at stake.
		if q := errOut.String(); !strings.Contains(q, "CARD43") || !strings.Contains(q, "bytes 4194304 to 8388608") || !strings.Contains(q, "4.19 MB") {
			t.Errorf("question %q does not name the card and the region", q)
		}
		if regionHashes(t, card, 4<<20, 4<<20) != before {
			t.Errorf("answer %q: the card changed (--preserve restores it; a refusal writes nothing)", tt.answer)
		}
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
			want := testImage(32 << 20)
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
			printError(&out, err)
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

// Without --write, bench opens the target read-only: it shares the card
// with another reader (a verify holds a shared lock) and creates no card
// file; --write takes the card for itself.
func TestBenchWithoutWriteOpensReadOnly(t *testing.T) {
	t.Parallel()
	card := benchCard(t)
	held, err := filedev.Open(card, filedev.Options{ReadOnly: true})
	if err != nil {
		t.Fatal(err)
	}
	defer held.Close()
	missing := filepath.Join(t.TempDir(), "missing.img")
	quick := []string{"--skip", "align,random,roundtrip", "--sizes", "64KiB"}
	tests := []struct {
		name string
		args []string
		want int
	}{
		{"read beside a reader", append(quick, "sim:"+card), exitOK},
		{"file: read beside a reader", append(quick, "file:"+card), exitOK},
		{"write waits its turn", append(quick, "--write", "--yes", "--region", "4MiB:4MiB", "sim:"+card), exitRefused},
		{"a missing card is not made", append(quick, "sim:"+missing), exitUsage},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			before := fileHash(t, card)
			r := runCLI(t, benchArgs(tt.args...)...)
			if r.code != tt.want {
				t.Errorf("exit %d, want %d\n%s", r.code, tt.want, r.stderr)
			}
			if fileHash(t, card) != before {
				t.Error("the card changed")
			}
			if _, err := os.Stat(missing); err == nil {
				t.Errorf("bench created %s", missing)
			}
		})
	}
}
