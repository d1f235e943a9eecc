package metrics

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/prometheus/client_golang/prometheus/testutil"
	"github.com/prometheus/client_golang/prometheus/testutil/promlint"
	dto "github.com/prometheus/client_model/go"

	"github.com/usbflash/usbflash/internal/drive"
	"github.com/usbflash/usbflash/internal/failure"
	"github.com/usbflash/usbflash/internal/image"
	"github.com/usbflash/usbflash/internal/session"
	"github.com/usbflash/usbflash/internal/station"
	"github.com/usbflash/usbflash/internal/testkit/factsonly"
	"github.com/usbflash/usbflash/internal/testkit/simcards"
	"github.com/usbflash/usbflash/internal/testkit/testpattern"
)

// imageFile writes n bytes of test pattern to dir/os.img.
func imageFile(t *testing.T, dir string, n int) string {
	t.Helper()
	path := filepath.Join(dir, "os.img")
	if err := os.WriteFile(path, testpattern.Bytes(n, 7), 0o644); err != nil {
		t.Fatal(err)
	}
	return path
}

// TestRun: a session's cards counted from its events, against sim cards:
// every card's result, bytes written and verified, one duration each, a
// reader's recovery by its step; nothing left in flight.
func TestRun(t *testing.T) {
	t.Parallel()
	const size = 2<<20 + 512
	for _, tc := range []struct {
		name    string
		cards   []string
		results map[string]float64 // cards finished, by result
		written float64            // image bytes written
		steps   map[string]float64 // recoveries by step (at least)
		repair  bool
		fails   float64 // verify failures
		ranges  float64 // repaired
	}{
		{name: "many cards", cards: []string{"a.img?size=8MiB", "b.img?size=8MiB", "c.img?size=8MiB"},
			results: map[string]float64{"ok": 3}, written: 3 * size},
		{name: "a failing card", cards: []string{"a.img?size=8MiB", "bad.img?size=8MiB&fault=medium-error:lba=3000,persistent"},
			results: map[string]float64{"ok": 1, "device": 1}, written: size + 3000*512},
		{name: "a card taken out", cards: []string{"a.img?size=8MiB", "gone.img?size=8MiB&fault=disconnect:after=1MiB"},
			results: map[string]float64{"ok": 1, "removed": 1}, written: size},
		{name: "a repair", cards: []string{"a.img?size=8MiB&fault=corrupt:lba=3000", "b.img?size=8MiB&fault=corrupt:lba=4000,persistent"}, repair: true,
			results: map[string]float64{"ok": 1, "verify": 1}, written: 2 * size, fails: 1, ranges: 1},
		{name: "a retry", cards: []string{"a.img?size=8MiB&fault=phase-error"},
			results: map[string]float64{"ok": 1}, written: size, steps: map[string]float64{"reset": 1}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			dir := t.TempDir()
			specs := simcards.Specs(t, dir, tc.cards...)
			st := New(Options{Version: "v1.2.3", Textfile: filepath.Join(dir, "usbflash.prom"), Station: "line 3"})
			_, _ = session.Run(context.Background(), session.Config{Image: image.Ref{Path: imageFile(t, dir, size)}, Engine: session.Engine{Verify: true, Repair: tc.repair, Lag: 2}, Output: session.Output{Observer: st}}, specs)
			if err := st.Close(); err != nil {
				t.Fatal(err)
			}
			ok := tc.results["ok"]
			n := float64(len(tc.cards))
			checks := []struct {
				what      string
				got, want float64
			}{
				{"started", testutil.ToFloat64(st.cardsStarted), n},
				{"in flight", testutil.ToFloat64(st.inFlight), 0},
				{"verified bytes", testutil.ToFloat64(st.bytesVerified), ok * size},
				{"verify failures", testutil.ToFloat64(st.verifyFailures), tc.fails},
				{"repaired ranges", testutil.ToFloat64(st.repairedRanges), tc.ranges},
				{"repaired bytes", testutil.ToFloat64(st.repairedBytes), 512 * tc.ranges},
			}
			for _, r := range ResultLabels() {
				checks = append(checks, struct {
					what      string
					got, want float64
				}{"finished " + r, testutil.ToFloat64(st.cardsFinished.WithLabelValues(r)), tc.results[r]})
			}
			for _, c := range checks {
				if c.got != c.want {
					t.Errorf("%s: %v, want %v", c.what, c.got, c.want)
				}
			}
			// A card that failed wrote up to its failure, at most the image.
			if got := testutil.ToFloat64(st.bytesWritten); got < ok*size || got > tc.written {
				t.Errorf("written bytes %v, want %v to %v", got, ok*size, tc.written)
			}
			for step, least := range tc.steps {
				if got := testutil.ToFloat64(st.recoveries.WithLabelValues(step)); got < least {
					t.Errorf("recoveries %s: %v, want at least %v", step, got, least)
				}
			}
			if got := testutil.CollectAndCount(st.writeSeconds); got != 1 {
				t.Errorf("write duration: %d series", got)
			}
			// The histograms hold one observation per card that got so far.
			text := gathered(t, filepath.Join(dir, "usbflash.prom"))
			for _, want := range []string{
				`usbflash_write_duration_seconds_count{station="line 3"} ` + itoa(ok),
				`usbflash_verify_duration_seconds_count{station="line 3"} ` + itoa(ok),
				`usbflash_build_info{goversion="`,
			} {
				if !strings.Contains(text, want) {
					t.Errorf("textfile lacks %q:\n%s", want, text)
				}
			}
			if strings.Contains(text, "go_goroutines") || strings.Contains(text, "process_") {
				t.Errorf("textfile holds the process's metrics, which node_exporter has itself:\n%s", text)
			}
		})
	}
}

