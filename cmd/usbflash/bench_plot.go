package main

import (
	"image/color"
	"io"
	"math"
	"path/filepath"
	"strconv"
	"strings"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/plotutil"
	"gonum.org/v1/plot/vg"
	"gonum.org/v1/plot/vg/draw"

	"usbflash/cardbench"
	"usbflash/internal/outfile"
	"usbflash/internal/units"
)

// The plot's size and the room around it, so nothing is cut at the edges
// (gonum draws the title's top and the outer tick labels up to them).
const (
	plotWidth, plotHeight = 9 * vg.Inch, 5 * vg.Inch
	plotMargin            = 12 // points
)

// writePlot draws MB/s against transfer size (log scale), one curve per
// path, a tick at every size measured and a dashed line at the recommended
// size (0: none), with the legend beside the curves, never over them. The
// file is SVG or PNG by its extension, written whole (outfile.Write).
func writePlot(path string, series []cardbench.Series, target string, recommended int64) error {
	p, legend, err := newPlot(series, target, recommended)
	if err != nil {
		return err
	}
	format := strings.ToLower(strings.TrimPrefix(filepath.Ext(path), "."))
	c, err := draw.NewFormattedCanvas(plotWidth, plotHeight, format)
	if err != nil {
		return err
	}
	whole := draw.New(c)
	whole.SetColor(color.White)
	whole.Fill(whole.Rectangle.Path())
	area := draw.Crop(whole, plotMargin, -plotMargin, plotMargin, -plotMargin)
	r := legend.Rectangle(area)
	legendWidth := r.Max.X - r.Min.X
	p.Draw(draw.Crop(area, 0, -legendWidth-plotMargin, 0, 0))
	// The legend starts below the title, at the data's top.
	top := p.Title.TextStyle.Rectangle(p.Title.Text).Size().Y + p.Title.Padding
	legend.Draw(draw.Crop(area, area.Max.X-area.Min.X-legendWidth, 0, 0, -top))
	return outfile.Write(path, func(w io.Writer) error {
		_, err := c.WriteTo(w)
		return err
	})
}

// newPlot lays out the plot and its legend, which the caller places.
func newPlot(series []cardbench.Series, target string, recommended int64) (*plot.Plot, plot.Legend, error) {
	p := plot.New()
	p.Title.Text = "usbflash bench " + target
	p.Title.Padding = vg.Points(8)
	p.X.Label.Text = "transfer size (log scale)"
	p.Y.Label.Text = "MB/s"
	p.X.Scale = plot.LogScale{}
	sizes := sizesOf(series)
	p.X.Tick.Marker = sizeTicks{sizes: sizes}
	p.Y.Min = 0
	p.Y.Tick.Marker = rateTicks{}
	p.Add(plotter.NewGrid())
	legend := plot.NewLegend()
	legend.Top, legend.Left = true, true
	top := 0.0
	for i, s := range series {
		xy := make(plotter.XYs, len(s.Rates))
		for j, r := range s.Rates {
			xy[j].X, xy[j].Y = float64(r.Size), r.Rate/1e6
			top = max(top, xy[j].Y)
		}
		line, points, err := plotter.NewLinePoints(xy)
		if err != nil {
			return nil, legend, err
		}
		line.Color = plotutil.Color(i)
		points.Color = plotutil.Color(i)
		points.Shape = plotutil.Shape(i)
		p.Add(line, points)
		legend.Add(s.Name(), line, points)
	}
	if recommended > 0 {
		mark, err := plotter.NewLine(plotter.XYs{{X: float64(recommended), Y: 0}, {X: float64(recommended), Y: top}})
		if err != nil {
			return nil, legend, err
		}
		mark.Color = color.Gray{Y: 0x40}
		mark.Dashes = []vg.Length{vg.Points(5), vg.Points(3)}
		p.Add(mark)
		legend.Add("recommended: "+units.FormatSize(recommended), mark)
	}
	// A quarter of a doubling beyond the sizes on each side, so the first
	// and last points and their labels are not on the frame.
	if len(sizes) > 0 {
		p.X.Min = float64(sizes[0]) / math.Pow(2, 0.25)
		p.X.Max = float64(sizes[len(sizes)-1]) * math.Pow(2, 0.25)
	}
	return p, legend, nil
}

// maxSizeLabels is how many size labels fit side by side on the x axis.
const maxSizeLabels = 12

// sizeTicks puts a tick at every size measured, labelled in KiB and MiB
// where the labels do not crowd each other (a size closer than
// 1/maxSizeLabels of the axis to the last labelled one keeps a tick
// without a label). Without sizes it ticks the powers of two.
type sizeTicks struct{ sizes []int64 }

func (t sizeTicks) Ticks(lo, hi float64) []plot.Tick {
	values := t.sizes
	if len(values) == 0 {
		for e := math.Ceil(math.Log2(lo)); math.Pow(2, e) <= hi; e++ {
			values = append(values, int64(math.Pow(2, e)))
		}
	}
	gap := math.Log2(hi/lo) / maxSizeLabels
	var ticks []plot.Tick
	last := math.Inf(-1)
	for _, n := range values {
		v := float64(n)
		if v < lo || v > hi {
			continue
		}
		tick := plot.Tick{Value: v}
		if math.Log2(v)-last >= gap {
			tick.Label = units.FormatSize(n)
			last = math.Log2(v)
		}
		ticks = append(ticks, tick)
	}
	return ticks
}

// rateTicks are gonum's default ticks, labelled without decimals that say
// nothing (25000, not 25000.00).
type rateTicks struct{}

func (rateTicks) Ticks(lo, hi float64) []plot.Tick {
	ticks := plot.DefaultTicks{}.Ticks(lo, hi)
	for i, t := range ticks {
		if t.Label != "" {
			ticks[i].Label = strconv.FormatFloat(t.Value, 'f', -1, 64)
		}
	}
	return ticks
}
