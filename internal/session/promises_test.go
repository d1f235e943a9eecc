package session_test

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"math"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/usbflash/usbflash/internal/drive"
	"github.com/usbflash/usbflash/internal/failure"
	"github.com/usbflash/usbflash/internal/image"
	"github.com/usbflash/usbflash/internal/lib/units"
	"github.com/usbflash/usbflash/internal/probe/cardbench"
	"github.com/usbflash/usbflash/internal/probe/fakecheck"
	"github.com/usbflash/usbflash/internal/session"
	"github.com/usbflash/usbflash/internal/station"
	"github.com/usbflash/usbflash/internal/testkit/testimage"
	"github.com/usbflash/usbflash/internal/testkit/testpattern"
	"github.com/usbflash/usbflash/pipeline"
)

// The safety promises of README, each held on every path that writes,
// reads or measures a card: one card, several, one with a report, a
// station (internal/station's Watch, over this package's Cards), a
// backup, a bench's write tests, and erase's blocks (Config.Blocks: one
// card, several with a report, a station) where a promise applies to them. Every
// path runs through the same packages (drive opens and checks, this
// package writes), so a promise kept by one path and broken by another is
// a bug this table finds. The table is package session_test so that it
// can run the station, which imports this package. What the command line
// makes of each ending (its exit code and advice) is cmd's table's.

// promiseEnv is one test's image and cards.
type promiseEnv struct {
	t     *testing.T
	dir   string
	image string
	img   []byte   // the image's bytes, when it is raw
	cards []string // sim: targets, without the prefix: path?options
	// before is each card's SHA-256 as a blocks path (erase) found it,
	// filled with a pattern first: an erase's zeros are a fresh card's.
	before [][32]byte
}

// fillCards fills each card with a pattern of the size its options give
// and keeps its hash, so that a refused erase is seen to write nothing.
func (e *promiseEnv) fillCards() {
	e.before = make([][32]byte, len(e.cards))
	for i, c := range e.cards {
		_, opts, _ := strings.Cut(c, "?")
		q, err := url.ParseQuery(opts)
		if err != nil {
			e.t.Fatal(err)
		}
		size, err := units.ParseSize(q.Get("size"))
		if err != nil {
			e.t.Fatalf("card %d: %v", i, err)
		}
		b := testpattern.Bytes(int(size), byte(100+i))
		f, err := os.OpenFile(e.path(i), os.O_RDWR|os.O_CREATE, 0o644)
		if err == nil {
			_, err = f.WriteAt(b, 0)
			f.Close()
		}
		if err != nil {
			e.t.Fatal(err)
		}
		e.before[i] = sha256.Sum256(b)
	}
}

// blocksPath says a path writes blocks that are not an image (erase's).
func blocksPath(name string) bool { return strings.HasPrefix(name, "erase") }

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

// rawImage writes a raw image of n bytes.
func (e *promiseEnv) rawImage(n int) {
	e.img = testpattern.Bytes(n, 3)
	e.image = filepath.Join(e.dir, "os.img")
	if err := os.WriteFile(e.image, e.img, 0o644); err != nil {
		e.t.Fatal(err)
	}
}

// simCards sets cards up with the given options each.
func (e *promiseEnv) simCards(opts ...string) {
	e.cards = nil
	for i, o := range opts {
		e.cards = append(e.cards, filepath.Join(e.dir, string(rune('a'+i))+".img")+"?"+o)
	}
}

// spec is card i's target.
func (e *promiseEnv) spec(i int) drive.Spec {
	s, err := drive.Parse("sim:" + e.cards[i])
	if err != nil {
		e.t.Fatal(err)
	}
	return s
}

// ending is how a path ended: the class of its error, or partial for
// several cards some of which succeeded, or ok.
func ending(err error) string {
	var cards *session.CardsError
	switch {
	case err == nil:
		return "ok"
	case errors.As(err, &cards) && cards.Partial():
		return "partial"
	}
	return failure.Of(err).String()
}

// pathRun is what a path did: its error, and every event it told, in order.
type pathRun struct {
	err    error
	events []any
	report *session.MemReport
}

