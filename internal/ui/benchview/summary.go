package benchview

import (
	"fmt"
	"time"

	"github.com/usbflash/usbflash/internal/lib/units"
	"github.com/usbflash/usbflash/internal/probe/cardbench"
	"github.com/usbflash/usbflash/internal/ui/jsonevents"
)

// Summary is the run's summary event: its points and their curves,
// random operations (an empty list, not null, when none were measured),
// the alignment test, the round trip and the recommended transfer size.
func Summary(run *cardbench.Report, series []cardbench.Series) *jsonevents.BenchSummary {
	rec := cardbench.Recommendation(series)
	s := jsonevents.NewBenchSummary(run, series)
	s.RecommendedTransferSize, s.RecommendedFrom, s.BestRate, s.BestSize = rec.Size, rec.From, rec.Best, rec.BestSize
	return s
}

// Start says what the run measures, before its first measurement (each
// size for pointTime in each region; writes too, the region kept or
// not): the target's layout, or, when the kernel's disk is read first
// to compare, that disk's.
func Start(e cardbench.Started, pointTime time.Duration, write, preserve bool) (*jsonevents.BenchStart, string) {
	l := e.Layout
	ev := &jsonevents.BenchStart{Command: jsonevents.CommandBench,
		Target: e.Target, Capacity: e.Capacity, BlockSize: e.BlockSize, Sizes: l.Sizes, Regions: jsonevents.NewBenchRegions(l.Regions),
		PointTimeS: pointTime.Seconds(), Write: write, Preserve: preserve, Compare: e.Compare}
	what := fmt.Sprintf("%s (%s, %d-byte blocks)", e.Target, units.FormatSize(e.Capacity), e.BlockSize)
	if e.Compare != "" {
		what = fmt.Sprintf("%s, and first the kernel's %s (%s, %d-byte blocks)", e.Target, e.Compare, units.FormatSize(e.Capacity), e.BlockSize)
	}
	return ev, fmt.Sprintf("Measuring %s: %d sizes from %s to %s, %s per size in each of %s",
		what, len(l.Sizes), units.FormatSize(l.Sizes[0]), units.FormatSize(l.Sizes[len(l.Sizes)-1]), pointTime, cardbench.RegionNames(l.Regions))
}
