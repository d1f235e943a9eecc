package session

import (
	"fmt"
	"sync"
	"time"

	"github.com/usbflash/usbflash/internal/image"
	"github.com/usbflash/usbflash/internal/lib/units"
	"github.com/usbflash/usbflash/pipeline"
	"github.com/usbflash/usbflash/pipeline/fanout"
)

// progressEvery is how often progress is told while nothing else says it:
// the engine's own reports stop while a group syncs, and cards verify on
// their own goroutines.
const progressEvery = 250 * time.Millisecond

// writeProgress turns the engine's reports and the cards' own counts into
// Progress events, a few times a second through the whole write and sync,
// also while the engine waits in a group's sync for a slow card, and while
// a download moves but the engine has nothing new to say (an xz block of
// tens of megabytes is decoded only once it has arrived whole).
type writeProgress struct {
	s     *session
	src   *image.Source
	cards []*card
	group *fanout.Group

	mu    sync.Mutex
	last  pipeline.Progress
	seen  bool
	fresh bool // the engine reported since the last tick
	start time.Time
	done  chan struct{}
	wg    sync.WaitGroup
}

func (s *session) watchWrite(src *image.Source, cards []*card, group *fanout.Group) *writeProgress {
	p := &writeProgress{s: s, src: src, cards: cards, group: group, start: time.Now(), done: make(chan struct{})}
	p.wg.Add(1)
	go func() {
		defer p.wg.Done()
		tick := time.NewTicker(progressEvery)
		defer tick.Stop()
		for {
			select {
			case <-p.done:
				return
			case <-tick.C:
				p.mu.Lock()
				last, seen, fresh := p.last, p.seen, p.fresh
				p.fresh = false
				p.mu.Unlock()
				switch {
				case seen && last.Phase == pipeline.PhaseSync:
					p.emit(last)
				case !fresh && (!seen || last.Phase == pipeline.PhaseWrite) && s.downloadProgress(src) != nil:
					if !seen {
						last = pipeline.Progress{Phase: pipeline.PhaseWrite, Total: expectedSize(src)}
					}
					last.Elapsed = time.Since(p.start)
					p.emit(last) // the download's count moves on
				}
			}
		}
	}()
	return p
}

// stream is the engine's progress callback.
func (p *writeProgress) stream(e pipeline.Progress) {
	p.mu.Lock()
	p.last, p.seen, p.fresh = e, true, true
	p.mu.Unlock()
	p.emit(e)
}

func (p *writeProgress) emit(e pipeline.Progress) {
	ev := Progress{Phase: e.Phase, Done: e.Done, Total: e.Total, Elapsed: e.Elapsed, CompressedDone: -1, CompressedTotal: -1}
	if p.src.Format != image.FormatRaw && e.Phase == pipeline.PhaseWrite {
		ev.CompressedDone, ev.CompressedTotal = p.src.CompressedRead(), p.src.CompressedSize
	}
	if e.Phase == pipeline.PhaseWrite {
		ev.Download = p.s.downloadProgress(p.src)
	}
	ev.Cards = make([]CardProgress, len(p.cards))
	var results []fanout.Result
	if p.group != nil {
		results = p.group.Results()
	}
	for i, c := range p.cards {
		cp := CardProgress{Card: c.d.Name, Phase: e.Phase, Done: e.Done, Total: e.Total}
		if results != nil {
			r := results[i]
			cp.Done, cp.Failed = min(r.Written, e.Done), r.Err != nil
			// A card that still has buffers to send is writing, whatever
			// the stream has reached.
			if e.Phase == pipeline.PhaseSync && r.Written < e.Done {
				cp.Phase = pipeline.PhaseWrite
			}
		}
		ev.Cards[i] = cp
	}
	p.s.emit(ev)
}

func (p *writeProgress) stop() {
	close(p.done)
	p.wg.Wait()
}

// verifyProgress gathers the cards' verify reports into one Progress a
// few times a second: Done is the cards' average, each card its own.
type verifyProgress struct {
	s     *session
	total int64
	start time.Time

	mu    sync.Mutex
	cards []CardProgress
	last  time.Time
}

func (s *session) watchVerify(cards []*card, total int64) *verifyProgress {
	p := &verifyProgress{s: s, total: total, start: time.Now(), cards: make([]CardProgress, len(cards))}
	for i, c := range cards {
		p.cards[i] = CardProgress{Card: c.d.Name, Phase: pipeline.PhaseVerify, Total: total, Failed: c.failed()}
	}
	p.emit(true)
	return p
}

func (p *verifyProgress) card(i int, e pipeline.Progress) {
	p.mu.Lock()
	p.cards[i].Done = e.Done
	p.mu.Unlock()
	p.emit(e.Done == e.Total)
}

func (p *verifyProgress) emit(force bool) {
	p.mu.Lock()
	now := time.Now()
	if !force && now.Sub(p.last) < progressEvery {
		p.mu.Unlock()
		return
	}
	p.last = now
	ev := Progress{Phase: pipeline.PhaseVerify, Total: p.total, Elapsed: now.Sub(p.start), CompressedDone: -1, CompressedTotal: -1,
		Cards: append([]CardProgress(nil), p.cards...)}
	live := 0
	for _, c := range p.cards {
		if !c.Failed {
			ev.Done += c.Done
			live++
		}
	}
	if live > 0 {
		ev.Done /= int64(live)
	}
	p.mu.Unlock()
	p.s.emit(ev)
}

// failed marks card i as failed.
func (p *verifyProgress) failed(i int) {
	p.mu.Lock()
	p.cards[i].Failed = true
	p.mu.Unlock()
	p.emit(true)
}

func (p *verifyProgress) stop() { p.emit(true) }

// downloadProgress is the download of src so far, nil for an image not
// read from a URL: its bytes, rate and resumes, and which side bounds the
// run (the download when the reader waited for the network most of the
// time).
func (s *session) downloadProgress(src *image.Source) *Download {
	d, ok := s.img.Download(src)
	if !ok {
		return nil
	}
	out := &Download{URL: d.URL, Bytes: d.Bytes, Total: d.Total, Elapsed: d.Elapsed, Resumes: d.Resumes, Bound: BoundWrite}
	if d.Elapsed > 0 {
		out.Rate = float64(d.Bytes) / d.Elapsed.Seconds()
		if d.Waited > d.Elapsed/2 {
			out.Bound = BoundDownload
		}
	}
	return out
}

// downloadNote says, once a write from a URL ended, what the download did
// beside the card: bytes, time, rate, resumes, and whether the writer
// waited for it (a download slower than the card sets the pace).
func (s *session) downloadNote(src *image.Source, res pipeline.WriteResult) {
	d := s.downloadProgress(src)
	if d == nil {
		return
	}
	msg := fmt.Sprintf("Downloaded %s from %s in %s (%s) while the card was written", units.FormatBytes(d.Bytes), d.URL,
		d.Elapsed.Round(time.Millisecond), units.FormatRate(float64(d.Bytes)/max(d.Elapsed.Seconds(), 1e-3)))
	if d.Resumes > 0 {
		msg += fmt.Sprintf(", after %d resumes", d.Resumes)
	}
	if res.Bound == pipeline.BoundDecoder {
		msg += fmt.Sprintf("; the writer waited %s for its data: the download (with the decoding) set the pace", res.DecoderWait.Round(time.Millisecond))
	} else if res.Bound == pipeline.BoundDevice {
		msg += "; the card set the pace"
	}
	s.note(msg)
}