// notes is every note's text.
func (r *pathRun) notes() string {
	var b strings.Builder
	for _, e := range r.events {
		if n, ok := e.(session.Note); ok { // every session's, cardbench's too
			b.WriteString(n.Message + "\n")
		}
	}
	return b.String()
}

// said is what the path said: its error, its notes, each card's error.
func (r *pathRun) said() string {
	s := fmt.Sprint(r.err) + "\n" + r.notes()
	for _, e := range r.events {
		if d, ok := e.(session.CardDone); ok && d.Outcome.Err != nil {
			s += d.Outcome.Err.Error() + "\n"
		}
	}
	return s
}

// promiseMode is one way of running cards.
type promiseMode struct {
	name  string
	cards int // how many of the env's cards it uses
	run   func(ctx context.Context, e *promiseEnv, cfg session.Config, observe func(any)) *pathRun
}

var promiseModes = []promiseMode{
	{"one", 1, func(ctx context.Context, e *promiseEnv, cfg session.Config, observe func(any)) *pathRun {
		_, err := session.Run(ctx, cfg, []drive.Spec{e.spec(0)})
		return &pathRun{err: err}
	}},
	{"many", 2, func(ctx context.Context, e *promiseEnv, cfg session.Config, observe func(any)) *pathRun {
		_, err := session.Run(ctx, cfg, []drive.Spec{e.spec(0), e.spec(1)})
		return &pathRun{err: err}
	}},
	{"report", 1, func(ctx context.Context, e *promiseEnv, cfg session.Config, observe func(any)) *pathRun {
		r := &pathRun{report: &session.MemReport{}}
		cfg.Output.Report = r.report
		_, r.err = session.Run(ctx, cfg, []drive.Spec{e.spec(0)})
		return r
	}},
	{"watch", 2, func(ctx context.Context, e *promiseEnv, cfg session.Config, observe func(any)) *pathRun {
		return watchCards(ctx, e, cfg)
	}},
	{"read", 1, func(ctx context.Context, e *promiseEnv, cfg session.Config, observe func(any)) *pathRun {
		b, err := session.NewBackup(session.BackupConfig{Out: filepath.Join(e.dir, "backup.img"), Verify: true, TransferSize: cfg.Engine.TransferSize, Observer: cfg.Output.Observer})
		if err == nil {
			_, err = b.Run(ctx, e.spec(0))
		}
		return &pathRun{err: err}
	}},
	{"bench-write", 1, func(ctx context.Context, e *promiseEnv, cfg session.Config, observe func(any)) *pathRun {
		_, err := cardbench.Run(ctx, cardbench.Config{Target: e.spec(0), Write: true,
			Plan:      cardbench.Plan{Region: &cardbench.Region{Name: "region", Offset: 1 << 20, Length: 1 << 20}, Sizes: []int64{64 << 10}},
			PointTime: time.Millisecond, RandomTime: time.Millisecond, Skip: cardbench.Skip{Align: true, Random: true, RoundTrip: true}},
			func(ev cardbench.Event) { observe(ev) })
		return &pathRun{err: err}
	}},
	// erase's blocks (format's are written as they are: Config.Blocks),
	// through the same session: one card, several with a report, a
	// station.
	{"erase", 1, func(ctx context.Context, e *promiseEnv, cfg session.Config, observe func(any)) *pathRun {
		_, err := session.Run(ctx, e.erase(cfg, false), []drive.Spec{e.spec(0)})
		return &pathRun{err: err}
	}},
	{"erase-many", 2, func(ctx context.Context, e *promiseEnv, cfg session.Config, observe func(any)) *pathRun {
		r := &pathRun{report: &session.MemReport{}}
		cfg = e.erase(cfg, true)
		cfg.Output.Report = r.report
		_, r.err = session.Run(ctx, cfg, []drive.Spec{e.spec(0), e.spec(1)})
		return r
	}},
	{"erase-watch", 2, func(ctx context.Context, e *promiseEnv, cfg session.Config, observe func(any)) *pathRun {
		return watchCards(ctx, e, e.erase(cfg, false))
	}},
}

