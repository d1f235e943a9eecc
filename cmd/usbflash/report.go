package main

import (
	"encoding/json"
	"fmt"
	"io"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/vbauerster/mpb/v8"
	"github.com/vbauerster/mpb/v8/decor"

	"github.com/usbflash/usbflash/internal/jsonevents"
	"github.com/usbflash/usbflash/internal/units"
)

// reporter presents a long command to its audience: a progress bar for a
// person at a terminal, a line every few seconds for a log, JSON lines for
// scripts and factory dashboards, or nothing but the outcome (--quiet).
// Commands talk to it and never format progress themselves.
type reporter interface {
	// event records a milestone; e becomes the JSON object, text is what
	// a person reads ("" for nothing).
	event(e jsonevents.Event, text string)
	// progress reports how far a phase got.
	progress(p jsonevents.Progress)
	// fail reports the error that ends the command, with its exit code.
	fail(err error, code int)
}

// reporterOptions choose the reporter.
type reporterOptions struct {
	json, quiet bool
	// terminal: stderr is a terminal, so progress is a bar; otherwise it
	// is a line every lineEvery.
	terminal  bool
	lineEvery time.Duration
	now       func() time.Time
}

// progressLineInterval is how often progress is printed to a stderr that is
// not a terminal: often enough to show life in a log, rarely enough to read.
const progressLineInterval = 5 * time.Second

// rateWarmUp is how long a phase runs before its rate is shown: the first
// buffers fill from memory and would claim tens of GB/s.
const rateWarmUp = time.Second

func newReporter(out, errOut io.Writer, o reporterOptions) reporter {
	if o.now == nil {
		o.now = time.Now
	}
	if o.lineEvery == 0 {
		o.lineEvery = progressLineInterval
	}
	if o.json {
		return &jsonReporter{enc: json.NewEncoder(out), errOut: errOut, quiet: o.quiet, now: o.now}
	}
	return &textReporter{out: out, errOut: errOut, opts: o}
}

// jsonReporter writes one JSON object per line on stdout. With quiet, only
// the outcome is written: the summary or the error.
type jsonReporter struct {
	enc    *json.Encoder
	errOut io.Writer
	quiet  bool
	now    func() time.Time
	phase  jsonevents.Phase
}

// emit writes e and says whether stdout took it.
func (r *jsonReporter) emit(e jsonevents.Event) bool {
	if r.quiet && e.Name() != jsonevents.NameSummary && e.Name() != jsonevents.NameError {
		return true
	}
	h := e.Head()
	h.Event = e.Name()
	h.Time = r.now().UTC().Format(time.RFC3339Nano)
	return r.enc.Encode(e) == nil
}

// event writes e; should stdout be gone (its reader quit: a closed pipe),
// the outcome still reaches a person on stderr, and nothing stops.
func (r *jsonReporter) event(e jsonevents.Event, text string) {
	if !r.emit(e) && e.Name() == jsonevents.NameSummary {
		fmt.Fprintln(r.errOut, text)
	}
}

func (r *jsonReporter) progress(p jsonevents.Progress) {
	if p.Phase != r.phase {
		r.phase = p.Phase
		r.emit(&jsonevents.PhaseEvent{Phase: p.Phase})
	}
	r.emit(&p)
}

func (r *jsonReporter) fail(err error, code int) {
	if !r.emit(newErrorEvent(err, code)) {
		printError(r.errOut, err)
	}
}

func newErrorEvent(err error, code int) *jsonevents.Error {
	msg, hint := explain(err)
	return &jsonevents.Error{Message: msg, Hint: hint, Code: code, ExitName: exitName(code)}
}

// textReporter prints milestones as lines on stdout and progress on
// stderr: a bar on a terminal, else a line every few seconds. quiet keeps
// only errors.
type textReporter struct {
	out, errOut io.Writer
	opts        reporterOptions
	bars        *mpb.Progress // the bar of the phase under way (mpb, as for many cards)
	bar         *mpb.Bar
	desc        atomic.Pointer[string] // the bar's words, read by mpb's drawing goroutine
	phase       jsonevents.Phase
	lastLine    time.Time
}

// quietLiner is an event with the one line a person who asked for quiet
// still wants (bench's recommendation); "" for none.
type quietLiner interface{ QuietLine() string }

func (r *textReporter) event(e jsonevents.Event, text string) {
	r.closeBar()
	if q, ok := e.(quietLiner); ok && r.opts.quiet {
		text = q.QuietLine()
	} else if r.opts.quiet {
		return
	}
	if text == "" {
		return
	}
	if _, err := fmt.Fprintln(r.out, text); err != nil {
		fmt.Fprintln(r.errOut, text) // stdout is gone: tell stderr
	}
}

