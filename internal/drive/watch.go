package drive

import (
	"context"
	"fmt"
	"sync"
	"time"

	"github.com/usbflash/usbflash/internal/failure"
	"github.com/usbflash/usbflash/usbms"
	"github.com/usbflash/usbflash/usbms/backend"
	"github.com/usbflash/usbflash/usbms/sim"
	"github.com/usbflash/usbflash/usbms/usbdev"
)

// Found is a reader a Finder sees. Key stays the same while the reader
// stays plugged in.
type Found struct {
	Key, Name string
	Info      *usbdev.Info // nil for simulated readers
	spec      Spec         // the target that selects it (image checks)
	// open opens the reader, refusing it when it is, or holds, image.
	open func(ctx context.Context, image string) (usbms.Endpoint, func() error, error)
}

// Finder lists the readers present now.
type Finder func(ctx context.Context) ([]Found, error)

// USBFinder finds every supported USB reader. Force takes readers whose
// disk the system uses.
func USBFinder(force bool) Finder {
	return func(ctx context.Context) ([]Found, error) {
		infos, err := backend.List(ctx)
		if err != nil {
			return nil, err
		}
		var out []Found
		for _, info := range infos {
			if !info.Supported {
				continue
			}
			name := USBName(info)
			spec := Spec{Scheme: USB, Raw: name, LUN: -1, index: -1}
			out = append(out, Found{
				Key: fmt.Sprintf("%s#%d.%d", info.PortPath, info.Bus, info.Address), Name: name, Info: &info,
				spec: spec,
				open: func(ctx context.Context, image string) (usbms.Endpoint, func() error, error) {
					// --watch takes each reader on the transport auto
					// chooses.
					d, _, err := openChosen(ctx, info, usbdev.OpenOptions{Force: force, CheckDisks: imageOnReader(image, spec)}, "", usbms.QuirkOverrides{})
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

// SimReader is a simulated reader (spec as after "sim:") that a Finder can
// show, so --watch can be tried and tested without hardware.
func SimReader(spec string) Found {
	t, _ := Parse("sim:" + spec)
	return Found{Key: spec, Name: "sim:" + t.Path, spec: t, open: func(_ context.Context, image string) (usbms.Endpoint, func() error, error) {
		if err := sameFileAsImage(image, t); err != nil {
			return nil, nil, err
		}
		d, err := sim.Open(t.spec)
		if err != nil {
			return nil, nil, err
		}
		return d, d.Close, nil
	}}
}

// WatchOptions tune Watch.
type WatchOptions struct {
	Options
	// Interval is how often readers and slots are looked at.
	Interval time.Duration
	// OnNote is told what concerns no card: readers that cannot be
	// listed for a while.
	OnNote func(msg string)
	// OnReaders is told how many readers are open after a look at them
	// that changed the number (a station's monitoring shows it).
	OnReaders func(present int)
	// OnSlot is told, for every slot of the readers watched, whether it
	// holds a card, each time that changes: a card inserted or taken out,
	// a reader plugged in (its slots) or unplugged (a card in it gone).
	// slot is the name its card is given under.
	OnSlot func(slot string, card bool)
}

// DefaultWatchInterval is often enough that a person sees the write start
// as the card goes in, rarely enough that idle readers cost nothing.
const DefaultWatchInterval = time.Second

// CanFind is the error Watch ends with at once when find cannot list
// readers at all (no USB access, no USB support), nil when it can: a
// caller with work to do before watching (a download) asks first.
func CanFind(ctx context.Context, find Finder) error {
	if _, err := find(ctx); err != nil {
		return &Error{class: failure.Device, Msg: fmt.Sprintf("cannot list readers: %v", err), Err: err}
	}
	return nil
}

// Watch calls card for every card that appears in any reader Finder shows,
// once per insertion, until ctx is done: a card that stays in is not given
// again, an emptied slot forgets it, a reader that comes back is new. Each
// call runs on its own goroutine with the opened card, or with the error
// that refused the reader (in use by the system or another program, the
// disk the image lies on), once per appearance; the card's Device is not
// closed by card (its reader closes when it goes away). Watch returns once
// every call has returned: nil when ctx ended it, the error when the
// readers cannot be listed at all (no USB access, no USB support), which
// no waiting mends.
func Watch(ctx context.Context, find Finder, opts WatchOptions, card func(ctx context.Context, d *Device, err error)) error {
	if opts.Interval <= 0 {
		opts.Interval = DefaultWatchInterval
	}
	if err := CanFind(ctx, find); err != nil {
		return err
	}
	w := &watcher{find: find, opts: opts, card: card, readers: map[string]*watchedReader{}, refused: map[string]bool{}}
	tick := time.NewTicker(opts.Interval)
	defer tick.Stop()
	for {
		w.scan(ctx)
		select {
		case <-ctx.Done():
			w.stop()
			return nil
		case <-tick.C:
		}
	}
}

// watchedReader is a reader Watch holds open, and what each slot holds.
type watchedReader struct {
	found  Found
	tr     *usbms.Transport
	close  func() error
	writes sync.WaitGroup
	slots  []slotState
	facts  slotMaker // makes the slots' devices, with the reader's facts
}

// slotState remembers whether the card in a slot was given, so a card
// that stays in is given once; an empty slot forgets it.
type slotState struct {
	busy, done bool
	told       slotTold // what OnSlot was last told
}

// slotTold is what OnSlot was told of a slot.
type slotTold int8

const (
	toldNothing slotTold = iota
	toldCard
	toldEmpty
)

type watcher struct {
	find    Finder
	opts    WatchOptions
	card    func(context.Context, *Device, error)
	mu      sync.Mutex // guards the readers' slots
	readers map[string]*watchedReader
	refused map[string]bool // readers that could not be opened, said once
	calls   sync.WaitGroup
	// listFailed: the last listing failed (said once until one works).
	listFailed bool
	told       int // the number of readers OnReaders was last told
}

// scan opens new readers, lets go of vanished ones and gives every slot
// that holds a card not yet given.
func (w *watcher) scan(ctx context.Context) {
	found, err := w.find(ctx)
	if err != nil {
		if !w.listFailed && w.opts.OnNote != nil {
			w.opts.OnNote(fmt.Sprintf("cannot list readers: %v", err))
		}
		w.listFailed = true
		return
	}
	w.listFailed = false
	present := map[string]bool{}
	for _, fr := range found {
		present[fr.Key] = true
		if _, ok := w.readers[fr.Key]; ok || w.refused[fr.Key] {
			continue
		}
		ep, closer, err := fr.open(ctx, w.opts.Image)
		if err != nil {
			w.refuse(ctx, fr.Key, openError(fr.spec, err))
			continue
		}
		rq, topts := usbms.ReaderSetup(ep, fr.Info, w.opts.overrides(w.opts.Readers))
		topts.Name = fr.Name
		usbID := usbms.ReaderID(ep, fr.Info)
		switch {
		case w.opts.OnNotice != nil:
			topts.OnNotice = func(n usbms.Notice) { w.opts.OnNotice(fr.Name, noticeOf(n, usbID)) }
		case w.opts.OnRecovery != nil:
			topts.OnRecovery = func(step string) { w.opts.OnRecovery(fr.Name, step) }
		}
		topts.QueueDepth = w.opts.Readers.queueDepth()
		tr := usbms.NewTransport(ep, topts)
		maxLUN, err := tr.MaxLUN(ctx)
		if err != nil {
			closer()
			w.refuse(ctx, fr.Key, &Error{class: failure.Device, Target: fr.Name, Msg: fmt.Sprintf("%s: asking for the number of LUNs: %v", fr.Name, err), Err: err})
			continue
		}
		w.readers[fr.Key] = &watchedReader{found: fr, tr: tr, close: closer, slots: make([]slotState, maxLUN+1), facts: readerOf(ep, fr.Info, nil, rq)}
	}
	for key, r := range w.readers {
		if !present[key] {
			r.writes.Wait() // a write to a vanished reader fails on its own
			r.close()
			for n := range r.slots {
				if r.slots[n].told == toldCard && w.opts.OnSlot != nil {
					w.opts.OnSlot(r.slotName(n), false)
				}
			}
			delete(w.readers, key)
			continue
		}
		for n := range r.slots {
			w.check(ctx, r, n)
		}
	}
	for key := range w.refused {
		if !present[key] {
			delete(w.refused, key) // plugged in again later: try again
		}
	}
	if n := len(w.readers); n != w.told && w.opts.OnReaders != nil {
		w.opts.OnReaders(n)
		w.told = n
	}
}

// refuse reports a reader that cannot be used, once while it stays.
func (w *watcher) refuse(ctx context.Context, key string, err error) {
	if w.refused[key] {
		return
	}
	w.refused[key] = true
	w.calls.Add(1)
	go func() {
		defer w.calls.Done()
		w.card(ctx, nil, err)
	}()
}

// check looks at one slot and gives its card when it holds a new one.
func (w *watcher) check(ctx context.Context, r *watchedReader, n int) {
	w.mu.Lock()
	st := r.slots[n]
	w.mu.Unlock()
	if st.busy {
		return
	}
	slot := usbms.ProbeLUN(ctx, r.tr, n, usbms.LUNOptions{ReadyWait: w.opts.Interval, SpinUpWait: w.opts.Interval})
	if slot.LUN == nil {
		if slot.NoMedium {
			w.mu.Lock()
			r.slots[n].done = false // empty: the next card is new
			w.mu.Unlock()
			w.tell(r, n, toldEmpty)
		}
		return
	}
	w.tell(r, n, toldCard)
	if st.done {
		return
	}
	d := &Device{Name: r.slotName(n), Dev: r.facts.lun(slot.LUN)}
	w.mu.Lock()
	r.slots[n].busy = true
	w.mu.Unlock()
	r.writes.Add(1)
	go func() {
		defer r.writes.Done()
		w.card(ctx, d, nil)
		w.mu.Lock()
		r.slots[n].busy, r.slots[n].done = false, true
		w.mu.Unlock()
	}()
}

// slotName is the name of slot n's card: the reader's, with the LUN when
// it has several.
func (r *watchedReader) slotName(n int) string {
	if len(r.slots) > 1 {
		return fmt.Sprintf("%s/%d", r.found.Name, n)
	}
	return r.found.Name
}

// tell tells OnSlot what slot n holds, when that changed.
func (w *watcher) tell(r *watchedReader, n int, what slotTold) {
	w.mu.Lock()
	changed := r.slots[n].told != what
	r.slots[n].told = what
	w.mu.Unlock()
	if changed && w.opts.OnSlot != nil {
		w.opts.OnSlot(r.slotName(n), what == toldCard)
	}
}

// stop waits for the calls under way and lets go of every reader.
func (w *watcher) stop() {
	for _, r := range w.readers {
		r.writes.Wait()
		r.close()
	}
	w.calls.Wait()
}
