package main

import (
	"io"
	"math"
	"path/filepath"
	"strings"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/plotutil"
	"gonum.org/v1/plot/vg"

	"usbflash/cardbench"
	"usbflash/internal/outfile"
	"usbflash/internal/units"
)

// writePlot draws MB/s against transfer size (log scale), one curve per
// path, to an SVG or PNG file chosen by its extension, written whole
// (outfile.Write).
func writePlot(path string, series []cardbench.Series, target string, recommended int64) error {
	p := plot.New()
	p.Title.Text = "usbflash bench " + target
	p.X.Label.Text = "transfer size"
	p.Y.Label.Text = "MB/s"
	p.X.Scale = plot.LogScale{}
	p.X.Tick.Marker = sizeTicks{}
	p.Y.Min = 0
	p.Legend.Top = true
	p.Legend.Left = true
	p.Add(plotter.NewGrid())
	for i, s := range series {
		xy := make(plotter.XYs, len(s.Rates))
		for j, r := range s.Rates {
			xy[j].X, xy[j].Y = float64(r.Size), r.Rate/1e6
		}
		line, points, err := plotter.NewLinePoints(xy)
		if err != nil {
			return err
		}
		line.Color = plotutil.Color(i)
		points.Color = plotutil.Color(i)
		points.Shape = plotutil.Shape(i)
		p.Add(line, points)
		p.Legend.Add(s.Name(), line, points)
	}
	format := strings.ToLower(strings.TrimPrefix(filepath.Ext(path), "."))
	wt, err := p.WriterTo(9*vg.Inch, 5*vg.Inch, format)
	if err != nil {
		return err
	}
	return outfile.Write(path, func(w io.Writer) error {
		_, err := wt.WriteTo(w)
		return err
	})
}

// sizeTicks labels the size axis at powers of four, in KiB and MiB.
type sizeTicks struct{}

func (sizeTicks) Ticks(lo, hi float64) []plot.Tick {
	var ticks []plot.Tick
	for e := math.Floor(math.Log2(lo)); math.Pow(2, e) <= hi; e++ {
		v := math.Pow(2, e)
		if v < lo {
			continue
		}
		t := plot.Tick{Value: v}
		if int(e)%2 == 1 {
			t.Label = units.FormatSize(int64(v))
		}
		ticks = append(ticks, t)
	}
	return ticks
}
