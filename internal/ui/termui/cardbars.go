package termui

import (
	"fmt"
	"io"
	"strings"
	"sync/atomic"
	"time"

	"github.com/vbauerster/mpb/v8"
	"github.com/vbauerster/mpb/v8/decor"

	"github.com/usbflash/usbflash/internal/lib/units"
	"github.com/usbflash/usbflash/internal/session"
	"github.com/usbflash/usbflash/internal/ui/jsonevents"
	"github.com/usbflash/usbflash/pipeline"
)

// CardBars shows the progress of a many-card session: on a terminal one
// bar per card plus their average (mpb), for the write and again for the
// verify; in JSON one card_progress event per card; otherwise a line every
// few seconds naming each card's phase and bytes.
type CardBars struct {
	rep   Reporter
	names []string

	// On a terminal: the bars of the phase shown, write or verify.
	p     *mpb.Progress
	bars  []*mpb.Bar // one per card, then the average
	shown pipeline.Phase
	// The download of an image from a URL, beside the average's bar: read
	// by mpb's drawing goroutine.
	download atomic.Pointer[string]

	// Without one: where the lines go, and the clock they keep.
	out       io.Writer
	now       func() time.Time
	lineEvery time.Duration
	lastLine  time.Time
}

// NewCardBars shows the progress of the cards named, through rep.
func NewCardBars(rep Reporter, names []string) *CardBars {
	b := &CardBars{rep: rep, names: names}
	if l, ok := rep.(*lockedReporter); ok {
		rep = l.r
	}
	if tr, ok := rep.(*textReporter); ok && !tr.opts.Quiet {
		b.out, b.now, b.lineEvery = tr.errOut, tr.opts.Now, tr.opts.LineEvery
		if !tr.opts.Terminal {
			b.lastLine = b.now() // the first line after lineEvery, as for one card
		}
	}
	return b
}

// draw starts the terminal's bars for a phase: total is each card's
// bytes, -1 when unknown (the bars count instead).
func (b *CardBars) draw(ph pipeline.Phase, total int64, tr *textReporter) {
	b.finishBars()
	b.shown = ph
	b.p = mpb.New(mpb.WithOutput(tr.errOut), mpb.WithWidth(30), mpb.WithRefreshRate(200*time.Millisecond))
	width := 7
	for _, n := range b.names {
		width = max(width, len(n))
	}
	add := func(name string) *mpb.Bar {
		label := mpb.PrependDecorators(decor.Name(name, decor.WC{W: width + 1, C: decor.DindentRight}),
			decor.Name(string(ph), decor.WC{W: 7, C: decor.DindentRight}))
		speed := decor.AverageSpeed(decor.SizeB1000(0), "% .1f")
		var download decor.Decorator = decor.Name("")
		if name == "average" {
			download = decor.Any(func(decor.Statistics) string {
				if d := b.download.Load(); d != nil {
					return " | " + *d
				}
				return ""
			})
		}
		if total < 0 {
			// The image's size is known only once it is written: count.
			return b.p.New(0, mpb.SpinnerStyle(), label, mpb.AppendDecorators(
				decor.Current(decor.SizeB1000(0), "% .1f"), decor.Name("  "), speed, download))
		}
		return b.p.New(total, mpb.BarStyle(), label, mpb.AppendDecorators(
			decor.Counters(decor.SizeB1000(0), "% .1f / % .1f"), decor.Name("  "), speed, download))
	}
	b.bars = b.bars[:0]
	for _, n := range b.names {
		b.bars = append(b.bars, add(n))
	}
	b.bars = append(b.bars, add("average"))
}

// Update shows the session's progress: each card's own, and on a terminal
// their average.
func (b *CardBars) Update(p session.Progress) {
	tr := b.terminal()
	if p.Download != nil {
		text := DownloadText(DownloadEvent(p.Download))
		b.download.Store(&text)
	}
	switch {
	case tr != nil:
		// The write's bars stay through the sync; the verify gets its own.
		if b.p == nil || (p.Phase == pipeline.PhaseVerify && b.shown != pipeline.PhaseVerify) {
			b.draw(p.Phase, p.Total, tr)
		}
		var sum int64
		live := 0
		for i, c := range p.Cards {
			if i >= len(b.bars)-1 {
				break
			}
			if c.Failed {
				b.bars[i].Abort(false) // stays drawn where the card stopped
				continue
			}
			b.bars[i].SetCurrent(c.Done)
			sum += c.Done
			live++
		}
		b.bars[len(b.bars)-1].SetCurrent(sum / int64(max(live, 1)))
	case b.out != nil:
		if now := b.now(); now.Sub(b.lastLine) >= b.lineEvery {
			b.lastLine = now
			line := cardsLine(p)
			if d := b.download.Load(); d != nil && p.Download != nil {
				line += " | " + *d
			}
			fmt.Fprintln(b.out, line)
		}
	default:
		if p.Download != nil {
			b.rep.Event(DownloadEvent(p.Download), "")
		}
		for _, c := range p.Cards {
			b.rep.Event(&jsonevents.CardProgress{Phase: jsonevents.Phase(c.Phase),
				Target: c.Card, Done: c.Done, Total: c.Total, Failed: c.Failed}, "")
		}
	}
}

// cardsLine is the progress of every card on one line: "sim:a.img: write
// 1.20 MB, sim:b.img: failed (of 4.00 MB)".
func cardsLine(p session.Progress) string {
	parts := make([]string, len(p.Cards))
	for i, c := range p.Cards {
		parts[i] = fmt.Sprintf("%s: %s %s", c.Card, c.Phase, units.FormatBytes(c.Done))
		if c.Failed {
			parts[i] = c.Card + ": failed"
		}
	}
	line := strings.Join(parts, ", ")
	if p.Total >= 0 {
		line += " (of " + units.FormatBytes(p.Total) + ")"
	}
	return line
}

// terminal is the reporter drawing bars, nil when there is none.
func (b *CardBars) terminal() *textReporter {
	rep := b.rep
	if l, ok := rep.(*lockedReporter); ok {
		rep = l.r
	}
	if tr, ok := rep.(*textReporter); ok && tr.opts.Terminal && !tr.opts.Quiet {
		return tr
	}
	return nil
}

func (b *CardBars) finishBars() {
	if b.p == nil {
		return
	}
	for _, bar := range b.bars {
		if !bar.Completed() {
			bar.Abort(false)
		}
	}
	b.p.Wait()
	b.p = nil
}

// Done finishes the bars before the table is printed below them.
func (b *CardBars) Done() {
	if b != nil {
		b.finishBars()
	}
}

// DownloadEvent is the download event of a write's download.
func DownloadEvent(d *session.Download) *jsonevents.Download {
	return &jsonevents.Download{URL: d.URL, Bytes: d.Bytes, Total: d.Total, Rate: d.Rate, Resumes: d.Resumes, Bound: d.Bound}
}