// watchCards runs a station over the env's two cards, each in a reader,
// with a report; a person presses Ctrl-C once every card came out.
func watchCards(ctx context.Context, e *promiseEnv, cfg session.Config) *pathRun {
	readers := []drive.Found{drive.SimReader(e.cards[0]), drive.SimReader(e.cards[1])}
	r := &pathRun{report: &session.MemReport{}}
	cfg.Output.Report = r.report
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	next := cfg.Output.Observer
	cfg.Output.Observer = session.ObserverFunc(func(ev session.Event) {
		next.Observe(ev)
		if _, ok := ev.(session.CardDone); ok && len(r.report.Records()) >= 2 {
			cancel()
		}
	})
	stop := time.AfterFunc(20*time.Second, cancel)
	defer stop.Stop()
	_, r.err = station.Watch(ctx, station.Config{Write: cfg}, func(context.Context) ([]drive.Found, error) { return readers, nil })
	return r
}

// erase is cfg writing an erase's blocks (zeros, or a random pattern)
// instead of the image.
func (e *promiseEnv) erase(cfg session.Config, random bool) session.Config {
	er, err := session.NewErase(random, false)
	if err != nil {
		e.t.Fatal(err)
	}
	cfg.Image, cfg.Blocks = image.Ref{}, er
	return cfg
}

// promise is one row of the table: how to set the cards up, how each
// path must end (absent: the promise does not apply to it), and what else
// must hold.
type promise struct {
	name  string
	setup func(e *promiseEnv)
	cfg   func(c *session.Config)
	want  map[string]string
	// cancel stops the run (a Ctrl-C) once each card's write or read
	// made progress.
	cancel bool
	// fresh: the cards must not exist before the run (what is created
	// is checked), so a blocks path's are not filled first.
	fresh bool
	check func(t *testing.T, e *promiseEnv, m promiseMode, r *pathRun)
}

// untouched: no card holds the image; on a blocks path refused before
// it began, no card holds anything but what it held.
func untouched(t *testing.T, e *promiseEnv, m promiseMode, r *pathRun) {
	for i := range m.cards {
		if e.holds(i) {
			t.Errorf("card %d holds the image after a refusal", i)
		}
		if e.before == nil || ending(r.err) == "interrupted" {
			continue
		}
		if b, err := os.ReadFile(e.path(i)); err != nil || sha256.Sum256(b) != e.before[i] {
			t.Errorf("card %d was written to by a refused %s (%v)", i, m.name, err)
		}
	}
}