func (r *textReporter) progress(p jsonevents.Progress) {
	if r.opts.quiet {
		return
	}
	if p.Phase != r.phase {
		r.closeBar()
		r.phase = p.Phase
		r.lastLine = r.opts.now()
		if p.Phase == jsonevents.PhaseSync {
			// Nothing to count: the card is storing what it buffered.
			fmt.Fprintln(r.errOut, "Syncing: waiting for the card to store every block it has buffered")
			return
		}
	}
	if p.Phase == jsonevents.PhaseSync {
		return
	}
	if !r.opts.terminal {
		line := progressText(p, true)
		if now := r.opts.now(); now.Sub(r.lastLine) >= r.opts.lineEvery {
			r.lastLine = now
			fmt.Fprintln(r.errOut, line)
		}
		return
	}
	max, cur := barPosition(p)
	text := progressText(p, false) // the bar shows the percentage
	r.desc.Store(&text)
	if r.bar == nil {
		r.bars = mpb.New(mpb.WithOutput(r.errOut), mpb.WithWidth(25), mpb.WithRefreshRate(150*time.Millisecond))
		words := decor.Any(func(decor.Statistics) string { return " " + *r.desc.Load() })
		if max < 0 {
			r.bar = r.bars.New(0, mpb.SpinnerStyle(), mpb.AppendDecorators(words))
		} else {
			r.bar = r.bars.New(max, mpb.BarStyle(), mpb.PrependDecorators(decor.Percentage(decor.WC{W: 5})), mpb.AppendDecorators(words))
		}
	}
	r.bar.SetCurrent(cur)
}

// barPosition is what the bar fills: image bytes when their total is
// known, else the compressed file's bytes read; -1 draws a spinner.
func barPosition(p jsonevents.Progress) (max, cur int64) {
	switch {
	case p.Total > 0:
		return p.Total, p.Done
	case p.CompressedTotal != nil && *p.CompressedTotal > 0 && p.CompressedDone != nil:
		return *p.CompressedTotal, *p.CompressedDone
	}
	return -1, p.Done
}

// progressText is one progress line: "write: 1.20 GB of 4.00 GB (30%),
// 35.1 MB/s, ETA 1m20s". Sizes and rates are decimal (MB, GB), as disk
// and USB speeds are quoted, in the bar and the summary alike.
func progressText(p jsonevents.Progress, percent bool) string {
	var b strings.Builder
	if p.Unit != "" {
		// A measurement of one step has nothing to count: the bar says
		// it is under way.
		b.WriteString(string(p.Phase))
		if p.Total > 1 {
			fmt.Fprintf(&b, ": %d of %d %s", p.Done, p.Total, p.Unit)
			if percent {
				fmt.Fprintf(&b, " (%d%%)", p.Done*100/p.Total)
			}
		}
		return b.String()
	}
	fmt.Fprintf(&b, "%s: %s", p.Phase, units.FormatBytes(p.Done))
	switch {
	case p.Total > 0:
		fmt.Fprintf(&b, " of %s", units.FormatBytes(p.Total))
		if percent {
			fmt.Fprintf(&b, " (%d%%)", p.Done*100/p.Total)
		}
	case p.CompressedTotal != nil && *p.CompressedTotal > 0 && p.CompressedDone != nil:
		fmt.Fprintf(&b, " (%d%% of the image file read)", *p.CompressedDone*100 / *p.CompressedTotal)
	}
	if p.Rate != nil {
		fmt.Fprintf(&b, ", %s", units.FormatRate(*p.Rate))
		if eta, ok := remaining(p); ok {
			fmt.Fprintf(&b, ", ETA %s", eta)
		}
	}
	return b.String()
}

// remaining estimates the time left in a phase from its average rate.
func remaining(p jsonevents.Progress) (time.Duration, bool) {
	elapsed := time.Duration(p.ElapsedS * float64(time.Second))
	var frac float64
	switch {
	case p.Total > 0:
		frac = float64(p.Done) / float64(p.Total)
	case p.CompressedTotal != nil && *p.CompressedTotal > 0 && p.CompressedDone != nil:
		frac = float64(*p.CompressedDone) / float64(*p.CompressedTotal)
	}
	if frac <= 0 || frac > 1 {
		return 0, false
	}
	left := time.Duration(float64(elapsed) * (1 - frac) / frac)
	return left.Round(time.Second), true
}

func (r *textReporter) closeBar() {
	if r.bar != nil {
		if !r.bar.Completed() {
			r.bar.Abort(false) // leave it drawn where it stopped
		}
		r.bars.Wait()
		r.bar, r.bars = nil, nil
	}
}

func (r *textReporter) fail(err error, _ int) {
	r.closeBar()
	printError(r.errOut, err)
}

// printError is how every failure reaches a person: the facts on one line,
// the advice (when there is any) on the next.
func printError(w io.Writer, err error) {
	msg, hint := explain(err)
	fmt.Fprintf(w, "usbflash: %s\n", msg)
	if hint != "" {
		fmt.Fprintln(w, ensureSentence(hint))
	}
}

// lockedReporter serialises a reporter: recovery notes come from the
// goroutine running the device's commands, progress from the pipeline's.
type lockedReporter struct {
	mu sync.Mutex
	r  reporter
	// failed: a command ends once. An abort step (a second Ctrl-C) and
	// the command itself may both report how it ended; the first is told.
	failed bool
}

func (l *lockedReporter) event(e jsonevents.Event, text string) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.r.event(e, text)
}

func (l *lockedReporter) progress(p jsonevents.Progress) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.r.progress(p)
}

func (l *lockedReporter) fail(err error, code int) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.failed {
		return
	}
	l.failed = true
	l.r.fail(err, code)
}
