package station

import (
	"sync"

	"github.com/usbflash/usbflash/internal/failure"
	"github.com/usbflash/usbflash/internal/session"
)

// policy is a station's exit policy over the cards it finished, kept as
// counts and one error of each class (what session.CardsError's class
// needs), not as the cards: their readers' handles are closed, and a week
// of running would pile them up. Each card's error is in its record.
type policy struct {
	mu         sync.Mutex
	cards      int // found, for {n}
	ok, failed int
	errs       []error
}

// found counts a card found and returns its number, from 1.
func (p *policy) found() int {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.cards++
	return p.cards
}

// done counts a finished card.
func (p *policy) done(o *session.Outcome) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if o.Err == nil {
		p.ok++
		return
	}
	p.failed++
	for _, e := range p.errs {
		if failure.Of(e) == failure.Of(o.Err) {
			return
		}
	}
	p.errs = append(p.errs, o.Err)
}

// err is nil when every card succeeded (or none came), else a
// *session.CardsError.
func (p *policy) err() error {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.failed == 0 {
		return nil
	}
	return &session.CardsError{Succeeded: p.ok, Failed: p.failed, Errs: p.errs}
}
