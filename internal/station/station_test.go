package station

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/usbflash/usbflash/internal/drive"
	"github.com/usbflash/usbflash/internal/failure"
	"github.com/usbflash/usbflash/internal/image"
	"github.com/usbflash/usbflash/internal/session"
	"github.com/usbflash/usbflash/internal/testkit/factsonly"
	"github.com/usbflash/usbflash/internal/testkit/testimage"
	"github.com/usbflash/usbflash/internal/ui/jsonevents"
	"github.com/usbflash/usbflash/internal/ui/report"
	"github.com/usbflash/usbflash/pipeline"
)

// TestWatchStop: a stop request while a card is being written stops it
// after the command in flight; with a StopTimeout the card is finished
// and verified; a timeout that
// runs out stops it as a stop request does and says so.
func TestWatchStop(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name    string
		timeout time.Duration
		done    bool // the card holds the image, verified
		err     func(error) bool
		says    string // the session.Note that says what the stop does
	}{
		{name: "stopped at once", err: func(err error) bool {
			return failure.Of(err) == failure.Interrupted && errors.As(err, new(*session.CardsError))
		}},
		{name: "finished", timeout: time.Hour, done: true, err: func(err error) bool { return err == nil },
			says: "Stop requested: no new card is taken; the cards being written are finished, for up to 1h0m0s, then stopped after the command in flight"},
		{name: "the timeout runs out", timeout: time.Nanosecond, err: func(err error) bool {
			var se *StopTimeoutError
			return errors.As(err, &se) && se.Cut == 1 && failure.Of(err) == failure.Interrupted
		}, says: "Stop requested: no new card is taken; the cards being written are finished, for up to 1ns, then stopped after the command in flight"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			dir := t.TempDir()
			imagePath, img := testimage.File(t, dir, 3<<20+100)
			card := filepath.Join(dir, "a.img")
			readers := []drive.Found{drive.SimReader(card + "?size=8MiB&speed=8MB/s")}
			ctx, cancel := context.WithCancel(context.Background())
			defer cancel()
			var once sync.Once
			var mu sync.Mutex
			var notes []string
			registered, removed := 0, 0
			saysStop := func() func() {
				mu.Lock()
				defer mu.Unlock()
				registered++
				return func() {
					mu.Lock()
					defer mu.Unlock()
					removed++
				}
			}
			obs := session.ObserverFunc(func(e session.Event) {
				if n, ok := e.(session.Note); ok {
					mu.Lock()
					notes = append(notes, n.Message)
					mu.Unlock()
				}
				// The stop request comes while the card is being written.
				if p, ok := e.(session.Progress); ok && p.Phase == pipeline.PhaseWrite && p.Done > 0 {
					once.Do(cancel)
				}
			})
			find := func(context.Context) ([]drive.Found, error) { return readers, nil }
			res, err := Watch(ctx, Config{Write: session.Config{Image: image.Ref{Path: imagePath}, Engine: session.Engine{Verify: true}, Output: session.Output{Observer: obs}}, StopTimeout: tc.timeout, SaysStop: saysStop}, find)
			if !tc.err(err) {
				t.Fatalf("err = %v", err)
			}
			// Watch says what a stop does when, and only when, it does
			// something else than stop after the command in flight, and
			// ends saying so as it returns.
			mu.Lock()
			if want := min(len(tc.says), 1); registered != want || removed != want {
				t.Errorf("SaysStop registered %d times, removed %d, want %d", registered, removed, want)
			}
			if tc.says != "" && !slices.Contains(notes, tc.says) {
				t.Errorf("notes %q, want %q", notes, tc.says)
			}
			mu.Unlock()
			if err != nil {
				factsonly.Check(t, err.Error())
			}
			if len(res.Cards) != 1 {
				t.Fatalf("%d cards", len(res.Cards))
			}
			o := res.Cards[0]
			if o.Write.Digests.List != nil {
				t.Error("a finished card's outcome keeps its digests")
			}
			if tc.done != o.Verified() || tc.done != testimage.Holds(card, img) {
				t.Errorf("verified %v, holds the image %v (%v), want %v", o.Verified(), testimage.Holds(card, img), o.Err, tc.done)
			}
		})
	}
}

