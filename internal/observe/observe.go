// Package observe is the shape the sessions tell what they do in
// (session's write, verify and backup, fakecheck's check, cardbench's
// bench): an Observer of Events, and the events that are the same thing in
// every session, a note passed on and a step's progress, defined once. It
// names no transport: a reader's notice comes in this package's words
// (Notice), put in them where the reader is opened (internal/drive).
package observe

import (
	"time"

	"github.com/usbflash/usbflash/internal/failure"
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
	Notice *Notice
}

// Notice is what a reader told its user while it worked (a recovery
// step, commands made smaller, two LUNs for one medium, a setting that
// does less than it asks), as the facts a presenter needs to count it or
// to advise on it.
type Notice struct {
	Kind NoticeKind
	Text string // the facts, in a few words
	// Failed and Cap, for NoticeTransferCap: the size of the command that
	// failed and the largest command sent from now on, in bytes.
	Failed, Cap int64
	// USBID is the reader's "VID:PID", "" when it is not known.
	USBID string
	// Setting, for NoticeSetting: the setting that does less than it asks,
	// named in Text as it is here.
	Setting failure.Setting
	// Step, for NoticeRecovery: which step of the recovery ladder is
	// taken.
	Step RecoveryStep
}

// NoticeKind says what a Notice is about.
type NoticeKind int

// Kinds of Notice.
const (
	// NoticeRecovery is a step of the reader's recovery ladder, about to
	// be taken (each is followed by the command again: a retry).
	NoticeRecovery NoticeKind = iota
	// NoticeTransferCap says the reader failed a large READ or WRITE and
	// that smaller commands are sent from now on.
	NoticeTransferCap
	// NoticeOneMedium says two LUNs of the reader answer for one medium,
	// and one LUN is used.
	NoticeOneMedium
	// NoticeSetting says a setting (Notice.Setting) does nothing on this
	// reader, or less than it asks, and why.
	NoticeSetting
)

// RecoveryStep names a step of a reader's recovery ladder.
type RecoveryStep string

// The steps.
const (
	// StepReset is a reset of the reader's protocol (Bulk-Only Mass
	// Storage Reset with its halts cleared).
	StepReset RecoveryStep = "reset"
	// StepPortReset is a reset of the reader's USB port: it re-enumerates.
	StepPortReset RecoveryStep = "port_reset"
	// StepLUNReset is a reset of one logical unit (UAS LOGICAL UNIT
	// RESET).
	StepLUNReset RecoveryStep = "lun_reset"
)

// RecoverySteps are every RecoveryStep, in the ladder's order.
func RecoverySteps() []RecoveryStep { return []RecoveryStep{StepReset, StepPortReset, StepLUNReset} }

// Progress is how far one step of a session got: Done of Total (0: the
// step does not count), Elapsed since the session began.
type Progress struct {
	Step        string
	Done, Total int64
	Elapsed     time.Duration
}

func (Note) SessionEvent()     {}
func (Progress) SessionEvent() {}