func itoa(f float64) string { return fmt.Sprint(f) }

func mustGather(t *testing.T, st *Station) []*dto.MetricFamily {
	t.Helper()
	mfs, err := st.Gatherer().Gather()
	if err != nil {
		t.Fatal(err)
	}
	return mfs
}

func gathered(t *testing.T, path string) string {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// TestLint: the metrics' names and help pass the client library's linter
// (promtool check metrics runs the same rules).
func TestLint(t *testing.T) {
	t.Parallel()
	st := New(Options{Version: "test"})
	problems, err := promlint.NewWithMetricFamilies(mustGather(t, st)).Lint()
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range problems {
		t.Errorf("%s: %s", p.Metric, p.Text)
	}
}

// TestWatch: a station's readers and cards, scraped over HTTP while it
// runs: the readers it holds and what became of the cards in them.
func TestWatch(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	img := imageFile(t, dir, 1<<20+512)
	readers := []drive.Found{
		drive.SimReader(filepath.Join(dir, "a.img") + "?size=4MiB&serial=A"),
		drive.SimReader(filepath.Join(dir, "b.img") + "?size=4MiB&serial=B"),
	}
	st := New(Options{Version: "test"})
	srv, err := st.Serve("127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer srv.Close()
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	var mu sync.Mutex
	done := 0
	var scraped string
	obs := session.ObserverFunc(func(e session.Event) {
		st.Observe(e)
		if _, ok := e.(session.CardDone); !ok {
			return
		}
		mu.Lock()
		defer mu.Unlock()
		if done++; done == len(readers) {
			scraped = scrape(t, srv.Addr()) // while the station runs
			cancel()
		}
	})
	find := func(context.Context) ([]drive.Found, error) { return readers, nil }
	if _, err := station.Watch(ctx, station.Config{Write: session.Config{Image: image.Ref{Path: img}, Engine: session.Engine{Verify: true}, Output: session.Output{Observer: obs}}}, find); err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{
		"usbflash_readers 2",
		`usbflash_cards_finished_total{result="ok"} 2`,
		"usbflash_cards_started_total 2",
		"usbflash_cards_in_flight 0",
		"process_open_fds ",
		"go_goroutines ",
	} {
		if !strings.Contains(scraped, want) {
			t.Errorf("/metrics lacks %q:\n%s", want, scraped)
		}
	}
}

func scrape(t *testing.T, addr string) string {
	t.Helper()
	resp, err := http.Get("http://" + addr + "/metrics")
	if err != nil {
		t.Error(err)
		return ""
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Error(err)
	}
	return string(b)
}

// TestStart: a textfile that cannot be kept and an address that cannot be
// listened on are said before the first card, as usage errors.
func TestStart(t *testing.T) {
	t.Parallel()
	taken, err := New(Options{}).Serve("127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer taken.Close()
	for _, setup := range []Setup{
		{Textfile: filepath.Join(t.TempDir(), "no", "such", "dir", "usbflash.prom")},
		{Listen: taken.Addr()},
	} {
		_, _, err := Start(setup)
		if failure.Of(err) != failure.Usage {
			t.Errorf("%+v: %v, want a usage error", setup, err)
			continue
		}
		factsonly.Check(t, err.Error())
	}
}
