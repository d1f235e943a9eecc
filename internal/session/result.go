package session

import (
	"errors"

	"github.com/usbflash/usbflash/internal/failure"
	"github.com/usbflash/usbflash/internal/observe"
	"github.com/usbflash/usbflash/scsi"
	"github.com/usbflash/usbflash/usbms"
)

// Results a card can end with, as its record and the metrics name them:
// ResultOK, ResultRemoved, or the failure class's name (failure.Class's
// String: "device", "verify", "interrupted", ...).
const (
	ResultOK = "ok"
	// ResultRemoved is a card whose reader left the bus, or whose medium
	// was taken out, before it was done: a station tells these apart from
	// cards that failed while they stayed in.
	ResultRemoved = "removed"
)

// Result is what a card's outcome comes to in one word: ResultOK, ResultRemoved,
// or its failure's class.
func (o *Outcome) Result() string {
	switch {
	case o.Err == nil:
		return ResultOK
	case Removed(o.Err):
		return ResultRemoved
	}
	return failure.Of(o.Err).String()
}

// Removed says err is a card (or its reader) that went away: the reader
// dropped off the bus or its slot says no medium is present.
func Removed(err error) bool {
	return errors.Is(err, usbms.ErrNoDevice) || scsi.IsNoMedium(err)
}

// onNotice passes a reader's notice (a recovery step, a command made
// smaller) on as a note.
func (s *session) onNotice(reader string, n observe.Notice) {
	s.emit(Note{Card: reader, Message: n.Text, Notice: &n})
}

// Tee is an Observer that tells each of obs every event, in order.
func Tee(obs ...Observer) Observer {
	return ObserverFunc(func(e Event) {
		for _, o := range obs {
			if o != nil {
				o.Observe(e)
			}
		}
	})
}
