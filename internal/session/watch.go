package session

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/usbflash/usbflash/internal/drive"
	"github.com/usbflash/usbflash/internal/failure"
	"github.com/usbflash/usbflash/pipeline"
	"github.com/usbflash/usbflash/pipeline/blockdev"
	"github.com/usbflash/usbflash/usbms"
)

// RecentCards is how many finished cards a Watch session's Result keeps
// (Result.Cards); Result.Tally counts them all. A station that runs for
// a week must not keep every card it wrote: its report file holds them.
const RecentCards = 16

// Watch writes the image to every card that appears in any reader find
// shows, once per insertion, until ctx is done (Ctrl-C): a flashing
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
// *CardsError when some did not.
func Watch(ctx context.Context, cfg Config, find drive.Finder) (*Result, error) {
	s := newSession(cfg)
	s.keep = RecentCards
	if cfg.StopTimeout > 0 && cfg.SaysStop != nil {
		defer cfg.SaysStop()()
	}
	if err := s.resolveCatalog(ctx); err != nil {
		return s.res, err
	}
	cfg.Image = s.cfg.Image // the catalog entry's URL
	s.noteCacheUnused()
	if err := cfg.VerifyMethod.CheckWrite(); err != nil {
		return s.res, err
	}
	if err := checkSizes(s.transfer, cfg.Buffers, 0, 1, readAhead(cfg.Image)); err != nil {
		return s.res, err
	}
	if err := checkCustomize(&cfg); err != nil {
		return s.res, err
	}
	// Readers that cannot be listed at all are said before an image is
	// downloaded, not after.
	if err := drive.CanFind(ctx, find); err != nil {
		return s.res, err
	}
	// The image must open now, not at the first card; it stays open for
	// its checksum, hashed once for every card. A URL is read once,
	// into the cache, before the first card.
	img, err := s.openTrusted(ctx, readPerCard)
	if err != nil {
		return s.res, err
	}
	defer img.close()
	src := img.src
	plan, err := s.planWrite(ctx, src, cfg.BlockMap, true)
	if err != nil {
		return s.res, err
	}
	buffers := buffersFor(s.transfer, cfg.Buffers)
	s.emit(Started{Image: displayImage(cfg.Image), Source: src, TransferSize: s.transfer, Buffers: buffers, Watch: true})
	if err := s.trust(img, plan); err != nil {
		return s.res, err
	}
	// Each card reads its own source: the station's first bytes, read
	// to decide, are not written.
	if _, err := s.inspectImage(src); err != nil {
		return s.res, err
	}
	s.startDownload(ctx, img.sum, src, "as it is written")
	s.emit(Note{Message: fmt.Sprintf("Watching for cards to write %s to; Ctrl-C to stop", displayImage(cfg.Image))})

	// Bounded at the size asked: a card that takes less needs less.
	sets := make(chan struct{}, max(blockdev.MaxBufferMemory/pipeline.BufferMemory(s.transfer, buffers), 1))
	// What the exit policy needs of the cards done, not the cards (their
	// readers' handles, closed), which a week of running would pile up.
	ok, failed := 0, 0
	var errs []error // one error of each class: what CardsError.Class needs
	found := 0       // cards found, for {n}
	opts := drive.WatchOptions{Options: drive.Options{Force: cfg.Force, Image: cfg.Image, Readers: cfg.Readers,
		OnNotice: func(reader string, n usbms.Notice) { s.emit(Note{Card: reader, Message: n.Text, Notice: &n}) }},
		OnNote:    func(msg string) { s.emit(Note{Message: msg}) },
		OnReaders: func(n int) { s.emit(Readers{Present: n}) },
		OnSlot:    func(slot string, card bool) { s.emit(Slot{Card: slot, Present: card}) }}
	writes, cut := s.drain(ctx)
	err = drive.Watch(ctx, find, opts, func(_ context.Context, d *drive.Device, err error) {
		s.mu.Lock()
		found++
		c := &card{d: d, n: found}
		s.mu.Unlock()
		if err != nil {
			c.out.Target = "reader"
			var te *drive.Error
			if errors.As(err, &te) && te.Target != "" {
				c.out.Target = te.Target
			}
			c.fail(err)
		} else {
			sets <- struct{}{}
			defer func() { <-sets }()
			s.writeOne(writes, c)
		}
		// Its digests (32 bytes a write command: 128 KiB for a 4 GiB
		// image) served its verify; a station that keeps every outcome
		// for a week must not keep them too.
		c.out.Write.Digests.List, c.digests = nil, nil
		s.record(c)
		s.mu.Lock()
		if c.failed() {
			errs = appendClass(errs, c.out.Err)
			failed++
		} else {
			ok++
		}
		s.mu.Unlock()
	})
	if err != nil {
		return s.res, err
	}
	if n := cut(); n > 0 {
		return s.res, &StopTimeoutError{Timeout: cfg.StopTimeout, Cut: n}
	}
	if failed == 0 {
		return s.res, nil
	}
	return s.res, &CardsError{Succeeded: ok, Failed: failed, Errs: errs}
}

// drain is the context the cards' writes run under. Without a
// StopTimeout it is ctx: a stop request stops them after the command in
// flight. With one, a stop request takes no new card, and the cards being
// written are finished for up to StopTimeout, then stopped as a stop
// request stops them (the first transfer left zeroed). cut, called once
// every write returned, is how many cards the timeout stopped.
func (s *session) drain(ctx context.Context) (writes context.Context, cut func() int) {
	if s.cfg.StopTimeout <= 0 {
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
		s.emit(Note{Message: fmt.Sprintf("Stop requested: no new card is taken; the cards being written are finished, for up to %v, then stopped after the command in flight", s.cfg.StopTimeout)})
		t := time.NewTimer(s.cfg.StopTimeout)
		defer t.Stop()
		select {
		case <-t.C:
			close(timedOut)
			s.emit(Note{Message: fmt.Sprintf("The cards still being written after %v are stopped after the command in flight", s.cfg.StopTimeout)})
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
		s.mu.Lock()
		defer s.mu.Unlock()
		return s.res.Tally.Interrupted
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

// writeOne writes one card --watch found: its own decode, the checks, the
// write.
func (s *session) writeOne(ctx context.Context, c *card) {
	src, err := s.openImage(ctx, s.download)
	if err != nil {
		c.out.Target = c.d.Name
		c.fail(err)
		return
	}
	defer src.Close()
	s.opened(ctx, c, src)
	if c.failed() {
		return
	}
	s.writeCards(ctx, src, &writePlan{}, []*card{c})
}

// appendClass adds err to errs unless an error of its class is there: a
// station's failed cards over a week are a few classes, and the class of
// their CardsError is all that is asked of them (each card's error is in
// its record).
func appendClass(errs []error, err error) []error {
	for _, e := range errs {
		if failure.Of(e) == failure.Of(err) {
			return errs
		}
	}
	return append(errs, err)
}
