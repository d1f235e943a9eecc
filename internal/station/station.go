// Package station is a flashing station (usbflash write --watch, and
// erase --watch and format --watch): it writes one image (or each card's
// own blocks, laid out for its size) to every card that appears in any
// reader, once per insertion, until it is stopped, each card with the
// checks, progress, verify and outcome of a single write (a
// session.Cards), within one memory bound for all the writes at once. A service's stop finishes the
// cards being written for up to a timeout. Its presenters are beside it:
// slotlog (a log per slot) and metrics (Prometheus).
package station

import (
	"context"
	"fmt"
	"time"

	"github.com/usbflash/usbflash/internal/drive"
	"github.com/usbflash/usbflash/internal/failure"
	"github.com/usbflash/usbflash/internal/session"
)

// Config is a station's choices: the write of each card, and what a stop
// request does.
type Config struct {
	// Write is how every card is written (its image, checks, verify,
	// report, observer), as a single write's.
	Write session.Config
	// StopTimeout: when ctx ends (a stop request: SIGTERM to a service) no
	// new card is taken and the cards being written are finished, for up
	// to this long, before they are stopped after the command in flight;
	// 0 stops them at once.
	StopTimeout time.Duration
	// SaysStop, if set, is called by Watch with a StopTimeout, which says
	// itself (a Note) what a stop request does: whatever announces stop
	// requests (the process's signal handler) must not say "stopped after
	// the command in flight" then. Watch calls what it returns as it
	// returns.
	SaysStop func() (remove func())
}

// Watch writes the image (or, with Write.Blocks, each card's own blocks)
// to every card that appears in any reader find shows, once per insertion, until ctx is done (Ctrl-C): a flashing
// station. Each card gets the checks, progress, verify and outcome of a
// single write, with its own decode; the writes under way when ctx ends
// stop after the command in flight and sync. The buffers of all the
// writes at once stay within blockdev.MaxBufferMemory: a card waits for a
// free set when they would not.
//
// With Config.StopTimeout the end of ctx is a service's stop: no new card
// is taken, the cards being written are finished for up to that long, and
// a *StopTimeoutError says how many were still being written then.
//
// Watch returns nil when every card succeeded (or none came), and a
// *session.CardsError when some did not.
func Watch(ctx context.Context, cfg Config, find drive.Finder) (*session.Result, error) {
	if cfg.StopTimeout > 0 && cfg.SaysStop != nil {
		defer cfg.SaysStop()()
	}
	// The image must open now, not at the first card; it stays open for
	// its checksum, hashed once for every card. Readers that cannot be
	// listed at all are said before an image is downloaded, not after.
	cards, err := session.TakeCards(ctx, cfg.Write, func(ctx context.Context) error { return drive.CanFind(ctx, find) })
	if err != nil {
		return cards.Result(), err
	}
	defer cards.Close()
	cards.Emit(session.Note{Message: fmt.Sprintf("Watching for cards to write %s to; Ctrl-C to stop", cards.Image())})

	// Bounded at the size asked: a card that takes less needs less.
	sets := cards.BufferSets()
	// What the exit policy needs of the cards done, not the cards (their
	// readers' handles, closed), which a week of running would pile up.
	var p policy
	opts := drive.WatchOptions{Options: cards.OpenOptions(),
		OnNote:    func(msg string) { cards.Emit(session.Note{Message: msg}) },
		OnReaders: func(n int) { cards.Emit(session.Readers{Present: n}) },
		OnSlot:    func(slot string, card bool) { cards.Emit(session.Slot{Card: slot, Present: card}) }}
	writes, cut := drain(ctx, cfg.StopTimeout, cards)
	err = drive.Watch(ctx, find, opts, func(_ context.Context, d *drive.Device, err error) {
		n := p.found()
		var o *session.Outcome
		if err != nil {
			o = cards.Failed(n, err)
		} else {
			sets <- struct{}{}
			o = cards.Write(writes, d, n)
			<-sets
		}
		p.done(o)
	})
	if err != nil {
		return cards.Result(), err
	}
	if n := cut(); n > 0 {
		return cards.Result(), &StopTimeoutError{Timeout: cfg.StopTimeout, Cut: n}
	}
	return cards.Result(), p.err()
}

// drain is the context the cards' writes run under. Without a timeout it
// is ctx: a stop request stops them after the command in flight. With
// one, a stop request takes no new card, and the cards being written are
// finished for up to timeout, then stopped as a stop request stops them
// (the first transfer left zeroed). cut, called once every write
// returned, is how many cards the timeout stopped.
func drain(ctx context.Context, timeout time.Duration, cards *session.Cards) (writes context.Context, cut func() int) {
	if timeout <= 0 {
		return ctx, func() int { return 0 }
	}
	writes, cancel := context.WithCancel(context.WithoutCancel(ctx))
	timedOut := make(chan struct{})
	go func() {
		select {
		case <-ctx.Done():
		case <-writes.Done():
			return
		}
		cards.Emit(session.Note{Message: fmt.Sprintf("Stop requested: no new card is taken; the cards being written are finished, for up to %v, then stopped after the command in flight", timeout)})
		t := time.NewTimer(timeout)
		defer t.Stop()
		select {
		case <-t.C:
			close(timedOut)
			cards.Emit(session.Note{Message: fmt.Sprintf("The cards still being written after %v are stopped after the command in flight", timeout)})
			cancel()
		case <-writes.Done():
		}
	}()
	return writes, func() int {
		cancel()
		select {
		case <-timedOut:
		default:
			return 0
		}
		return cards.Tally().Interrupted
	}
}

// StopTimeoutError is a station (Watch) stopped with cards still being
// written when its StopTimeout ran out: they were stopped after the
// command in flight, their first transfer left zeroed.
type StopTimeoutError struct {
	Timeout time.Duration
	Cut     int // cards stopped
}

func (e *StopTimeoutError) Error() string {
	return fmt.Sprintf("stopped: %d card(s) were still being written %v after the stop request, and were stopped with their first transfer zeroed", e.Cut, e.Timeout)
}

// Class is Interrupted: a stop request ended the cards.
func (e *StopTimeoutError) Class() failure.Class { return failure.Interrupted }
