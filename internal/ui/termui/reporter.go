// Package termui shows a command's session to its audience: a progress
// bar for a person at a terminal (one per card for several), a line every
// few seconds for a log, JSON lines for scripts (internal/jsonevents), or
// nothing but the outcome; the table and the summary lines a person reads
// at the end; and the question asked before cards are overwritten.
package termui

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/vbauerster/mpb/v8"
	"github.com/vbauerster/mpb/v8/decor"

	"github.com/usbflash/usbflash/internal/lib/shown"
	"github.com/usbflash/usbflash/internal/lib/units"
	"github.com/usbflash/usbflash/internal/session"
	"github.com/usbflash/usbflash/internal/ui/jsonevents"
	"github.com/usbflash/usbflash/pipeline"
	"github.com/usbflash/usbflash/usbms"
)

// Reporter presents a long command to its audience: a progress bar for a
// person at a terminal, a line every few seconds for a log, JSON lines for
// scripts and factory dashboards, or nothing but the outcome (quiet).
// Commands talk to it and never format progress themselves. Its methods
// may be called from several goroutines.
type Reporter interface {
	// Event records a milestone; e becomes the JSON object, text is what
	// a person reads ("" for nothing).
	Event(e jsonevents.Event, text string)
	// Progress reports how far a phase got.
	Progress(p jsonevents.Progress)
	// Fail reports the error that ends the command; only the first one
	// is told.
	Fail(e *jsonevents.Error)
}

// Options choose the reporter.
type Options struct {
	JSON, Quiet bool
	// Terminal: stderr is a terminal, so progress is a bar; otherwise it
	// is a line every LineEvery (0: every 5 s).
	Terminal  bool
	LineEvery time.Duration
	Now       func() time.Time // nil: time.Now
}

// progressLineInterval is how often progress is printed to a stderr that is
// not a terminal: often enough to show life in a log, rarely enough to read.
const progressLineInterval = 5 * time.Second

