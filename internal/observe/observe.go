// Package observe is the shape the sessions tell what they do in (flash's
// write, verify and backup, fakecheck's check, cardbench's bench): an
// Observer of Events, and the events that are the same thing in every
// session, a note passed on and a step's progress, defined once.
package observe

import (
	"time"

	"github.com/usbflash/usbflash/usbms"
)

// Event is something a session tells its Observer: one of the event types
// of the session's package, or of this one. SessionEvent only marks them.
type Event interface {
	SessionEvent()
}

// Observer is told everything a session does, in order. Each session says
// from which goroutines; the calls never overlap.
type Observer interface {
	Observe(Event)
}

// Func adapts a function to Observer.
type Func func(Event)

// Observe calls f(e).
func (f Func) Observe(e Event) { f(e) }

// Note is something worth knowing that changes nothing: a session's own
// message, or a reader's notice passed on (a recovery step, commands made
// smaller). Card is "" for the session as a whole.
type Note struct {
	Card    string
	Message string
	// Notice is the reader's own notice the note passes on, nil for the
	// session's notes (Message says them).
	Notice *usbms.Notice
}

// Progress is how far one step of a session got: Done of Total (0: the
// step does not count), Elapsed since the session began.
type Progress struct {
	Step        string
	Done, Total int64
	Elapsed     time.Duration
}

func (Note) SessionEvent()     {}
func (Progress) SessionEvent() {}
