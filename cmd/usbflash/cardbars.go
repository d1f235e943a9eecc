package main

import (
	"fmt"
	"io"
	"strings"
	"time"

	"github.com/vbauerster/mpb/v8"
	"github.com/vbauerster/mpb/v8/decor"

	"usbflash/fanout"
	"usbflash/internal/units"
	"usbflash/pipeline"
)

// cardBars shows the progress of a many-card write: on a terminal one bar
// per card plus a total (mpb), in JSON one progress event per card carrying
// its target, and otherwise a line every few seconds.
type cardBars struct {
	rep   reporter
	names []string
	total int64 // image bytes, -1 when unknown

	p    *mpb.Progress
	bars []*mpb.Bar // one per card, then the total

	out      io.Writer // non-terminal text: where the periodic lines go
	lastLine time.Time
}

// textLineInterval is how often progress is printed where no bar can be
// drawn (a log file, a pipe).
const textLineInterval = 5 * time.Second

func newCardBars(rep reporter, names []string, total int64) *cardBars {
	b := &cardBars{rep: rep, names: names, total: total}
	if l, ok := rep.(*lockedReporter); ok {
		rep = l.r
	}
	tr, ok := rep.(*textReporter)
	if !ok || tr.opts.quiet {
		return b
	}
	if !tr.opts.terminal {
		b.out = tr.errOut
		return b
	}
	b.p = mpb.New(mpb.WithOutput(tr.errOut), mpb.WithWidth(30), mpb.WithRefreshRate(200*time.Millisecond))
	width := 5
	for _, n := range names {
		width = max(width, len(n))
	}
	add := func(name string) *mpb.Bar {
		return b.p.AddBar(max(total, 0),
			mpb.PrependDecorators(decor.Name(name, decor.WC{W: width + 1, C: decor.DindentRight})),
			mpb.AppendDecorators(
				decor.Counters(decor.SizeB1000(0), "% .1f / % .1f"),
				decor.Name("  "),
				decor.AverageSpeed(decor.SizeB1000(0), "% .1f"),
			),
		)
	}
	for _, n := range names {
		b.bars = append(b.bars, add(n))
	}
	b.bars = append(b.bars, add("total"))
	return b
}

// update is the pipeline's progress callback: p is the stream, results
// what each card has written so far.
func (b *cardBars) update(p pipeline.Progress, results []fanout.Result) {
	switch {
	case b.p != nil:
		var sum int64
		for i, r := range results {
			if r.Err != nil {
				b.bars[i].Abort(false)
				continue
			}
			done := shown(r.Written, b.total)
			b.bars[i].SetCurrent(done)
			sum += done
		}
		b.bars[len(b.bars)-1].SetCurrent(sum / int64(max(len(results), 1)))
	case b.out != nil:
		if time.Since(b.lastLine) < textLineInterval && p.Total >= 0 && p.Done < p.Total {
			return
		}
		b.lastLine = time.Now()
		parts := make([]string, len(results))
		for i, r := range results {
			parts[i] = b.names[i] + ": " + units.FormatSize(shown(r.Written, b.total))
			if r.Err != nil {
				parts[i] = b.names[i] + ": failed"
			}
		}
		of := ""
		if b.total >= 0 {
			of = " of " + units.FormatSize(b.total)
		}
		fmt.Fprintf(b.out, "%s%s\n", strings.Join(parts, ", "), of)
	default:
		for i, r := range results {
			b.rep.event(&cardProgressEvent{eventHeader: eventHeader{Event: evCardProgress}, Phase: phase(p.Phase),
				Target: b.names[i], Done: shown(r.Written, b.total), Total: b.total, Failed: r.Err != nil}, "")
		}
	}
}

// shown is a card's progress in image bytes: what it wrote, less the
// zeroed first transfer that is written twice.
func shown(written, total int64) int64 {
	if total >= 0 {
		return min(written, total)
	}
	return written
}

// done finishes the bars before the table is printed below them.
func (b *cardBars) done() {
	if b.p == nil {
		return
	}
	for _, bar := range b.bars {
		if !bar.Completed() {
			bar.Abort(false)
		}
	}
	b.p.Wait()
}
