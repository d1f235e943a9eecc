package main

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"io"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/usbflash/usbflash/internal/drive"
	"github.com/usbflash/usbflash/internal/ui/report"
)

// The safety promises of README, each held on every path that writes, reads or
// measures a card: one target, several, one with --report, --watch, and
// read and bench --write where a promise applies to them. Every path runs
// through the same packages (target opens and checks, flash writes), so a
// promise kept by one and broken by another is a bug this table finds.

// promiseEnv is one test's image and cards.
type promiseEnv struct {
	t     *testing.T
	dir   string
	image string
	img   []byte   // the image's bytes, when it is raw
	cards []string // sim: targets, without the prefix: path?options
}

// path is card i's backing file.
func (e *promiseEnv) path(i int) string {
	p, _, _ := strings.Cut(e.cards[i], "?")
	return p
}

// holds says whether card i starts with the image's first transfer: a
// card that does would boot.
func (e *promiseEnv) holds(i int) bool {
	b, err := os.ReadFile(e.path(i))
	n := min(len(e.img), 1<<20)
	return err == nil && len(b) >= n && n > 0 && bytes.Equal(b[:n], e.img[:n])
}

// mode is one way of running usbflash over cards.
type mode struct {
	name  string
	cards int // how many of the env's cards it uses
	args  func(e *promiseEnv) []string
	watch bool
}

var promiseModes = []mode{
	{name: "one", cards: 1, args: func(e *promiseEnv) []string { return []string{"write", e.image, "sim:" + e.cards[0], "--yes"} }},
	{name: "many", cards: 2, args: func(e *promiseEnv) []string {
		return []string{"write", e.image, "sim:" + e.cards[0], "sim:" + e.cards[1], "--yes"}
	}},
	{name: "report", cards: 1, args: func(e *promiseEnv) []string {
		return []string{"write", e.image, "sim:" + e.cards[0], "--yes", "--report", filepath.Join(e.dir, "run.json")}
	}},
	{name: "watch", cards: 2, watch: true, args: func(e *promiseEnv) []string {
		return []string{"write", e.image, "--watch", "--yes", "--report", filepath.Join(e.dir, "watch.json")}
	}},
	{name: "read", cards: 1, args: func(e *promiseEnv) []string {
		return []string{"read", "sim:" + e.cards[0], filepath.Join(e.dir, "backup.img"), "--verify"}
	}},
	{name: "bench-write", cards: 1, args: func(e *promiseEnv) []string {
		return []string{"bench", "sim:" + e.cards[0], "--write", "--region", "1MiB:1MiB", "--sizes", "64KiB",
			"--time", "1ms", "--random-time", "1ms", "--skip", "align,random,roundtrip", "--yes"}
	}},
}

// runMode runs m over e's cards. With --watch the readers are simulated
// and the watch ends once every card is recorded in the report (or the
// run ends on its own).
func runMode(e *promiseEnv, m mode, ctx context.Context, stdout io.Writer, lineEvery time.Duration, extra ...string) result {
	e.t.Helper()
	var out, errOut bytes.Buffer
	var w io.Writer = &out
	if stdout != nil {
		w = io.MultiWriter(&out, stdout)
	}
	a := &app{stdin: strings.NewReader(""), stdout: w, stderr: &errOut, lineEvery: lineEvery}
	args := append(m.args(e), extra...)
	if m.name == "read" || m.name == "bench-write" {
		// They read a card that exists: a blank one of its size.
		if _, err := os.Stat(e.path(0)); err != nil {
			size := int64(8 << 20)
			if strings.Contains(e.cards[0], "size=4MiB") {
				size = 4 << 20
			}
			if err := os.WriteFile(e.path(0), nil, 0o644); err != nil || os.Truncate(e.path(0), size) != nil {
				e.t.Fatal("cannot make the card")
			}
		}
	}
	if !m.watch {
		return result{runApp(ctx, a, args), out.String(), errOut.String()}
	}
	var readers []drive.Found
	for _, c := range e.cards[:m.cards] {
		readers = append(readers, drive.SimReader(c))
	}
	a.watchFinder = func(context.Context) ([]drive.Found, error) { return readers, nil }
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	done := make(chan struct{})
	go func() {
		// A person presses Ctrl-C once every card came out.
		deadline := time.After(20 * time.Second)
		for {
			select {
			case <-done:
				return
			case <-deadline:
				cancel()
				return
			case <-time.After(5 * time.Millisecond):
			}
			var rep report.JSON
			if b, err := os.ReadFile(filepath.Join(e.dir, "watch.json")); err == nil && json.Unmarshal(b, &rep) == nil && len(rep.Cards) >= m.cards {
				cancel()
				return
			}
		}
	}()
	code := runApp(ctx, a, args)
	close(done)
	return result{code, out.String(), errOut.String()}
}

