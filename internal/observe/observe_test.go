package observe_test

import (
	"slices"
	"testing"

	"github.com/usbflash/usbflash/internal/observe"
	"github.com/usbflash/usbflash/internal/probe/cardbench"
	"github.com/usbflash/usbflash/internal/probe/fakecheck"
	"github.com/usbflash/usbflash/internal/session"
)

// TestOneShape: an Observer made of a function is told every event in
// order, and a note or a step's progress told by any session is the one
// type: a presenter that handles observe.Note handles every session's.
func TestOneShape(t *testing.T) {
	var got []observe.Event
	var obs observe.Observer = observe.Func(func(e observe.Event) { got = append(got, e) })
	notice := &observe.Notice{Kind: observe.NoticeRecovery, Text: "resetting the reader", Step: observe.StepReset}
	told := []observe.Event{
		session.Note{Card: "sim:a.img", Message: "a note"},
		fakecheck.Note{Card: "sim:b.img", Message: notice.Text, Notice: notice},
		cardbench.Note{Message: "another"},
		fakecheck.Stepped{Step: string(fakecheck.StepCache), Done: 1 << 20, Total: 4 << 20},
		cardbench.Progress{Step: cardbench.StepReadSweep, Done: 3, Total: 9},
		session.WriteStarted{Cards: []string{"sim:a.img"}},
	}
	for _, e := range told {
		obs.Observe(e)
	}
	if len(got) != len(told) {
		t.Fatalf("told %d events, observed %d", len(told), len(got))
	}
	notes, steps := 0, 0
	for i, e := range got {
		switch e.(type) {
		case observe.Note:
			notes++
		case observe.Progress:
			steps++
		}
		if i < 3 && !slices.Contains([]string{"a note", notice.Text, "another"}, e.(observe.Note).Message) {
			t.Errorf("event %d: %+v", i, e)
		}
	}
	if notes != 3 || steps != 2 {
		t.Errorf("%d notes and %d step progresses, want 3 and 2: one type each for every session", notes, steps)
	}
}
