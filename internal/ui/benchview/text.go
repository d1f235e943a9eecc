// Package benchview draws what a bench run measured: the tables and bar
// chart a terminal shows, and the plot of the curves saved to a file.
package benchview

import (
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/usbflash/usbflash/internal/lib/units"
	"github.com/usbflash/usbflash/internal/probe/cardbench"
)

// Text is the run's results as a person reads them: MB/s by size as a
// table and as bars, the alignment test, random operations, the round
// trip and the direct path against the kernel's, each section ending in a
// newline.
func Text(run *cardbench.Report, series []cardbench.Series) string {
	var b strings.Builder
	b.WriteString(rateTable(series))
	b.WriteString("\n")
	b.WriteString(rateChart(series, 24))
	if run.Align != nil {
		b.WriteString("\n")
		b.WriteString(alignTable(*run.Align))
	}
	b.WriteString("\n")
	for _, r := range run.Random {
		where := "across the whole card"
		if r.Op == cardbench.OpWrite {
			where = fmt.Sprintf("in bytes %d to %d", r.Region.Offset, r.Region.Offset+r.Region.Length)
		}
		fmt.Fprintf(&b, "Random %s %ss: %.0f per second (%s) %s\n", units.FormatSize(r.Size), r.Op, r.PerSecond(),
			units.FormatRate(r.PerSecond()*float64(r.Size)), where)
	}
	if rt := run.RoundTrip; rt != nil {
		fmt.Fprintf(&b, "TEST UNIT READY round trip: median %s (min %s, max %s, %d commands): what every command costs before its data moves\n",
			ms(rt.Median), ms(rt.Min), ms(rt.Max), rt.Commands)
	}
	if line := compareLine(series); line != "" {
		b.WriteString(line + "\n")
	}
	if t := run.Transports; t != nil {
		b.WriteString(transportRows(*t))
	}
	return b.String()
}

// transportRows is a row per transport of a reader that offers both, and
// which was faster.
func transportRows(t cardbench.Transports) string {
	var b strings.Builder
	b.WriteString("\nBulk-Only against UAS on this reader (the same sequential pass):\n")
	for _, r := range t.Rates {
		fmt.Fprintf(&b, "  %-4s %-5s %s in %s: %s\n", r.Transport, r.Op, units.FormatSize(r.Size), r.Region.Name, units.FormatRate(r.Rate))
	}
	if t.Faster != "" {
		fmt.Fprintf(&b, "%s is faster (%.2fx, %ss)\n", t.Faster, t.Ratio, t.Op)
	}
	return b.String()
}

// compareLine sets the direct path's best read against the kernel's.
func compareLine(series []cardbench.Series) string {
	bests := map[string]float64{}
	for _, s := range series {
		if s.Op == cardbench.OpRead {
			for _, r := range s.Rates {
				bests[s.Path] = max(bests[s.Path], r.Rate)
			}
		}
	}
	direct := bests[cardbench.PathDirect]
	var parts []string
	for _, p := range []string{cardbench.PathKernelDirect, cardbench.PathKernelBuffered} {
		if k, ok := bests[p]; ok && k > 0 {
			parts = append(parts, fmt.Sprintf("%.2fx %s (%s)", direct/k, p, units.FormatRate(k)))
		}
	}
	if len(parts) == 0 || direct == 0 {
		return ""
	}
	return fmt.Sprintf("Best read, direct (%s) against the kernel: %s", units.FormatRate(direct), strings.Join(parts, ", "))
}

// sizesOf lists every size any series measured, in increasing order.
func sizesOf(series []cardbench.Series) []int64 {
	seen := map[int64]bool{}
	var out []int64
	for _, s := range series {
		for _, r := range s.Rates {
			if !seen[r.Size] {
				seen[r.Size] = true
				out = append(out, r.Size)
			}
		}
	}
	slices.Sort(out)
	return out
}

func rateAt(s cardbench.Series, size int64) (float64, bool) {
	for _, r := range s.Rates {
		if r.Size == size {
			return r.Rate, true
		}
	}
	return 0, false
}

// rateTable is MB/s by size (rows) and path (columns).
func rateTable(series []cardbench.Series) string {
	var b strings.Builder
	b.WriteString("MB/s by transfer size (all regions):\n")
	fmt.Fprintf(&b, "%-9s", "size")
	for _, s := range series {
		fmt.Fprintf(&b, " %*s", max(len(s.Name()), 7), s.Name())
	}
	b.WriteString("\n")
	for _, n := range sizesOf(series) {
		fmt.Fprintf(&b, "%-9s", units.FormatSize(n))
		for _, s := range series {
			cell := "-"
			if r, ok := rateAt(s, n); ok {
				cell = fmt.Sprintf("%.1f", r/1e6)
			}
			fmt.Fprintf(&b, " %*s", max(len(s.Name()), 7), cell)
		}
		b.WriteString("\n")
	}
	return b.String()
}

// rateChart draws one bar per size for each path, side by side, all on
// one scale so paths compare at a glance.
func rateChart(series []cardbench.Series, width int) string {
	var top float64
	for _, s := range series {
		for _, r := range s.Rates {
			top = max(top, r.Rate)
		}
	}
	col := width + 7
	var b strings.Builder
	fmt.Fprintf(&b, "%-9s", "")
	for _, s := range series {
		fmt.Fprintf(&b, " %-*s", col, s.Name())
	}
	b.WriteString("\n")
	for _, n := range sizesOf(series) {
		fmt.Fprintf(&b, "%-9s", units.FormatSize(n))
		for _, s := range series {
			r, ok := rateAt(s, n)
			cell := strings.Repeat(" ", col)
			if ok {
				cell = fmt.Sprintf("%-*s %6.1f", width, bar(r, top, width), r/1e6)
			}
			fmt.Fprintf(&b, " %s", cell)
		}
		b.WriteString("\n")
	}
	fmt.Fprintf(&b, "%-9s (a full bar is %s)\n", "", units.FormatRate(top))
	return b.String()
}

// bar is v/top of width cells, in eighths of a cell; fmt pads it (its
// width counts runes).
func bar(v, top float64, width int) string {
	if top <= 0 || v <= 0 {
		return ""
	}
	eighths := max(int(v/top*float64(width*8)+0.5), 1) // measured, if tiny
	partial := []string{"", "▏", "▎", "▍", "▌", "▋", "▊", "▉"}
	return strings.Repeat("█", eighths/8) + partial[eighths%8]
}

// alignTable prints the alignment test and the unit it points to.
func alignTable(al cardbench.AlignResult) string {
	var b strings.Builder
	fmt.Fprintf(&b, "Alignment: %s reads just before, across and just after multiples of each boundary (mean time):\n", units.FormatSize(al.Access))
	fmt.Fprintf(&b, "%-9s %9s %9s %9s %9s\n", "boundary", "before", "across", "after", "extra")
	for _, p := range al.Points {
		fmt.Fprintf(&b, "%-9s %9s %9s %9s %9s\n", units.FormatSize(p.Boundary), ms(p.Before), ms(p.On), ms(p.After), ms(p.Diff))
	}
	if al.Unit > 0 {
		fmt.Fprintf(&b, "Erase unit: %s (reads across its boundaries take longer; smaller boundaries are only sometimes its boundaries)\n", units.FormatSize(al.Unit))
	} else {
		b.WriteString("Erase unit: none stands out (the reader hides it, or the card has none)\n")
	}
	return b.String()
}

func ms(d time.Duration) string { return fmt.Sprintf("%.3fms", float64(d)/1e6) }
