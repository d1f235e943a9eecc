package benchview

import (
	"fmt"
	"time"

	"github.com/usbflash/usbflash/internal/lib/units"
	"github.com/usbflash/usbflash/internal/probe/cardbench"
	"github.com/usbflash/usbflash/internal/session"
	"github.com/usbflash/usbflash/internal/ui/jsonevents"
	"github.com/usbflash/usbflash/internal/ui/sessionview"
	"github.com/usbflash/usbflash/internal/ui/termui"
)

// Presenter tells a bench session's events to a reporter: the start, the
// steps as progress, each point (JSON only: a text event would end the
// progress bar each time, and the table says it all at the end), a
// preserved region's restore.
type Presenter struct {
	rep    termui.Reporter
	w      sessionview.Words
	cfg    cardbench.Config
	points bool
	since  time.Time // the step under way began
}

// NewPresenter is the presenter of the bench cfg asks for; points: an
// event per point.
func NewPresenter(rep termui.Reporter, w sessionview.Words, cfg cardbench.Config, points bool) *Presenter {
	return &Presenter{rep: rep, w: w, cfg: cfg, points: points}
}

// Observe tells e.
func (p *Presenter) Observe(e cardbench.Event) {
	rep := p.rep
	switch e := e.(type) {
	case cardbench.Started:
		rep.Event(Start(e, p.cfg.PointTime, p.cfg.Write, p.cfg.Plan.Preserve))
	case cardbench.Note:
		if e.Notice != nil {
			rep.Event(p.w.Note(e.Message, e.Notice))
		} else {
			rep.Event(jsonevents.NewNote(e.Message), e.Message)
		}
	case cardbench.StepStarted:
		p.since = time.Now()
		rep.Progress(jsonevents.Progress{Phase: jsonevents.Phase(e.Step), Total: int64(e.Total), Unit: jsonevents.UnitPoints})
	case cardbench.Progress:
		rep.Progress(jsonevents.Progress{Phase: jsonevents.Phase(e.Step), Done: int64(e.Done), Total: int64(e.Total),
			ElapsedS: time.Since(p.since).Seconds(), Unit: jsonevents.UnitPoints})
	case cardbench.Measured:
		if p.points {
			rep.Event(jsonevents.NewBenchPoint(e.Point), "")
		}
	case cardbench.Restoring:
		if e.Cancelled {
			note := fmt.Sprintf("Restoring bytes %d to %d of %s before exiting (Ctrl-C again stops the restore and saves them to a file)", e.Region.Offset, e.Region.End(), e.Device)
			rep.Event(jsonevents.NewNote(note), note)
		}
	case cardbench.Restored:
		msg := fmt.Sprintf("Restored and verified bytes %d to %d of %s", e.Region.Offset, e.Region.End(), e.Device)
		rep.Event(&jsonevents.BenchRestored{Offset: e.Region.Offset, Length: e.Region.Length, Verified: true}, msg)
	}
}

// Report presents the run: a table and a chart of the curves, the
// alignment test, random operations, the round trip and the recommended
// transfer size (named by its flag); as text, or as one JSON summary
// after the points; with plot, the curves saved to it. The measurements
// are shown even when the plot cannot be saved: that error is returned
// after them.
func Report(rep termui.Reporter, w sessionview.Words, run *cardbench.Report, plot string) error {
	series := cardbench.Summarize(run.Points)
	summary := Summary(run, series)
	var plotErr error
	if plot != "" {
		if plotErr = WritePlot(plot, series, run.Target, summary.RecommendedTransferSize); plotErr == nil {
			summary.Plot = plot
		}
	}
	text := Text(run, series)
	if summary.RecommendedTransferSize > 0 {
		summary.Recommendation = fmt.Sprintf("Recommended %s %s: the smallest within %.0f%% of the best %s (%s at %s)",
			w.Flag(session.SettingTransferSize), units.FormatSize(summary.RecommendedTransferSize), cardbench.Tolerance*100, summary.RecommendedFrom,
			units.FormatRate(summary.BestRate), units.FormatSize(summary.BestSize))
		text += summary.Recommendation
	}
	if summary.Plot != "" {
		text += "\nPlot: " + plot
	}
	rep.Event(summary, text)
	return plotErr
}