// promise is one row of the table: how to set the cards up, the exit code
// each mode must give (absent: the promise does not apply), and what else
// must hold.
type promise struct {
	name  string
	setup func(e *promiseEnv)
	want  map[string]int
	extra []string
	// json runs with --json; lines runs without a terminal, printing
	// progress at every report instead of every 5 s.
	json, lines bool
	// cancel presses Ctrl-C at the first progress event.
	cancel bool
	check  func(t *testing.T, e *promiseEnv, m mode, r result)
}

// rawImage writes a raw image of n bytes.
func rawImage(e *promiseEnv, n int) {
	e.img = testImage(n)
	e.image = filepath.Join(e.dir, "os.img")
	if err := os.WriteFile(e.image, e.img, 0o644); err != nil {
		e.t.Fatal(err)
	}
}

// simCards sets two cards up with the given options each.
func simCards(e *promiseEnv, opts ...string) {
	e.cards = nil
	for i, o := range opts {
		e.cards = append(e.cards, filepath.Join(e.dir, string(rune('a'+i))+".img")+"?"+o)
	}
}

// untouched: no card holds the image.
func untouched(t *testing.T, e *promiseEnv, m mode, r result) {
	for i := range m.cards {
		if e.holds(i) {
			t.Errorf("card %d holds the image after a refusal", i)
		}
	}
}

