package main

import (
	"context"
	"fmt"
	"sync"
	"time"

	"usbflash/imagesrc"
	"usbflash/usbms"
	"usbflash/usbms/libusb"
)

// watchInterval is how often --watch looks for readers and cards: often
// enough that a person sees the write start as the card goes in, rarely
// enough that idle readers cost nothing.
const watchInterval = time.Second

// foundReader is a reader --watch can see. key stays the same while the
// reader stays plugged in.
type foundReader struct {
	key, name string
	info      *libusb.Info // nil for simulated readers
	open      func(ctx context.Context) (usbms.Endpoint, func() error, error)
}

// readerFinder lists the readers present now.
type readerFinder func(ctx context.Context) ([]foundReader, error)

// usbReaders finds every supported USB reader.
func usbReaders(force bool) readerFinder {
	return func(ctx context.Context) ([]foundReader, error) {
		infos, err := libusb.List(ctx)
		if err != nil {
			return nil, err
		}
		var out []foundReader
		for _, info := range infos {
			if !info.Supported {
				continue
			}
			info := info
			out = append(out, foundReader{
				key: fmt.Sprintf("%s#%d.%d", info.PortPath, info.Bus, info.Address), name: usbName(info), info: &info,
				open: func(ctx context.Context) (usbms.Endpoint, func() error, error) {
					d, err := libusb.Open(ctx, info, libusb.OpenOptions{Force: force})
					if err != nil {
						return nil, nil, err
					}
					return d, d.Close, nil
				},
			})
		}
		return out, nil
	}
}

// watchedReader is a reader --watch holds open, and what each slot holds.
type watchedReader struct {
	found  foundReader
	tr     *usbms.Transport
	close  func() error
	writes sync.WaitGroup
	slots  []slotState
}

// slotState remembers whether the card in a slot was written, so a card
// that stays in is written once; an empty slot forgets it.
type slotState struct {
	busy, written bool
}

// watcher is the state of `write --watch`.
type watcher struct {
	a        *app
	image    string
	f        writeFlags
	transfer int64
	rep      reporter
	find     readerFinder

	mu      sync.Mutex // guards readers' slots and the session
	readers map[string]*watchedReader
	ignored map[string]bool // readers that could not be opened, said once
	s       *session
}

// watch writes every card that appears in any reader, once, until ctx is
// done (Ctrl-C). Each card gets the checks of a single write and its own
// decode; every outcome goes to the table, the JSON events and --report.
func (a *app) watch(ctx context.Context, rep reporter, image string, f writeFlags, transfer int64, find readerFinder) error {
	if !f.yes {
		return &usageError{"--watch writes every card that appears without asking: add --yes"}
	}
	// The image must open now, not at the first card.
	src, err := imagesrc.Open(image)
	if err != nil {
		return sourceError(err)
	}
	src.Close()
	w := &watcher{a: a, image: image, f: f, transfer: transfer, rep: rep, find: find,
		readers: map[string]*watchedReader{}, ignored: map[string]bool{}, s: &session{Image: image, Started: time.Now()}}
	msg := fmt.Sprintf("Watching for cards to write %s to; Ctrl-C to stop", image)
	w.rep.event(&noteEvent{eventHeader{Event: evNote}, msg}, msg)
	tick := time.NewTicker(watchInterval)
	defer tick.Stop()
	for {
		w.scan(ctx)
		select {
		case <-ctx.Done():
			return w.stop()
		case <-tick.C:
		}
	}
}

