package sessionview

import (
	"fmt"
	"time"

	"github.com/usbflash/usbflash/internal/lib/units"
	"github.com/usbflash/usbflash/internal/probe/fakecheck"
	"github.com/usbflash/usbflash/internal/ui/jsonevents"
	"github.com/usbflash/usbflash/internal/ui/termui"
)

// Check is the presenter of a check: the start line, the steps as
// progress (the cache flush in bytes), the verdict.
func Check(rep termui.Reporter, w Words) fakecheck.Observer { return &check{rep: rep, w: w} }

type check struct {
	rep      termui.Reporter
	w        Words
	last     time.Time
	lastStep string
}

func (p *check) Observe(e fakecheck.Event) {
	switch e := e.(type) {
	case fakecheck.Note:
		p.rep.Event(p.w.Note(e.Message, e.Notice))
	case fakecheck.Started:
		how := "each block saved first and put back after"
		if e.Destructive {
			how = "nothing saved (" + p.w.Flag(fakecheck.SettingDestructive) + ")"
		}
		p.rep.Event(&jsonevents.CheckStart{Command: jsonevents.CommandCheck, Target: e.Card,
			Capacity: e.Capacity, BlockSize: e.BlockSize, MaxCache: e.MaxCache, Destructive: e.Destructive},
			fmt.Sprintf("Checking %s (%s, %d-byte blocks) for a fake capacity, %s", e.Card, units.FormatBytes(e.Capacity), e.BlockSize, how))
	case fakecheck.PuttingBack:
		note := fmt.Sprintf("Putting back the blocks the check wrote on %s before exiting (Ctrl-C again stops that and keeps them in a file)", e.Card)
		p.rep.Event(jsonevents.NewNote(note), note)
	case fakecheck.Stepped:
		p.progress(e)
	case fakecheck.Finished:
		res := e.Result
		summary := &jsonevents.CheckSummary{Command: jsonevents.CommandCheck, Target: e.Card,
			Capacity: res.Claimed, UsableSize: res.Usable, Fake: res.Fake(), Kind: string(res.Kind),
			Cache: res.Cache, CacheChecked: res.CacheChecked, Written: res.Written, Read: res.Read,
			Commands: res.Commands, ElapsedS: res.Elapsed.Seconds(), Restored: res.Restored && res.Verified}
		if res.Kind == fakecheck.Wrap {
			summary.WrapsTo = &res.WrapsTo
		}
		p.rep.Event(summary, checkText(e.Card, res))
	}
}

// progress shows the probe's steps, and the cache flush in bytes.
func (p *check) progress(e fakecheck.Stepped) {
	// The flush reports every command: a few times a second is enough.
	if e.Step == p.lastStep && e.Done < e.Total && time.Since(p.last) < 200*time.Millisecond {
		return
	}
	p.last, p.lastStep = time.Now(), e.Step
	ph := jsonevents.PhaseProbe
	switch fakecheck.Step(e.Step) {
	case fakecheck.StepCache:
		ph = jsonevents.PhaseCache
	case fakecheck.StepRestore:
		ph = jsonevents.PhasePutBack
	}
	total := e.Total
	if total == 0 {
		total = -1
	}
	p.rep.Progress(jsonevents.Progress{Phase: ph, Done: e.Done, Total: total, ElapsedS: e.Elapsed.Seconds()})
}

// checkText is the verdict as a person reads it.
func checkText(name string, res *fakecheck.Result) string {
	var verdict string
	if res.Fake() {
		verdict = fmt.Sprintf("%s is FAKE: %s.\nUsable size: %d bytes (%s)", name, res.Describe(), res.Usable, units.FormatBytes(res.Usable))
	} else {
		verdict = fmt.Sprintf("%s shows no fake capacity: %s", name, res.Describe())
	}
	did := fmt.Sprintf("Probe: %d commands, %s written, %s read in %s", res.Commands, units.FormatBytes(res.Written),
		units.FormatBytes(res.Read), res.Elapsed.Round(time.Millisecond))
	if res.Saved > 0 {
		did += "; every block it wrote was put back and read back the same"
		if res.Fake() {
			did += " (up to the usable size: past it the card keeps nothing)"
		}
		if res.Kind == fakecheck.Wrap && res.PastRegions > 0 {
			did += fmt.Sprintf("; the %d saved regions past it (%s) alias blocks below it: they went back onto those blocks "+
				"in the order that leaves each block what it held first", res.PastRegions, units.FormatBytes(res.PastBytes))
		}
	}
	return verdict + "\n" + did
}

// PutBack says what a put-back (usbflash restore) did.
func PutBack(rep termui.Reporter, r fakecheck.PutBackResult) {
	msg := fmt.Sprintf("Put back %d regions (%s) on %s, synced and read back the same", r.Regions, units.FormatBytes(r.Bytes), r.Card)
	if r.Holds > 0 {
		msg += fmt.Sprintf(" up to byte %d (past it the card keeps nothing)", r.Holds)
	}
	if r.PastRegions > 0 {
		msg += fmt.Sprintf("; the %d regions past it (%s) were written where the card puts them "+
			"(on a card that wraps around, onto the blocks below it they alias, in the order that leaves each block what it held first) and cannot be read back on their own", r.PastRegions, units.FormatBytes(r.PastBytes))
	}
	rep.Event(jsonevents.NewNote(msg), msg)
}
