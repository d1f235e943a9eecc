package main

import (
	"encoding/json"
	"fmt"
	"io"
	"time"

	"github.com/schollz/progressbar/v3"
)

// reporter presents a long command to its audience: a progress bar for a
// person at a terminal, JSON lines for scripts and factory dashboards, or
// nothing (--quiet). Commands talk to it and never format progress
// themselves.
type reporter interface {
	// event records a milestone (start, phase, summary); fields become the
	// JSON object, text is what a person reads.
	event(name string, fields map[string]any, text string)
	// progress reports bytes done of total (-1: unknown) in a phase.
	progress(phase string, done, total int64, rate float64)
	// fail reports the error that ends the command, with its exit code.
	fail(err error, code int)
}

type reporterMode int

const (
	modeText reporterMode = iota
	modeJSON
	modeQuiet
)

func newReporter(mode reporterMode, out, errOut io.Writer, terminal bool) reporter {
	switch mode {
	case modeJSON:
		return &jsonReporter{enc: json.NewEncoder(out)}
	case modeQuiet:
		return quietReporter{}
	}
	return &textReporter{out: out, errOut: errOut, terminal: terminal}
}

// jsonReporter writes one JSON object per line. Every object has "event"
// and "time"; progress events are rate-limited by the pipeline (a few per
// second), and a "phase" event marks each change of phase.
type jsonReporter struct {
	enc   *json.Encoder
	phase string
}

func (r *jsonReporter) emit(name string, fields map[string]any) {
	obj := map[string]any{"event": name, "time": time.Now().UTC().Format(time.RFC3339Nano)}
	for k, v := range fields {
		obj[k] = v
	}
	_ = r.enc.Encode(obj) // stdout gone: nothing better to do
}

func (r *jsonReporter) event(name string, fields map[string]any, _ string) { r.emit(name, fields) }

func (r *jsonReporter) progress(phase string, done, total int64, rate float64) {
	if phase != r.phase {
		r.phase = phase
		r.emit("phase", map[string]any{"phase": phase})
	}
	r.emit("progress", map[string]any{"phase": phase, "done": done, "total": total, "rate": rate})
}

func (r *jsonReporter) fail(err error, code int) {
	r.emit("error", map[string]any{"message": err.Error(), "code": code})
}

type quietReporter struct{}

func (quietReporter) event(string, map[string]any, string)   {}
func (quietReporter) progress(string, int64, int64, float64) {}
func (quietReporter) fail(error, int)                        {}

// textReporter prints milestones as lines and, on a terminal only, draws a
// progress bar per phase on stderr.
type textReporter struct {
	out, errOut io.Writer
	terminal    bool
	bar         *progressbar.ProgressBar
	barPhase    string
}

func (r *textReporter) event(_ string, _ map[string]any, text string) {
	r.closeBar()
	if text != "" {
		fmt.Fprintln(r.out, text)
	}
}

func (r *textReporter) progress(phase string, done, total int64, _ float64) {
	if !r.terminal {
		return
	}
	if r.bar == nil || r.barPhase != phase {
		r.closeBar()
		r.barPhase = phase
		r.bar = progressbar.NewOptions64(total,
			progressbar.OptionSetWriter(r.errOut),
			progressbar.OptionSetDescription(fmt.Sprintf("%-6s", phase)),
			progressbar.OptionShowBytes(true),
			progressbar.OptionSetPredictTime(true),
			progressbar.OptionSetWidth(30),
			progressbar.OptionThrottle(100*time.Millisecond),
			progressbar.OptionUseIECUnits(true),
		)
	}
	_ = r.bar.Set64(done)
}

func (r *textReporter) closeBar() {
	if r.bar != nil {
		_ = r.bar.Finish()
		fmt.Fprintln(r.errOut)
		r.bar = nil
	}
}

func (r *textReporter) fail(err error, _ int) {
	r.closeBar()
	fmt.Fprintf(r.errOut, "usbflash: %v\n", err)
}