// TestWatchKeepsLittlePerCard: a station's Result keeps the last
// session.RecentCards cards and counts the rest, its Report keeps no
// records, and its report file (internal/ui/report's, a card added at a
// time) holds every card finished so far whenever a card is told as done:
// a station killed between cards loses none (report's TestStationKilled
// kills one).
func TestWatchKeepsLittlePerCard(t *testing.T) {
	t.Parallel()
	const n = 3 * session.RecentCards
	dir := t.TempDir()
	imagePath, img := testimage.File(t, dir, 256<<10+100)
	var readers []drive.Found
	for i := range n {
		readers = append(readers, drive.SimReader(filepath.Join(dir, fmt.Sprintf("c%02d.img?size=1MiB", i))))
	}
	file, err := report.NewStation(filepath.Join(dir, "station.json"))
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	var done, problems []string
	obs := session.ObserverFunc(func(e session.Event) {
		d, ok := e.(session.CardDone)
		if !ok {
			return
		}
		done = append(done, d.Outcome.Target)
		// What a kill now would leave.
		doc, err := reportFile(file.Path())
		if err != nil {
			problems = append(problems, err.Error())
		}
		// Cards finish at once: the file may hold one not yet told.
		var recorded []string
		for _, r := range doc.Cards {
			recorded = append(recorded, r.Target)
		}
		for _, want := range done {
			if !slices.Contains(recorded, want) {
				problems = append(problems, fmt.Sprintf("after %d cards the report lacks %s", len(done), want))
			}
		}
		if len(done) == n {
			cancel()
		}
	})
	find := func(context.Context) ([]drive.Found, error) { return readers, nil }
	res, err := Watch(ctx, Config{Write: session.Config{Image: image.Ref{Path: imagePath}, Engine: session.Engine{TransferSize: 64 << 10, Verify: true}, Output: session.Output{Report: file, Observer: obs}}}, find)
	if cerr := file.Close(); cerr != nil {
		t.Error(cerr)
	}
	if err != nil {
		var first error
		if len(res.Cards) > 0 {
			first = res.Cards[0].Err
		}
		t.Fatalf("%v (%v)", err, first)
	}
	if len(problems) > 0 {
		t.Errorf("%d problems, first %s", len(problems), problems[0])
	}
	if len(res.Cards) != session.RecentCards || res.Tally.Cards != n || res.Tally.Succeeded != n || len(res.Report.Cards) != 0 {
		t.Errorf("Result keeps %d cards, counts %d (%d ok), its report %d records; want %d, %d, 0",
			len(res.Cards), res.Tally.Cards, res.Tally.Succeeded, len(res.Report.Cards), session.RecentCards, n)
	}
	// The last cards finished, in the report's order.
	doc, err := reportFile(file.Path())
	if err != nil || len(doc.Cards) != n {
		t.Fatalf("the report holds %d cards (%v), want %d", len(doc.Cards), err, n)
	}
	if !slices.EqualFunc(res.Cards, doc.Cards[n-session.RecentCards:], func(o *session.Outcome, r jsonevents.Record) bool { return o.Target == r.Target }) {
		t.Error("Result does not keep the last cards finished")
	}
	if res.Tally.Verify != "xxh3 per transfer" || doc.SHA256 != res.Tally.SHA256 {
		t.Errorf("tally %+v, the report's SHA-256 %q: how cards were verified, or the image's SHA-256, is lost", res.Tally, doc.SHA256)
	}
	for i := range n {
		if !testimage.Holds(filepath.Join(dir, fmt.Sprintf("c%02d.img", i)), img) {
			t.Errorf("card %d does not hold the image", i)
		}
	}
}

// reportFile reads a JSON report file as a reader would.
func reportFile(path string) (report.JSON, error) {
	var doc report.JSON
	b, err := os.ReadFile(path)
	if err == nil {
		err = json.Unmarshal(b, &doc)
	}
	if err != nil {
		return doc, fmt.Errorf("report %s: %w", path, err)
	}
	return doc, nil
}

// TestWatchSlots: a station says each time a slot of its readers comes
// to hold a card or becomes empty: a reader plugged in with a card, a
// second one and an empty reader, the first reader unplugged; nothing
// twice.
func TestWatchSlots(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	imagePath, _ := testimage.File(t, dir, 1<<20)
	a, b, c := filepath.Join(dir, "a.img"), filepath.Join(dir, "b.img"), filepath.Join(dir, "c.img")
	var mu sync.Mutex
	readers := []drive.Found{drive.SimReader(a + "?size=4MiB")}
	var slots []string
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	done := 0
	obs := session.ObserverFunc(func(e session.Event) {
		mu.Lock()
		defer mu.Unlock()
		switch e := e.(type) {
		case session.Slot:
			slots = append(slots, fmt.Sprintf("%s %v", strings.TrimPrefix(e.Card, "sim:"+dir+"/"), e.Present))
			if !e.Present && strings.HasSuffix(e.Card, "a.img") {
				cancel() // the last change: the station can stop
			}
		case session.CardDone:
			done++
			switch done {
			case 1: // a written: a second reader with a card, and an empty one
				readers = append(readers, drive.SimReader(b+"?size=4MiB"), drive.SimReader(c+"?size=4MiB&nomedium=1"))
			case 2: // b written: a unplugged
				readers = readers[1:]
			}
		}
	})
	find := func(context.Context) ([]drive.Found, error) {
		mu.Lock()
		defer mu.Unlock()
		return slices.Clone(readers), nil
	}
	if _, err := Watch(ctx, Config{Write: session.Config{Image: image.Ref{Path: imagePath}, Output: session.Output{Observer: obs}}}, find); err != nil {
		t.Fatal(err)
	}
	mu.Lock()
	defer mu.Unlock()
	// b's and c's come from one look at the readers, in either order.
	if len(slots) != 4 || slots[0] != "a.img true" || slots[3] != "a.img false" ||
		!slices.Contains(slots, "b.img true") || !slices.Contains(slots, "c.img false") {
		t.Errorf("slots %q, want a.img true, b.img true and c.img false, a.img false", slots)
	}
}
