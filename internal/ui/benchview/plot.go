package benchview

import (
	"fmt"
	"io"
	"math"
	"path/filepath"
	"strconv"
	"strings"

	"github.com/go-analyze/charts/chartdraw"
	"github.com/go-analyze/charts/chartdraw/drawing"

	"github.com/usbflash/usbflash/internal/lib/outfile"
	"github.com/usbflash/usbflash/internal/lib/units"
	"github.com/usbflash/usbflash/internal/probe/cardbench"
)

// The plot is drawn with chartdraw (the maintained go-chart), whose
// packages do almost nothing at init: every linked package's init runs at
// every start of the binary, and the plot is drawn by one command in many.

// The plot's size in pixels and the room around it.
const (
	plotWidth, plotHeight = 960, 540
	plotMargin            = 16
	plotTitleRoom         = 44 // the title above the curves
	plotNameRoom          = 16 // the y axis' name, turned, left of where it is anchored
	plotLegendGap         = 24 // between the curves' frame and the legend
	plotLegendFontSize    = 10.0
	plotLegendLine        = 28 // the sample line's length
)

// plotColors are the curves' colors, one per series in turn (the
// Tableau 10 palette: told apart on screen and in grey).
var plotColors = []drawing.Color{
	{R: 0x1f, G: 0x77, B: 0xb4, A: 0xff}, {R: 0xff, G: 0x7f, B: 0x0e, A: 0xff},
	{R: 0x2c, G: 0xa0, B: 0x2c, A: 0xff}, {R: 0xd6, G: 0x27, B: 0x28, A: 0xff},
	{R: 0x94, G: 0x67, B: 0xbd, A: 0xff}, {R: 0x8c, G: 0x56, B: 0x4b, A: 0xff},
	{R: 0xe3, G: 0x77, B: 0xc2, A: 0xff}, {R: 0x7f, G: 0x7f, B: 0x7f, A: 0xff},
	{R: 0xbc, G: 0xbd, B: 0x22, A: 0xff}, {R: 0x17, G: 0xbe, B: 0xcf, A: 0xff},
}

// recommendedColor is the dashed line's at the recommended size.
var recommendedColor = drawing.Color{R: 0x40, G: 0x40, B: 0x40, A: 0xff}

// WritePlot draws MB/s against transfer size (log scale), one curve per
// path, a tick at every size measured and a dashed line at the recommended
// size (0: none), with the legend beside the curves, never over them. The
// file is SVG or PNG by its extension, written whole (outfile.Write).
func WritePlot(path string, series []cardbench.Series, target string, recommended int64) error {
	var render chartdraw.RendererProvider
	format := strings.ToLower(filepath.Ext(path))
	switch format {
	case ".svg":
		render = chartdraw.SVG
	case ".png":
		render = chartdraw.PNG
	default:
		return fmt.Errorf("unsupported plot format %q", format)
	}
	c, err := newChart(series, target, recommended)
	if err != nil {
		return err
	}
	return outfile.Write(path, func(w io.Writer) error {
		if format == ".svg" {
			// A standalone file's prologue (the library writes the element).
			if _, err := io.WriteString(w, `<?xml version="1.0" encoding="UTF-8"?>`+"\n"); err != nil {
				return err
			}
		}
		return c.Render(render, w)
	})
}