func TestPromisesOnEveryPath(t *testing.T) {
	t.Parallel()
	writes := map[string]string{"one": "refused", "many": "refused", "report": "refused", "watch": "refused"}
	with := func(base map[string]string, more map[string]string) map[string]string {
		out := map[string]string{}
		for k, v := range base {
			out[k] = v
		}
		for k, v := range more {
			out[k] = v
		}
		return out
	}
	all := func(ending string, modes ...string) map[string]string {
		out := map[string]string{}
		for _, m := range modes {
			out[m] = ending
		}
		return out
	}
	// erase's paths, where a promise holds for blocks as for an image.
	blocks := []string{"erase", "erase-many", "erase-watch"}
	promises := []promise{
		{
			name: "an image too small to be an OS image is refused",
			setup: func(e *promiseEnv) {
				e.image = filepath.Join(e.dir, "page.img")
				os.WriteFile(e.image, []byte("<html><body>404 Not Found</body></html>"), 0o644)
				e.img = []byte("<html>")
				e.simCards("size=4MiB", "size=4MiB")
			},
			want: writes, check: untouched,
		},
		{
			name:  "a write-protected card is refused",
			setup: func(e *promiseEnv) { e.rawImage(2<<20 + 99); e.simCards("size=4MiB&wp=1", "size=4MiB&wp=1") },
			want:  with(with(writes, all("refused", blocks...)), map[string]string{"bench-write": "refused"}), check: untouched,
		},
		{
			name:  "an image larger than the card is refused",
			setup: func(e *promiseEnv) { e.rawImage(3 << 20); e.simCards("size=2MiB", "size=2MiB") },
			want:  writes, check: untouched,
		},
		{
			name: "a card another usbflash holds is refused",
			setup: func(e *promiseEnv) {
				e.rawImage(2<<20 + 99)
				e.simCards("size=4MiB", "size=4MiB")
				for i := range e.cards {
					d, err := drive.Open(context.Background(), e.spec(i), drive.Options{})
					if err != nil {
						e.t.Fatal(err)
					}
					e.t.Cleanup(func() { d.Close() })
				}
			},
			want: with(with(writes, all("refused", blocks...)), map[string]string{"read": "refused", "bench-write": "refused"}), check: untouched,
		},
		{
			name: "the image itself is refused as a target",
			setup: func(e *promiseEnv) {
				e.rawImage(2<<20 + 99)
				e.cards = []string{e.image, filepath.Join(e.dir, "b.img") + "?size=4MiB"}
			},
			// A station refuses the reader whose card is the image and
			// writes the other.
			want: with(writes, map[string]string{"watch": "partial"}),
			check: func(t *testing.T, e *promiseEnv, m promiseMode, r *pathRun) {
				if got, _ := os.ReadFile(e.image); !bytes.Equal(got, e.img) {
					t.Error("the image was overwritten")
				}
			},
		},
		{
			name: "the start comes before the first command, also to a reader that fails",
			setup: func(e *promiseEnv) {
				e.rawImage(2<<20 + 99)
				e.simCards("size=4MiB&fault=disconnect", "size=4MiB&fault=disconnect")
			},
			want: all("device", append(blocks, "one", "many", "report", "watch", "read")...),
			check: func(t *testing.T, e *promiseEnv, m promiseMode, r *pathRun) {
				switch first := r.events[0].(type) {
				case session.Started, session.BackupStarted:
				default:
					t.Errorf("first event %T %+v, want the start", first, first)
				}
			},
		},
		{
			name: "recovery steps are said",
			setup: func(e *promiseEnv) {
				e.rawImage(2<<20 + 99)
				// The virtual clock: the reset's settle (6 s, as Linux waits)
				// passes on the card's clock, not the test's.
				e.simCards("size=4MiB&fault=phase-error&clock=virtual", "size=4MiB&fault=phase-error&clock=virtual")
			},
			want: all("ok", append(blocks, "one", "many", "report", "watch", "read", "bench-write")...),
			check: func(t *testing.T, e *promiseEnv, m promiseMode, r *pathRun) {
				if !strings.Contains(r.notes(), "resetting the reader") {
					t.Errorf("no recovery note:\n%s", r.notes())
				}
			},
		},
		{
			name:  "progress is told through the verify",
			setup: func(e *promiseEnv) { e.rawImage(3<<20 + 99); e.simCards("size=8MiB", "size=8MiB") },
			want:  all("ok", append(blocks, "one", "many", "report", "watch", "read")...),
			check: func(t *testing.T, e *promiseEnv, m promiseMode, r *pathRun) {
				want := map[string]bool{}
				for i := range m.cards {
					want["sim:"+e.path(i)] = true
				}
				for _, ev := range r.events {
					p, ok := ev.(session.Progress)
					if !ok || p.Phase != pipeline.PhaseVerify || p.Done != p.Total {
						continue
					}
					if len(p.Cards) == 0 {
						want = nil // a backup's: the one card's
					}
					for _, c := range p.Cards {
						if c.Done == c.Total {
							delete(want, c.Card)
						}
					}
				}
				if len(want) > 0 {
					t.Errorf("no verify progress to the end for %v", want)
				}
			},
		},
		{
			name: "Ctrl-C finishes the command in flight, syncs and ends interrupted",
			setup: func(e *promiseEnv) {
				e.rawImage(6 << 20)
				e.simCards("size=8MiB&speed=20MB/s", "size=8MiB&speed=20MB/s")
			},
			want:   all("interrupted", "one", "many", "report", "watch", "read", "erase", "erase-many"),
			cancel: true,
			check: func(t *testing.T, e *promiseEnv, m promiseMode, r *pathRun) {
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
				// How far it got, in words, not "context canceled".
				msg := r.err.Error()
				if !strings.HasPrefix(msg, "write to sim:"+e.path(0)+" cancelled after ") ||
					!strings.HasSuffix(msg, "; the first transfer was left zeroed so the card does not boot a partial image") {
					t.Errorf("error %q", msg)
				}
				if got, _ := os.ReadFile(e.path(0)); bytes.Count(got[:1<<20], []byte{0}) != 1<<20 {
					t.Error("the first transfer was written (or not zeroed) by an interrupted write")
				}
			},
		},
		{
			name:  "buffers past the memory bound are refused before anything is opened",
			fresh: true,
			setup: func(e *promiseEnv) { e.rawImage(2<<20 + 99); e.simCards("size=4MiB", "size=4MiB") },
			cfg:   func(c *session.Config) { c.Engine.TransferSize = 512 << 20 },
			want:  all("usage", append(blocks, "one", "many", "report", "watch", "read")...),
			check: func(t *testing.T, e *promiseEnv, m promiseMode, r *pathRun) {
				for i := range m.cards {
					// (read's card exists before; a station's readers make theirs.)
					if _, err := os.Stat(e.path(i)); err == nil && m.name != "watch" && m.name != "erase-watch" && m.name != "read" {
						t.Errorf("card %d was created", i)
					}
				}
			},
		},
		{
			name:  "a lag past the memory bound is refused before anything is opened",
			setup: func(e *promiseEnv) { e.rawImage(2<<20 + 99); e.simCards("size=4MiB", "size=4MiB") },
			cfg:   func(c *session.Config) { c.Engine.Lag = math.MaxInt32 },
			want:  map[string]string{"many": "usage"},
			check: untouched,
		},
		{
			name: "a download that does not match its publisher's checksum is found before the first transfer",
			setup: func(e *promiseEnv) {
				e.rawImage(3<<20 + 99)
				e.simCards("size=8MiB", "size=8MiB")
				os.WriteFile(filepath.Join(e.dir, "SHA256SUMS"), []byte(strings.Repeat("ab", 32)+"  os.img\n"), 0o644)
			},
			want: all("image", "one", "many", "report", "watch"),
			check: func(t *testing.T, e *promiseEnv, m promiseMode, r *pathRun) {
				untouched(t, e, m, r)
				sum := sha256.Sum256(e.img)
				said := r.said()
				if r.report != nil {
					said += r.report.Text()
				}
				if !strings.Contains(said, strings.Repeat("ab", 32)) || !strings.Contains(said, hex.EncodeToString(sum[:])) {
					t.Errorf("both sums are not said:\n%s", said)
				}
			},
		},
		{
			name: "a download that matches its checksum is written",
			setup: func(e *promiseEnv) {
				e.rawImage(3<<20 + 99)
				e.simCards("size=8MiB", "size=8MiB")
				sum := sha256.Sum256(e.img)
				os.WriteFile(e.image+".sha256", []byte(hex.EncodeToString(sum[:])+"\n"), 0o644)
			},
			want: all("ok", "one", "many", "report", "watch"),
			check: func(t *testing.T, e *promiseEnv, m promiseMode, r *pathRun) {
				if !e.holds(0) || !strings.Contains(r.notes(), "matches the SHA-256 in "+e.image+".sha256") {
					t.Errorf("card written %v; notes:\n%s", e.holds(0), r.notes())
				}
			},
		},
		{
			name: "a card that fails drops out alone",
			setup: func(e *promiseEnv) {
				e.rawImage(3<<20 + 99)
				e.simCards("size=8MiB", "size=8MiB&fault=medium-error:lba=3000,persistent")
			},
			want: all("partial", "many", "watch"),
			check: func(t *testing.T, e *promiseEnv, m promiseMode, r *pathRun) {
				if !e.holds(0) {
					t.Error("the good card does not hold the image")
				}
				if !strings.Contains(r.said(), "LBA") {
					t.Errorf("the failed card's error names no LBA:\n%s", r.said())
				}
			},
		},
		{
			name: "a card too small for an image whose size is found by writing drops out alone",
			setup: func(e *promiseEnv) {
				e.img = testpattern.Bytes(3<<20+99, 3)
				e.image = filepath.Join(e.dir, "os.img.gz")
				os.WriteFile(e.image, testimage.Compress(e.t, "gzip", e.img), 0o644)
				e.simCards("size=8MiB", "size=2MiB")
			},
			want: all("partial", "many", "watch"),
			check: func(t *testing.T, e *promiseEnv, m promiseMode, r *pathRun) {
				if !e.holds(0) || e.holds(1) {
					t.Errorf("large card holds the image %v, small card %v", e.holds(0), e.holds(1))
				}
				if !strings.Contains(r.said(), "image is larger than") {
					t.Errorf("the small card's error:\n%s", r.said())
				}
			},
		},
		{
			name: "with Check a fake card the image does not fit in drops out alone, named, and the others are written",
			setup: func(e *promiseEnv) {
				e.rawImage(3<<20 + 99)
				e.simCards("size=64MiB&fake=drop&real=2MiB&fake-cache=512KiB", "size=8MiB")
			},
			cfg:  func(c *session.Config) { c.Targets.Check = &fakecheck.Options{MaxCache: 4 << 20} },
			want: map[string]string{"one": "fake", "many": "partial", "report": "fake", "watch": "partial"},
			check: func(t *testing.T, e *promiseEnv, m promiseMode, r *pathRun) {
				if e.holds(0) {
					t.Error("the fake card holds the image")
				}
				if m.cards > 1 && !e.holds(1) {
					t.Error("the genuine card does not hold the image")
				}
				if said := r.said(); !strings.Contains(said, "is fake") || !strings.Contains(said, "2097152 bytes") {
					t.Errorf("the fake card and its usable size are not named: %s", said)
				}
				if r.report != nil && !strings.Contains(r.report.Text(), "Code:8 ") {
					t.Errorf("the report does not give the fake card code 8:\n%s", r.report.Text())
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
					if m.name == "read" || m.name == "bench-write" {
						// They read a card that exists: a blank one of its size.
						if _, err := os.Stat(e.path(0)); err != nil {
							size := int64(8 << 20)
							if strings.Contains(e.cards[0], "size=4MiB") {
								size = 4 << 20
							}
							if err := os.WriteFile(e.path(0), nil, 0o644); err != nil || os.Truncate(e.path(0), size) != nil {
								t.Fatal("cannot make the card")
							}
						}
					}
					if blocksPath(m.name) && !p.fresh {
						e.fillCards()
					}
					ctx, cancel := context.WithCancel(context.Background())
					defer cancel()
					var mu sync.Mutex
					var events []any
					progressed := map[string]bool{}
					observe := func(ev any) {
						mu.Lock()
						defer mu.Unlock()
						events = append(events, ev)
						// A Ctrl-C once each card's write or read made
						// progress: a station's card not yet started is
						// still being probed, and a probe abandoned then
						// costs the reader's reset settle (6 s).
						if pr, ok := ev.(session.Progress); ok && p.cancel && (pr.Phase == pipeline.PhaseWrite || pr.Phase == pipeline.PhaseRead) && pr.Done > 0 {
							progressed[""] = len(pr.Cards) == 0
							for _, c := range pr.Cards {
								progressed[c.Card] = true
							}
							if progressed[""] || len(progressed)-1 >= m.cards {
								cancel()
							}
						}
					}
					cfg := session.Config{Image: image.Ref{Path: e.image}, Engine: session.Engine{Verify: true},
						Output: session.Output{ExitCodes: map[failure.Class]int{failure.Fake: 8},
							Observer: session.ObserverFunc(func(ev session.Event) { observe(ev) })}}
					if p.cfg != nil {
						p.cfg(&cfg)
					}
					r := m.run(ctx, e, cfg, observe)
					mu.Lock()
					r.events = events
					mu.Unlock()
					if got := ending(r.err); got != want {
						t.Fatalf("ended %s (%v), want %s\nnotes:\n%s", got, r.err, want, r.notes())
					}
					if p.check != nil {
						p.check(t, e, m, r)
					}
				})
			}
		})
	}
}