// scan opens new readers, lets go of vanished ones and starts a write for
// every slot that holds a card not yet written.
func (w *watcher) scan(ctx context.Context) {
	found, err := w.find(ctx)
	if err != nil {
		w.once("list", fmt.Sprintf("cannot list readers: %v", err))
		return
	}
	present := map[string]bool{}
	for _, fr := range found {
		present[fr.key] = true
		if _, ok := w.readers[fr.key]; ok || w.ignored[fr.key] {
			continue
		}
		ep, closer, err := fr.open(ctx)
		if err != nil {
			w.once(fr.key, fmt.Sprintf("leaving %s alone: %v", fr.name, err))
			continue
		}
		tr := usbms.NewTransport(ep, usbms.TransportOptions{Name: fr.name})
		maxLUN, err := tr.MaxLUN(ctx)
		if err != nil {
			closer()
			w.once(fr.key, fmt.Sprintf("leaving %s alone: %v", fr.name, err))
			continue
		}
		w.readers[fr.key] = &watchedReader{found: fr, tr: tr, close: closer, slots: make([]slotState, maxLUN+1)}
	}
	for key, r := range w.readers {
		if !present[key] {
			r.writes.Wait() // a write to a vanished reader fails on its own
			r.close()
			delete(w.readers, key)
			continue
		}
		for n := range r.slots {
			w.check(ctx, r, n)
		}
	}
	for key := range w.ignored {
		if !present[key] {
			delete(w.ignored, key) // plugged in again later: try again
		}
	}
}

// check looks at one slot and starts its write when it holds a new card.
func (w *watcher) check(ctx context.Context, r *watchedReader, n int) {
	w.mu.Lock()
	st := r.slots[n]
	w.mu.Unlock()
	if st.busy {
		return
	}
	lun, err := usbms.OpenLUN(ctx, r.tr, n, usbms.LUNOptions{ReadyWait: watchInterval})
	if err != nil {
		if usbms.IsNoMedium(err) {
			w.mu.Lock()
			r.slots[n].written = false // empty: the next card is new
			w.mu.Unlock()
		}
		return
	}
	if st.written {
		return
	}
	name := r.found.name
	if len(r.slots) > 1 {
		name = fmt.Sprintf("%s/%d", name, n)
	}
	d := &device{name: name, dev: lun, lun: lun, usb: r.found.info}
	w.mu.Lock()
	r.slots[n].busy = true
	w.mu.Unlock()
	r.writes.Add(1)
	go func() {
		defer r.writes.Done()
		w.write(ctx, d)
		w.mu.Lock()
		r.slots[n] = slotState{written: true}
		w.mu.Unlock()
	}()
}

// write writes the image to one card with the checks of a single write,
// and records the outcome.
func (w *watcher) write(ctx context.Context, d *device) {
	c := &card{d: d, outcome: cardOutcome{Target: d.name, Capacity: d.capacity()}}
	if d.usb != nil {
		c.outcome.Serial = d.usb.Serial
	}
	src, err := imagesrc.Open(w.image)
	if err != nil {
		c.fail(sourceError(err))
		w.a.cardEvents(w.rep, []*card{c})
	} else {
		defer src.Close()
		if err := checkBeforeWrite(d, src); err != nil {
			c.fail(err)
			w.a.cardEvents(w.rep, []*card{c})
		} else {
			w.a.writeCards(ctx, w.rep, w.image, src, []*card{c}, w.f, w.transfer)
		}
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	w.s.Cards = append(w.s.Cards, c.outcome)
	if w.s.SHA256 == "" {
		w.s.SHA256 = c.outcome.SHA256
	}
	if w.f.report != "" {
		if err := w.s.save(w.f.report); err != nil {
			w.rep.event(&noteEvent{eventHeader{Event: evNote}, err.Error()}, "usbflash: "+err.Error())
		}
	}
}

// stop waits for the writes under way, lets go of every reader and says
// how the session went.
func (w *watcher) stop() error {
	for _, r := range w.readers {
		r.writes.Wait()
		r.close()
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.a.summarizeSession(w.rep, w.s, w.f, nil)
}

// once says msg the first time key is seen, and then remembers key.
func (w *watcher) once(key, msg string) {
	if w.ignored[key] {
		return
	}
	w.ignored[key] = true
	w.rep.event(&noteEvent{eventHeader{Event: evNote}, msg}, "usbflash: "+msg)
}