// newChart lays out the plot: the curves, the axes, the title and the
// legend to the right of the curves' frame. On the x axis the sizes are
// drawn at their base-2 logarithm, labelled with the sizes.
func newChart(series []cardbench.Series, target string, recommended int64) (*chartdraw.Chart, error) {
	sizes := sizesOf(series)
	if len(sizes) == 0 {
		return nil, fmt.Errorf("nothing measured to plot")
	}
	// A quarter of a doubling beyond the sizes on each side, so the first
	// and last points and their labels are not on the frame.
	lo := float64(sizes[0]) / math.Pow(2, 0.25)
	hi := float64(sizes[len(sizes)-1]) * math.Pow(2, 0.25)
	var ticks []chartdraw.Tick
	for _, t := range sizeTicks(sizes, lo, hi) {
		ticks = append(ticks, chartdraw.Tick{Value: math.Log2(t.Value), Label: t.Label})
	}

	var entries []legendEntry
	var curves []chartdraw.Series
	top := 0.0
	for i, s := range series {
		xs, ys := make([]float64, len(s.Rates)), make([]float64, len(s.Rates))
		for j, r := range s.Rates {
			xs[j], ys[j] = math.Log2(float64(r.Size)), r.Rate/1e6
			top = max(top, ys[j])
		}
		color := plotColors[i%len(plotColors)]
		style := chartdraw.Style{StrokeColor: color, StrokeWidth: 2, DotColor: color, DotWidth: 3}
		curves = append(curves, chartdraw.ContinuousSeries{Name: s.Name(), XValues: xs, YValues: ys, Style: style})
		entries = append(entries, legendEntry{s.Name(), style})
	}
	yTicks := rateTicks(0, top)
	if recommended > 0 {
		x := math.Log2(float64(recommended))
		style := chartdraw.Style{StrokeColor: recommendedColor, StrokeWidth: 2, StrokeDashArray: []float64{6, 4}}
		name := "recommended: " + units.FormatSize(recommended)
		curves = append(curves, chartdraw.ContinuousSeries{Name: name, XValues: []float64{x, x},
			YValues: []float64{0, yTicks[len(yTicks)-1].Value}, Style: style})
		entries = append(entries, legendEntry{name, style})
	}

	c := &chartdraw.Chart{
		Title:      "usbflash bench " + target,
		TitleStyle: chartdraw.Style{FontStyle: chartdraw.FontStyle{FontSize: 14}, Padding: chartdraw.Box{Top: plotMargin, IsSet: true}},
		Width:      plotWidth,
		Height:     plotHeight,
		Background: chartdraw.Style{Padding: chartdraw.Box{
			Top: plotTitleRoom, Left: plotMargin + plotNameRoom, Bottom: plotMargin,
			Right: plotMargin + plotLegendGap + legendWidth(entries), IsSet: true,
		}},
		XAxis: chartdraw.XAxis{
			Name:           "transfer size (log scale)",
			Range:          &tickedRange{ContinuousRange: chartdraw.ContinuousRange{Min: math.Log2(lo), Max: math.Log2(hi)}, ticks: ticks},
			GridMajorStyle: gridStyle, GridMinorStyle: gridStyle,
		},
		YAxis: chartdraw.YAxis{
			Name: "MB/s",
			// Read upwards, on the left (the primary axis is on the right).
			NameStyle:      chartdraw.Style{TextRotationDegrees: 270},
			AxisType:       chartdraw.YAxisSecondary,
			Ticks:          yTicks,
			GridMajorStyle: gridStyle, GridMinorStyle: gridStyle,
		},
		YAxisSecondary: chartdraw.HideYAxis(),
		Series:         curves,
	}
	c.Elements = []chartdraw.Renderable{legend(c, entries)}
	return c, nil
}

var gridStyle = chartdraw.Style{StrokeColor: drawing.Color{R: 0xdd, G: 0xdd, B: 0xdd, A: 0xff}, StrokeWidth: 1}

// tickedRange is a linear range with the ticks given, at the values given
// (the axis takes a range's own ticks; ticks set on the axis would also set
// the range's ends at the first and last).
type tickedRange struct {
	chartdraw.ContinuousRange
	ticks []chartdraw.Tick
}

func (r *tickedRange) GetTicks(chartdraw.ValueFormatter) []chartdraw.Tick { return r.ticks }

// legendEntry is one line of the legend: a name and the curve's style.
type legendEntry struct {
	name  string
	style chartdraw.Style
}

// legendLayout measures an entry's text; one renderer's measure serves for
// all of them, SVG or PNG (the same font at the same size).
func legendLayout(entries []legendEntry) (width int, heights []int) {
	r := chartdraw.SVG(1, 1)
	r.SetFont(chartdraw.GetDefaultFont())
	r.SetFontSize(plotLegendFontSize)
	for _, e := range entries {
		b := r.MeasureText(e.name)
		width = max(width, b.Width())
		heights = append(heights, b.Height())
	}
	return width + 5 + plotLegendLine + 2*8, heights
}