// New is the reporter o chooses, milestones and JSON to out, progress and
// errors a person reads to errOut.
func New(out, errOut io.Writer, o Options) Reporter {
	if o.Now == nil {
		o.Now = time.Now
	}
	if o.LineEvery == 0 {
		o.LineEvery = progressLineInterval
	}
	if o.JSON {
		return &lockedReporter{r: &jsonReporter{enc: json.NewEncoder(out), errOut: errOut, quiet: o.Quiet, now: o.Now}}
	}
	return &lockedReporter{r: &textReporter{out: out, errOut: errOut, opts: o}}
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
func (r *jsonReporter) Event(e jsonevents.Event, text string) {
	if !r.emit(e) && e.Name() == jsonevents.NameSummary {
		fmt.Fprintln(r.errOut, text)
	}
}

func (r *jsonReporter) Progress(p jsonevents.Progress) {
	if p.Phase != r.phase {
		r.phase = p.Phase
		r.emit(&jsonevents.PhaseEvent{Phase: p.Phase})
	}
	if p.Download != nil {
		r.emit(p.Download)
	}
	r.emit(&p)
}

func (r *jsonReporter) Fail(e *jsonevents.Error) {
	if !r.emit(e) {
		PrintError(r.errOut, e)
	}
}

// textReporter prints milestones as lines on stdout and progress on
// stderr: a bar on a terminal, else a line every few seconds. quiet keeps
// only errors.
type textReporter struct {
	out, errOut io.Writer
	opts        Options
	bars        *mpb.Progress // the bar of the phase under way (mpb, as for many cards)
	bar         *mpb.Bar
	desc        atomic.Pointer[string] // the bar's words, read by mpb's drawing goroutine
	phase       jsonevents.Phase
	lastLine    time.Time
}

// quietLiner is an event with the one line a person who asked for quiet
// still wants (bench's recommendation); "" for none.
type quietLiner interface{ QuietLine() string }

func (r *textReporter) Event(e jsonevents.Event, text string) {
	r.closeBar()
	if q, ok := e.(quietLiner); ok && r.opts.Quiet {
		text = q.QuietLine()
	} else if r.opts.Quiet {
		return
	}
	if text == "" {
		return
	}
	// Texts quote names from outside (a catalog, a server, a device):
	// their control characters are shown, not obeyed.
	text = shown.Text(text)
	if _, err := fmt.Fprintln(r.out, text); err != nil {
		fmt.Fprintln(r.errOut, text) // stdout is gone: tell stderr
	}
}

func (r *textReporter) Progress(p jsonevents.Progress) {
	if r.opts.Quiet {
		return
	}
	if p.Phase != r.phase {
		r.closeBar()
		r.phase = p.Phase
		r.lastLine = r.opts.Now()
		if p.Phase == jsonevents.PhaseSync {
			// Nothing to count: the card is storing what it buffered.
			fmt.Fprintln(r.errOut, "Syncing: waiting for the card to store every block it has buffered")
			return
		}
	}
	if p.Phase == jsonevents.PhaseSync {
		return
	}
	if !r.opts.Terminal {
		line := progressText(p, true)
		if now := r.opts.Now(); now.Sub(r.lastLine) >= r.opts.LineEvery {
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
	if d := p.Download; d != nil {
		b.WriteString(" | " + DownloadText(d))
	}
	return b.String()
}

// DownloadText is the download's half of a write's progress line:
// "download: 120 MB of 480 MB, 11.2 MB/s, 1 resume, sets the pace".
func DownloadText(d *jsonevents.Download) string {
	var b strings.Builder
	fmt.Fprintf(&b, "download: %s", units.FormatBytes(d.Bytes))
	if d.Total > 0 {
		fmt.Fprintf(&b, " of %s", units.FormatBytes(d.Total))
	}
	fmt.Fprintf(&b, ", %s", units.FormatRate(d.Rate))
	if d.Resumes > 0 {
		fmt.Fprintf(&b, ", %d resumed", d.Resumes)
	}
	if d.Bound == session.BoundDownload {
		b.WriteString(", sets the pace")
	} else {
		b.WriteString(", the write sets the pace")
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

func (r *textReporter) Fail(e *jsonevents.Error) {
	r.closeBar()
	PrintError(r.errOut, e)
}

// Facts is err's facts as a person reads them: each once (a failed block
// command is described by the engine, with where, and again by the LUN
// under it: the engine's words and the LUN's cause), a cancelled or
// expired context in English, and no URL's secret.
func Facts(err error) string {
	msg := err.Error()
	var (
		dev *pipeline.DeviceError
		cmd *usbms.CommandError
	)
	if errors.As(err, &dev) && errors.As(dev.Err, &cmd) && cmd.Err != nil {
		msg = strings.Replace(msg, cmd.Error(), cmd.Err.Error(), 1)
	}
	msg = strings.NewReplacer(context.Canceled.Error(), "cancelled", context.DeadlineExceeded.Error(), "timed out").Replace(msg)
	return shown.URLsIn(msg)
}

// PrintError is how every failure reaches a person: the facts on one line,
// the advice (when there is any) on the next.
func PrintError(w io.Writer, e *jsonevents.Error) {
	fmt.Fprintf(w, "usbflash: %s\n", shown.Text(e.Message))
	if e.Hint != "" {
		fmt.Fprintln(w, shown.Text(Sentence(e.Hint)))
	}
}

// Sentence turns advice into a sentence. Advice whose last line is
// indented ends in a command to paste: nothing is added to it.
func Sentence(s string) string {
	if s == "" {
		return ""
	}
	s = strings.ToUpper(s[:1]) + s[1:]
	last := s[strings.LastIndex(s, "\n")+1:]
	if !strings.HasSuffix(s, ".") && !strings.HasPrefix(last, " ") {
		s += "."
	}
	return s
}

// reporter is what the JSON and the text reporter do, unlocked.
type reporter interface {
	Event(e jsonevents.Event, text string)
	Progress(p jsonevents.Progress)
	Fail(e *jsonevents.Error)
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

func (l *lockedReporter) Event(e jsonevents.Event, text string) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.r.Event(e, text)
}

func (l *lockedReporter) Progress(p jsonevents.Progress) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.r.Progress(p)
}

func (l *lockedReporter) Fail(e *jsonevents.Error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.failed {
		return
	}
	l.failed = true
	l.r.Fail(e)
}
