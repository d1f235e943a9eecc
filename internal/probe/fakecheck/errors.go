package fakecheck

import (
	"fmt"

	"github.com/usbflash/usbflash/internal/failure"
	"github.com/usbflash/usbflash/internal/lib/units"
)

// FakeError is a card that holds less than it claims: the facts of a
// probe's Result, named for messages.
type FakeError struct {
	Name   string  // the card, as messages name it
	Result *Result // what the probe found
	// Need is the size a write needs of it (the image's): 0 when the
	// check was asked for itself, -1 when the image's size is unknown.
	Need int64
}

func (e *FakeError) Error() string {
	msg := fmt.Sprintf("%s is fake: %s", e.Name, e.Result.Describe())
	switch {
	case e.Need > 0:
		// Next to what the card holds: in bytes when they round alike.
		need, _, _ := units.FormatBytesPair(e.Need, e.Result.Usable)
		msg += fmt.Sprintf("; the image needs %s: nothing was written", need)
	case e.Need < 0:
		msg += "; the image's size is not known before it is written, so it may not fit: nothing was written"
	}
	return msg
}

// Class is Fake.
func (e *FakeError) Class() failure.Class { return failure.Fake }

// Describe says what the probe found, in words: the claim, what holds,
// what happens past it, and the cache that hid it.
func (r *Result) Describe() string {
	if !r.Fake() {
		// Only what was proven: the blocks probed, not every block; and a
		// cache that holds all a card lacks answers every read until the
		// card loses power, which no probe within one power cycle sees.
		s := fmt.Sprintf("every block probed across its %s held what was written", units.FormatBytes(r.Claimed))
		if r.CacheChecked > 0 {
			s += fmt.Sprintf(", also after %s more were written to push a cache out; a card whose cache is as large as the part it lacks would pass too, until it loses power", units.FormatBytes(r.CacheChecked))
		} else {
			s += ", read back at once (no cache was pushed out)"
		}
		return s
	}
	bs := int64(r.BlockSize)
	first := r.Usable / bs
	claimed, usable, exact := units.FormatBytesPair(r.Claimed, r.Usable)
	s := fmt.Sprintf("it claims %s but holds %s (%d bytes, LBA 0 to %d)", claimed, usable, r.Usable, first-1)
	if exact {
		s = fmt.Sprintf("it claims %s but holds %s (LBA 0 to %d)", claimed, usable, first-1)
	}
	switch r.Kind {
	case Wrap:
		if a := r.Alias; a != nil && !a.Confirmed {
			// What was seen, and why it stands alone.
			s += fmt.Sprintf("; LBA %d read back what the check wrote to LBA %d: writes past LBA %d wrap around onto the start "+
				"(a second write to LBA %d did not read back at LBA %d at once: a cache answers for the card and sends writes to its flash on its own timer)",
				a.LBA, a.Holds, first-1, first, r.WrapsTo)
			break
		}
		s += fmt.Sprintf("; a write to LBA %d lands on LBA %d: writes past it wrap around onto the start", first, r.WrapsTo)
	case Drop:
		s += fmt.Sprintf("; writes from LBA %d on are lost", first)
	case Garbage:
		s += fmt.Sprintf("; writes from LBA %d on are lost and read back as other data", first)
	case Unreadable:
		s += fmt.Sprintf("; every read from LBA %d to the end fails", first)
	}
	if r.Cache > 0 {
		s += fmt.Sprintf(", behind a cache that read them back until %s more were written", units.FormatBytes(r.Cache))
	}
	return s
}
