package session

import (
	"fmt"
	"sync"
)

// memReport is a ReportFile that keeps in memory what a session gives
// it: each card's record as it finished, and the report's head then.
type memReport struct {
	mu    sync.Mutex
	cards []Record
	head  Report // the last Add's, without its cards
}

func (m *memReport) Add(r *Report, card Record) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.cards = append(m.cards, card)
	m.head = Report{Image: r.Image, SHA256: r.SHA256, Started: r.Started}
	return nil
}

// records are the cards added so far.
func (m *memReport) records() []Record {
	m.mu.Lock()
	defer m.mu.Unlock()
	return append([]Record(nil), m.cards...)
}

// text is everything the report holds, as a file of it would show it.
func (m *memReport) text() string {
	m.mu.Lock()
	defer m.mu.Unlock()
	return fmt.Sprintf("%+v %+v", m.head, m.cards)
}
