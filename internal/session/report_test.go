package session

import (
	"fmt"
	"sync"
)

// MemReport is a ReportFile that keeps in memory what a session gives
// it: each card's record as it finished, and the report's head then.
// It is exported for promises_test.go, package session_test, which runs
// internal/station's Watch (an importer of this package) too.
type MemReport struct {
	mu    sync.Mutex
	cards []Record
	head  Report // the last Add's, without its cards
}

func (m *MemReport) Add(r *Report, card Record) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.cards = append(m.cards, card)
	m.head = Report{Image: r.Image, SHA256: r.SHA256, Started: r.Started}
	return nil
}

// Records are the cards added so far.
func (m *MemReport) Records() []Record {
	m.mu.Lock()
	defer m.mu.Unlock()
	return append([]Record(nil), m.cards...)
}

// Text is everything the report holds, as a file of it would show it.
func (m *MemReport) Text() string {
	m.mu.Lock()
	defer m.mu.Unlock()
	return fmt.Sprintf("%+v %+v", m.head, m.cards)
}
