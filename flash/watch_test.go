package flash

import (
	"context"
	"errors"
	"path/filepath"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/usbflash/usbflash/drive"
	"github.com/usbflash/usbflash/failure"
	"github.com/usbflash/usbflash/internal/factsonly"
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
		says    string // the Note that says what the stop does
	}{
		{name: "stopped at once", err: func(err error) bool {
			return failure.Of(err) == failure.Interrupted && errors.As(err, new(*CardsError))
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
			image, img := testImage(t, dir, 3<<20+100)
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
			obs := ObserverFunc(func(e Event) {
				if n, ok := e.(Note); ok {
					mu.Lock()
					notes = append(notes, n.Message)
					mu.Unlock()
				}
				// The stop request comes while the card is being written.
				if p, ok := e.(Progress); ok && p.Phase == pipeline.PhaseWrite && p.Done > 0 {
					once.Do(cancel)
				}
			})
			find := func(context.Context) ([]drive.Found, error) { return readers, nil }
			res, err := Watch(ctx, Config{Image: image, Verify: true, StopTimeout: tc.timeout, SaysStop: saysStop, Observer: obs}, find)
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
			if tc.done != o.Verified() || tc.done != holds(card, img) {
				t.Errorf("verified %v, holds the image %v (%v), want %v", o.Verified(), holds(card, img), o.Err, tc.done)
			}
		})
	}
}