func TestPromisesOnEveryPath(t *testing.T) {
	t.Parallel()
	writes := map[string]int{"one": exitRefused, "many": exitRefused, "report": exitRefused, "watch": exitRefused}
	with := func(base map[string]int, more map[string]int) map[string]int {
		out := map[string]int{}
		for k, v := range base {
			out[k] = v
		}
		for k, v := range more {
			out[k] = v
		}
		return out
	}
	promises := []promise{
		{
			name: "an image too small to be an OS image is refused",
			setup: func(e *promiseEnv) {
				e.image = writeFile(e.t, "page.img", []byte("<html><body>404 Not Found</body></html>"))
				e.img = []byte("<html>")
				simCards(e, "size=4MiB", "size=4MiB")
			},
			want: writes, check: untouched,
		},
		{
			name:  "a write-protected card is refused",
			setup: func(e *promiseEnv) { rawImage(e, 2<<20+99); simCards(e, "size=4MiB&wp=1", "size=4MiB&wp=1") },
			want:  with(writes, map[string]int{"bench-write": exitRefused}), check: untouched,
		},
		{
			name:  "an image larger than the card is refused",
			setup: func(e *promiseEnv) { rawImage(e, 3<<20); simCards(e, "size=2MiB", "size=2MiB") },
			want:  writes, check: untouched,
		},
		{
			name: "a card another usbflash holds is refused",
			setup: func(e *promiseEnv) {
				rawImage(e, 2<<20+99)
				simCards(e, "size=4MiB", "size=4MiB")
				for i := range e.cards {
					spec, _ := drive.Parse("sim:" + e.cards[i])
					d, err := drive.Open(context.Background(), spec, drive.Options{})
					if err != nil {
						e.t.Fatal(err)
					}
					e.t.Cleanup(func() { d.Close() })
				}
			},
			want: with(writes, map[string]int{"read": exitRefused, "bench-write": exitRefused}), check: untouched,
		},
		{
			name: "the image itself is refused as a target",
			setup: func(e *promiseEnv) {
				rawImage(e, 2<<20+99)
				e.cards = []string{e.image, filepath.Join(e.dir, "b.img") + "?size=4MiB"}
			},
			// --watch refuses the reader whose card is the image and
			// writes the other.
			want: with(writes, map[string]int{"watch": exitPartial}),
			check: func(t *testing.T, e *promiseEnv, m mode, r result) {
				if got, _ := os.ReadFile(e.image); !bytes.Equal(got, e.img) {
					t.Error("the image was overwritten")
				}
			},
		},
		{
			name: "the start comes before the first command, also to a reader that fails",
			setup: func(e *promiseEnv) {
				rawImage(e, 2<<20+99)
				simCards(e, "size=4MiB&fault=disconnect", "size=4MiB&fault=disconnect")
			},
			want: map[string]int{"one": exitDevice, "many": exitDevice, "report": exitDevice, "watch": exitDevice, "read": exitDevice},
			json: true,
			check: func(t *testing.T, e *promiseEnv, m mode, r result) {
				evs := jsonEvents(t, r.stdout)
				if len(evs) == 0 || evs[0]["event"] != "start" {
					t.Errorf("first event %v, want start", evs)
				}
			},
		},
		{
			name: "recovery steps are said",
			setup: func(e *promiseEnv) {
				rawImage(e, 2<<20+99)
				// The virtual clock: the reset's settle (6 s, as Linux waits) passes
				// on the card's clock, not the test's.
				simCards(e, "size=4MiB&fault=phase-error&clock=virtual", "size=4MiB&fault=phase-error&clock=virtual")
			},
			want: map[string]int{"one": exitOK, "many": exitOK, "report": exitOK, "watch": exitOK, "read": exitOK, "bench-write": exitOK},
			json: true,
			check: func(t *testing.T, e *promiseEnv, m mode, r result) {
				if !strings.Contains(r.stdout, "resetting the reader") {
					t.Errorf("no recovery note:\n%s", r.stdout)
				}
			},
		},
		{
			name:  "progress is told through the verify",
			setup: func(e *promiseEnv) { rawImage(e, 3<<20+99); simCards(e, "size=8MiB", "size=8MiB") },
			want:  map[string]int{"one": exitOK, "many": exitOK, "report": exitOK, "watch": exitOK, "read": exitOK},
			json:  true,
			check: func(t *testing.T, e *promiseEnv, m mode, r result) {
				want := map[string]bool{}
				for i := range m.cards {
					want[e.path(i)] = true
				}
				for _, ev := range jsonEvents(t, r.stdout) {
					if ev["phase"] != "verify" {
						continue
					}
					switch ev["event"] {
					case "progress":
						want = nil // one card: the progress is the card's
					case "card_progress":
						if ev["done"] == ev["total"] {
							delete(want, strings.TrimPrefix(ev["target"].(string), "sim:"))
						}
					}
				}
				if len(want) > 0 {
					t.Errorf("no verify progress to the end for %v:\n%s", want, r.stdout)
				}
			},
		},
		{
			name:  "without a terminal progress is a line, through the verify",
			setup: func(e *promiseEnv) { rawImage(e, 3<<20+99); simCards(e, "size=8MiB", "size=8MiB") },
			want:  map[string]int{"one": exitOK, "many": exitOK, "report": exitOK, "watch": exitOK, "read": exitOK},
			lines: true,
			check: func(t *testing.T, e *promiseEnv, m mode, r result) {
				if !strings.Contains(r.stderr, "verify") || !strings.Contains(r.stderr, "MB") {
					t.Errorf("no progress line through the verify on stderr:\n%s", r.stderr)
				}
			},
		},
		{
			name: "Ctrl-C finishes the command in flight, syncs and exits 130",
			setup: func(e *promiseEnv) {
				rawImage(e, 6<<20)
				simCards(e, "size=8MiB&speed=20MB/s", "size=8MiB&speed=20MB/s")
			},
			want:   map[string]int{"one": exitCancelled, "many": exitCancelled, "report": exitCancelled, "watch": exitCancelled, "read": exitCancelled},
			json:   true,
			cancel: true,
			check: func(t *testing.T, e *promiseEnv, m mode, r result) {
				if m.name == "read" {
					if _, err := os.Stat(filepath.Join(e.dir, "backup.img")); err == nil {
						t.Error("an interrupted backup left a finished-looking file")
					}
					return
				}
				untouched(t, e, m, r)
				if m.name != "one" {
					return
				}
				// How far it got and what to do, not "context canceled".
				ev := lastEvent(t, r.stdout, "error")
				msg, _ := ev["message"].(string)
				if !strings.HasPrefix(msg, "write to sim:"+e.path(0)+" cancelled after ") ||
					!strings.HasSuffix(msg, "; the first transfer was left zeroed so the card does not boot a partial image") ||
					strings.Contains(msg, "context") || ev["hint"] != "run the write again" || ev["name"] != "cancelled" {
					t.Errorf("error event %v", ev)
				}
				if got, _ := os.ReadFile(e.path(0)); bytes.Count(got[:1<<20], []byte{0}) != 1<<20 {
					t.Error("the first transfer was written (or not zeroed) by an interrupted write")
				}
			},
		},
		{
			name:  "buffers past the memory bound are refused before anything is opened",
			setup: func(e *promiseEnv) { rawImage(e, 2<<20+99); simCards(e, "size=4MiB", "size=4MiB") },
			extra: []string{"--transfer-size", "512MiB"},
			want:  map[string]int{"one": exitUsage, "many": exitUsage, "report": exitUsage, "watch": exitUsage, "read": exitUsage},
			check: func(t *testing.T, e *promiseEnv, m mode, r result) {
				for i := range m.cards {
					// (read's card exists before; --watch's readers make theirs.)
					if _, err := os.Stat(e.path(i)); err == nil && !m.watch && m.name != "read" {
						t.Errorf("card %d was created", i)
					}
				}
			},
		},
		{
			name: "a download that does not match its publisher's checksum is found before the first transfer",
			setup: func(e *promiseEnv) {
				rawImage(e, 3<<20+99)
				simCards(e, "size=8MiB", "size=8MiB")
				bad := strings.Repeat("ab", 32) + "  os.img\n"
				if err := os.WriteFile(filepath.Join(e.dir, "SHA256SUMS"), []byte(bad), 0o644); err != nil {
					e.t.Fatal(err)
				}
			},
			want: map[string]int{"one": exitSource, "many": exitSource, "report": exitSource, "watch": exitSource},
			check: func(t *testing.T, e *promiseEnv, m mode, r result) {
				untouched(t, e, m, r)
				sum := sha256.Sum256(e.img)
				if out := r.stdout + r.stderr; !strings.Contains(out, strings.Repeat("ab", 32)) || !strings.Contains(out, hex.EncodeToString(sum[:])) {
					t.Errorf("both sums are not shown:\n%s", out)
				}
			},
		},
		{
			name: "a download that matches its checksum is written",
			setup: func(e *promiseEnv) {
				rawImage(e, 3<<20+99)
				simCards(e, "size=8MiB", "size=8MiB")
				sum := sha256.Sum256(e.img)
				if err := os.WriteFile(e.image+".sha256", []byte(hex.EncodeToString(sum[:])+"\n"), 0o644); err != nil {
					e.t.Fatal(err)
				}
			},
			want: map[string]int{"one": exitOK, "many": exitOK, "report": exitOK, "watch": exitOK},
			check: func(t *testing.T, e *promiseEnv, m mode, r result) {
				if !e.holds(0) || !strings.Contains(r.stdout, "matches the SHA-256 in "+e.image+".sha256") {
					t.Errorf("card written %v; stdout:\n%s", e.holds(0), r.stdout)
				}
			},
		},
		{
			name:  "a lag past the memory bound is refused before anything is opened, in JSON too",
			setup: func(e *promiseEnv) { rawImage(e, 2<<20+99); simCards(e, "size=4MiB", "size=4MiB") },
			extra: []string{"--lag", "100000000000", "--json"},
			want:  map[string]int{"many": exitUsage},
			check: func(t *testing.T, e *promiseEnv, m mode, r result) {
				if ev := lastEvent(t, r.stdout, "error"); ev["name"] != "usage" {
					t.Errorf("error event %v", ev)
				}
				untouched(t, e, m, r)
			},
		},
		{
			name: "a card that fails drops out alone",
			setup: func(e *promiseEnv) {
				rawImage(e, 3<<20+99)
				simCards(e, "size=8MiB", "size=8MiB&fault=medium-error:lba=3000,persistent")
			},
			want: map[string]int{"many": exitPartial, "watch": exitPartial},
			check: func(t *testing.T, e *promiseEnv, m mode, r result) {
				if !e.holds(0) {
					t.Error("the good card does not hold the image")
				}
				if !strings.Contains(r.stdout, "LBA") {
					t.Errorf("the failed card's error names no LBA:\n%s", r.stdout)
				}
			},
		},
		{
			name: "a card too small for an image whose size is found by writing drops out alone",
			setup: func(e *promiseEnv) {
				e.img = testImage(3<<20 + 99)
				e.image = writeFile(e.t, "os.img.gz", compress(e.t, "gzip", e.img))
				simCards(e, "size=8MiB", "size=2MiB")
			},
			want: map[string]int{"many": exitPartial, "watch": exitPartial},
			check: func(t *testing.T, e *promiseEnv, m mode, r result) {
				if !e.holds(0) || e.holds(1) {
					t.Errorf("large card holds the image %v, small card %v", e.holds(0), e.holds(1))
				}
				if !strings.Contains(r.stdout, "image is larger than") {
					t.Errorf("the small card's error:\n%s", r.stdout)
				}
			},
		},
		{
			name: "with --check a fake card the image does not fit in drops out alone, named, and the others are written",
			setup: func(e *promiseEnv) {
				rawImage(e, 3<<20+99)
				simCards(e, "size=64MiB&fake=drop&real=2MiB&fake-cache=512KiB", "size=8MiB")
			},
			extra: []string{"--check", "--max-cache", "4MiB"},
			want:  map[string]int{"one": exitFake, "many": exitPartial, "report": exitFake, "watch": exitPartial},
			check: func(t *testing.T, e *promiseEnv, m mode, r result) {
				if e.holds(0) {
					t.Error("the fake card holds the image")
				}
				if m.cards > 1 && !e.holds(1) {
					t.Error("the genuine card does not hold the image")
				}
				if out := r.stdout + r.stderr; !strings.Contains(out, "is fake") || !strings.Contains(out, "2097152 bytes") {
					t.Errorf("the fake card and its usable size are not named:\n%s", out)
				}
				if m.name == "report" || m.name == "watch" {
					rep, _ := os.ReadFile(filepath.Join(e.dir, map[string]string{"report": "run.json", "watch": "watch.json"}[m.name]))
					if !strings.Contains(string(rep), `"exit_code": 8`) && !strings.Contains(string(rep), `"exit_code":8`) {
						t.Errorf("the report does not give the fake card code 8:\n%s", rep)
					}
				}
			},
		},
		{
			name:  "a report that cannot be saved is refused before anything is written",
			setup: func(e *promiseEnv) { rawImage(e, 2<<20+99); simCards(e, "size=4MiB", "size=4MiB") },
			extra: []string{"--report", "/nonexistent/dir/run.json"},
			want:  map[string]int{"many": exitUsage, "report": exitUsage, "watch": exitUsage},
			check: func(t *testing.T, e *promiseEnv, m mode, r result) {
				untouched(t, e, m, r)
				if !strings.Contains(r.stderr, "/nonexistent/dir/run.json") || strings.Contains(r.stderr, ".run.json.") {
					t.Errorf("the error does not name the report (or names a temporary file):\n%s", r.stderr)
				}
			},
		},
	}
	for _, p := range promises {
		t.Run(p.name, func(t *testing.T) {
			t.Parallel()
			for _, m := range promiseModes {
				want, applies := p.want[m.name]
				if !applies {
					continue
				}
				t.Run(m.name, func(t *testing.T) {
					t.Parallel()
					e := &promiseEnv{t: t, dir: t.TempDir()}
					p.setup(e)
					ctx, cancel := context.WithCancel(context.Background())
					defer cancel()
					extra := append([]string(nil), p.extra...)
					if p.json {
						extra = append(extra, "--json")
					}
					var stdout io.Writer
					if p.cancel {
						stdout = &cancelAtProgress{cancel: cancel, cards: m.cards}
					}
					lineEvery := time.Duration(0)
					if p.lines {
						lineEvery = time.Nanosecond
					}
					r := runMode(e, m, ctx, stdout, lineEvery, extra...)
					if r.code != want {
						t.Fatalf("exit %d, want %d\nstdout:\n%s\nstderr:\n%s", r.code, want, r.stdout, r.stderr)
					}
					if p.check != nil {
						p.check(t, e, m, r)
					}
				})
			}
		})
	}
}

// cancelAtProgress presses Ctrl-C once the write or read of each of
// cards cards has made progress: under --watch a card that has not yet
// started is still being probed, and a probe abandoned then costs the
// reader's reset settle (6 s) before the run can end.
type cancelAtProgress struct {
	mu     sync.Mutex
	cancel context.CancelFunc
	cards  int
	seen   map[string]bool // the targets seen making progress
}

func (c *cancelAtProgress) Write(p []byte) (int, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	for _, line := range bytes.Split(p, []byte("\n")) {
		var ev struct{ Event, Phase, Target string }
		if json.Unmarshal(line, &ev) != nil || ev.Event != "progress" && ev.Event != "card_progress" || ev.Phase != "write" && ev.Phase != "read" {
			continue
		}
		if c.seen == nil {
			c.seen = map[string]bool{}
		}
		if c.seen[ev.Target] = true; len(c.seen) == c.cards {
			c.cancel()
		}
	}
	return len(p), nil
}