func legendWidth(entries []legendEntry) int {
	w, _ := legendLayout(entries)
	return w
}

// legend draws the entries in a framed box to the right of the curves'
// frame (the chart leaves room for it in its right padding), from the
// frame's top: a name, then a sample of its line.
func legend(c *chartdraw.Chart, entries []legendEntry) chartdraw.Renderable {
	return func(r chartdraw.Renderer, frame chartdraw.Box, defaults chartdraw.Style) {
		const pad, gap = 8, 8
		width, heights := legendLayout(entries)
		box := chartdraw.Box{Top: frame.Top, Left: c.Box().Right + plotLegendGap, IsSet: true}
		box.Right = box.Left + width
		box.Bottom = box.Top + pad
		for i, h := range heights {
			if i > 0 {
				box.Bottom += gap
			}
			box.Bottom += h
		}
		box.Bottom += pad
		chartdraw.Draw.Box(r, box, chartdraw.Style{FillColor: drawing.ColorWhite, StrokeColor: chartdraw.DefaultAxisColor, StrokeWidth: 1})
		text := chartdraw.Style{FontStyle: chartdraw.FontStyle{Font: defaults.GetFont(), FontSize: plotLegendFontSize, FontColor: chartdraw.DefaultTextColor}}
		y := box.Top + pad
		for i, e := range entries {
			if i > 0 {
				y += gap
			}
			y += heights[i]
			text.GetTextOptions().WriteToRenderer(r)
			r.Text(e.name, box.Left+pad, y)
			ly := y - heights[i]/2
			r.SetStrokeColor(e.style.StrokeColor)
			r.SetStrokeWidth(e.style.StrokeWidth)
			r.SetStrokeDashArray(e.style.StrokeDashArray)
			r.MoveTo(box.Right-pad-plotLegendLine, ly)
			r.LineTo(box.Right-pad, ly)
			r.Stroke()
		}
	}
}

// maxSizeLabels is how many size labels fit side by side on the x axis.
const maxSizeLabels = 12

// sizeTicks puts a tick at every size measured between lo and hi,
// labelled in KiB and MiB where the labels do not crowd each other (a size
// closer than 1/maxSizeLabels of the axis' doublings to the last labelled
// one keeps a tick without a label). Without sizes it ticks the powers of
// two. The values are sizes, not their logarithms.
func sizeTicks(sizes []int64, lo, hi float64) []chartdraw.Tick {
	values := sizes
	if len(values) == 0 {
		for e := math.Ceil(math.Log2(lo)); math.Pow(2, e) <= hi; e++ {
			values = append(values, int64(math.Pow(2, e)))
		}
	}
	gap := math.Log2(hi/lo) / maxSizeLabels
	var ticks []chartdraw.Tick
	last := math.Inf(-1)
	for _, n := range values {
		v := float64(n)
		if v < lo || v > hi {
			continue
		}
		tick := chartdraw.Tick{Value: v}
		if math.Log2(v)-last >= gap {
			tick.Label = units.FormatSize(n)
			last = math.Log2(v)
		}
		ticks = append(ticks, tick)
	}
	return ticks
}

// rateTicks are round ticks (1, 2 or 5 times a power of ten apart) from lo
// to at least hi, labelled without decimals that say nothing (25000, not
// 25000.00).
func rateTicks(lo, hi float64) []chartdraw.Tick {
	if hi <= lo {
		hi = lo + 1
	}
	const want = 6 // about as many intervals
	step := math.Pow(10, math.Floor(math.Log10((hi-lo)/want)))
	for _, m := range []float64{1, 2, 5, 10} {
		if (hi-lo)/(step*m) <= want+2 {
			step *= m
			break
		}
	}
	decimals := max(0, -int(math.Floor(math.Log10(step))))
	var ticks []chartdraw.Tick
	for i := math.Floor(lo / step); ; i++ {
		v := i * step
		ticks = append(ticks, chartdraw.Tick{Value: v, Label: strconv.FormatFloat(v, 'f', decimals, 64)})
		if v >= hi {
			return ticks
		}
	}
}
