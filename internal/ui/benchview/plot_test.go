package benchview

import (
	"bytes"
	"encoding/xml"
	"fmt"
	"image/png"
	"io"
	"math"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/go-analyze/charts/chartdraw"
	"github.com/go-analyze/charts/chartdraw/drawing"

	"github.com/usbflash/usbflash/internal/lib/units"
	"github.com/usbflash/usbflash/internal/probe/cardbench"
)

// TestPlot: bench's plot, from its axes to the file.
func TestPlot(t *testing.T) {
	t.Parallel()
	for _, tt := range []struct {
		name string
		test func(*testing.T)
	}{
		{"size ticks", testSizeTicks}, {"rate ticks", testRateTicks}, {"layout", testPlotLayout},
		{"png", testPlotPNG}, {"formats", testPlotFormats},
	} {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			tt.test(t)
		})
	}
}

// testSizeTicks: a tick at every size measured, labels that do not crowd
// (120 KiB beside 128 KiB keeps only a tick), and the first size labelled.
func testSizeTicks(t *testing.T) {
	for _, tt := range []struct {
		name  string
		sizes []int64
	}{
		{"the default sweep", cardbench.Sizes(512, cardbench.MaxSize)},
		{"a few sizes", []int64{4 << 10, 64 << 10, 120 << 10, 1 << 20}},
		{"one size", []int64{1 << 20}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			lo, hi := float64(tt.sizes[0])/1.2, float64(tt.sizes[len(tt.sizes)-1])*1.2
			ticks := sizeTicks(tt.sizes, lo, hi)
			var values []int64
			last := math.Inf(-1)
			for _, tick := range ticks {
				values = append(values, int64(tick.Value))
				if tick.Label == "" {
					continue
				}
				if tick.Label != units.FormatSize(int64(tick.Value)) {
					t.Errorf("tick at %v labelled %q", tick.Value, tick.Label)
				}
				if d := math.Log2(tick.Value) - last; d < math.Log2(hi/lo)/maxSizeLabels {
					t.Errorf("label %q is %.2f doublings from the last one: crowded", tick.Label, d)
				}
				last = math.Log2(tick.Value)
			}
			if !slices.Equal(values, tt.sizes) {
				t.Errorf("ticks at %v, want every size %v", values, tt.sizes)
			}
			if ticks[0].Label == "" {
				t.Error("the first size has no label")
			}
		})
	}
}

// testRateTicks: round steps from zero to at least the top, labelled
// without empty decimals.
func testRateTicks(t *testing.T) {
	for _, tt := range []struct {
		top  float64
		want string
	}{
		{40, "0 5 10 15 20 25 30 35 40"},
		{39.2, "0 5 10 15 20 25 30 35 40"},
		{312, "0 50 100 150 200 250 300 350"},
		{0.7, "0.0 0.1 0.2 0.3 0.4 0.5 0.6 0.7"},
		{0, "0.0 0.2 0.4 0.6 0.8 1.0"},
	} {
		var labels []string
		for _, tick := range rateTicks(0, tt.top) {
			labels = append(labels, tick.Label)
		}
		if got := strings.Join(labels, " "); got != tt.want {
			t.Errorf("ticks to %v: %s, want %s", tt.top, got, tt.want)
		}
	}
}

// samplePlotSeries is a sweep of the direct path: reads at 1 ms per
// command at 40 MB/s, writes at 60% of that.
func samplePlotSeries() []cardbench.Series {
	var points []cardbench.Point
	for _, n := range cardbench.Sizes(512, cardbench.MaxSize) {
		for _, op := range []string{cardbench.OpRead, cardbench.OpWrite} {
			rate := 40e6 * float64(n) / (float64(n) + 40e3)
			if op == cardbench.OpWrite {
				rate *= 0.6
			}
			points = append(points, cardbench.Point{Path: cardbench.PathDirect, Op: op, Size: n, Region: "start",
				Bytes: n * 10, Elapsed: time.Duration(float64(n*10) / rate * float64(time.Second))})
		}
	}
	return cardbench.Summarize(points)
}

// testPlotLayout draws a sample run to SVG and checks what it holds and
// where its texts land: valid XML, all texts inside the image, the sizes
// on a log scale (as far apart for every doubling), a curve in its color
// for each series and the recommended size as a dashed line at its tick,
// the legend beside the curves rather than over them, naming each.
func testPlotLayout(t *testing.T) {
	series := samplePlotSeries()
	path := filepath.Join(t.TempDir(), "bench.svg")
	if err := WritePlot(path, series, "sim:card.img", 2<<20); err != nil {
		t.Fatal(err)
	}
	svg, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	for d := xml.NewDecoder(bytes.NewReader(svg)); ; {
		if _, err := d.Token(); err == io.EOF {
			break
		} else if err != nil {
			t.Fatalf("not well-formed XML: %v", err)
		}
	}
	box := regexp.MustCompile(`<svg [^>]*viewBox="0 0 ([0-9]+) ([0-9]+)"`).FindSubmatch(svg)
	if box == nil {
		t.Fatalf("no <svg> with a viewBox:\n%.300s", svg)
	}
	width, _ := strconv.ParseFloat(string(box[1]), 64)
	height, _ := strconv.ParseFloat(string(box[2]), 64)

	// Texts are measured in the plot's font, as the library lays them out.
	measure := chartdraw.SVG(1, 1)
	measure.SetFont(chartdraw.GetDefaultFont())
	textWidth := func(s string, px float64) float64 {
		measure.SetFontSize(px * 72 / measure.GetDPI())
		return float64(measure.MeasureText(s).Width())
	}
	type text struct {
		x, y, size, width float64 // y is the baseline
		s                 string
	}
	var texts []text
	for _, m := range regexp.MustCompile(`<text x="(-?[0-9]+)" y="(-?[0-9]+)" style="[^"]*font-size:([0-9.]+)px[^"]*"( transform="[^"]*")?>([^<]*)</text>`).FindAllSubmatch(svg, -1) {
		if len(m[4]) > 0 {
			continue // the y axis' name, turned
		}
		x, _ := strconv.ParseFloat(string(m[1]), 64)
		y, _ := strconv.ParseFloat(string(m[2]), 64)
		size, _ := strconv.ParseFloat(string(m[3]), 64)
		s := string(m[5])
		texts = append(texts, text{x, y, size, textWidth(s, size), s})
	}
	find := func(s string) text {
		for _, tx := range texts {
			if tx.s == s {
				return tx
			}
		}
		t.Fatalf("no text %q in the plot", s)
		return text{}
	}
	for _, tx := range texts {
		if tx.x < 0 || tx.x+tx.width > width || tx.y-tx.size < 0 || tx.y > height {
			t.Errorf("%q at (%.0f, %.0f) is cut at the edge of the %.0fx%.0f image", tx.s, tx.x, tx.y, width, height)
		}
	}
	find("usbflash bench sim:card.img")
	find("transfer size (log scale)")
	if !regexp.MustCompile(`transform="rotate\([^"]*"\s*>MB/s</text>`).Match(svg) {
		t.Error("no turned MB/s on the y axis")
	}

	// The size labels' centres, a doubling apart twice over, are as far
	// apart each time; the recommended size's dashed line is at its tick.
	centre := func(s string) float64 { tx := find(s); return tx.x + tx.width/2 }
	if a, b := centre("2 KiB")-centre("512 B"), centre("8 KiB")-centre("2 KiB"); math.Abs(a-b) > 3 {
		t.Errorf("512 B to 2 KiB is %.0f wide, 2 KiB to 8 KiB %.0f: not a log scale", a, b)
	}
	if a, b := centre("32 MiB")-centre("8 MiB"), centre("8 KiB")-centre("2 KiB"); math.Abs(a-b) > 3 {
		t.Errorf("8 MiB to 32 MiB is %.0f wide, 2 KiB to 8 KiB %.0f: not a log scale", a, b)
	}
	paths := regexp.MustCompile(`<path( stroke-dasharray="[^"]*")? d="([^"]*)" style="[^"]*stroke:rgb\(([0-9]+),([0-9]+),([0-9]+)\)`).FindAllSubmatch(svg, -1)
	stroked := func(c drawing.Color, dashed bool) (ds []string) {
		for _, p := range paths {
			if string(p[3]) == strconv.Itoa(int(c.R)) && string(p[4]) == strconv.Itoa(int(c.G)) && string(p[5]) == strconv.Itoa(int(c.B)) && (len(p[1]) > 0) == dashed {
				ds = append(ds, string(p[2]))
			}
		}
		return ds
	}
	for i, s := range series {
		// The curve, with a point per size, and its sample in the legend.
		var points int
		for _, d := range stroked(plotColors[i], false) {
			points = max(points, strings.Count(d, "L")+1)
		}
		if points != len(s.Rates) || len(stroked(plotColors[i], false)) < 2 {
			t.Errorf("%s: no curve of %d points and a legend sample in its color", s.Name(), len(s.Rates))
			continue
		}
		// Its points at their sizes' ticks, the first and the last.
		d := stroked(plotColors[i], false)[0]
		var first, last, y float64
		fmt.Sscanf(d, "M %f", &first)
		fmt.Sscanf(d[strings.LastIndex(d, "L"):], "L %f %f", &last, &y)
		if math.Abs(first-centre("512 B")) > 2 || math.Abs(last-centre("32 MiB")) > 2 {
			t.Errorf("%s runs from x %.0f to %.0f, want from the 512 B tick at %.0f to the 32 MiB one at %.0f", s.Name(), first, last, centre("512 B"), centre("32 MiB"))
		}
	}
	dashed := stroked(recommendedColor, true)
	var lineX float64
	if len(dashed) == 0 {
		t.Fatal("no dashed line for the recommended size")
	}
	if _, err := fmt.Sscanf(dashed[0], "M %f", &lineX); err != nil || math.Abs(lineX-centre("2 MiB")) > 2 {
		t.Errorf("the dashed line at x %.0f (%q), want at the 2 MiB tick, %.0f", lineX, dashed, centre("2 MiB"))
	}

	// The legend is right of the last size label, which is right of the
	// last point.
	rightmost := find("32 MiB")
	for _, name := range []string{"direct", "direct write", "recommended: 2 MiB"} {
		if tx := find(name); tx.x < rightmost.x+rightmost.width {
			t.Errorf("legend entry %q at x %.0f: over the curves, which end before %.0f", name, tx.x, rightmost.x+rightmost.width)
		}
	}
}

// testPlotPNG: the same plot as a PNG of the plot's size, every curve
// drawn in its color.
func testPlotPNG(t *testing.T) {
	series := samplePlotSeries()
	path := filepath.Join(t.TempDir(), "bench.png")
	if err := WritePlot(path, series, "sim:card.img", 2<<20); err != nil {
		t.Fatal(err)
	}
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	img, err := png.Decode(f)
	if err != nil {
		t.Fatal(err)
	}
	if b := img.Bounds(); b.Dx() != plotWidth || b.Dy() != plotHeight {
		t.Fatalf("%v, want %dx%d", b, plotWidth, plotHeight)
	}
	count := map[drawing.Color]int{}
	for y := 0; y < plotHeight; y++ {
		for x := 0; x < plotWidth; x++ {
			r, g, b, _ := img.At(x, y).RGBA()
			count[drawing.Color{R: uint8(r >> 8), G: uint8(g >> 8), B: uint8(b >> 8), A: 0xff}]++
		}
	}
	for i, s := range series {
		if n := count[plotColors[i]]; n < 200 {
			t.Errorf("%s: %d pixels in its color, no curve", s.Name(), n)
		}
	}
	if n := count[recommendedColor]; n < 100 {
		t.Errorf("%d pixels in the recommended size's color, no line", n)
	}
}

// testPlotFormats: the extension chooses the format; another is an error,
// and no file.
func testPlotFormats(t *testing.T) {
	dir := t.TempDir()
	series := samplePlotSeries()
	for name, magic := range map[string]string{"a.SVG": "<?xml", "b.png": "\x89PNG"} {
		if err := WritePlot(filepath.Join(dir, name), series, "t", 0); err != nil {
			t.Fatal(err)
		}
		if b, _ := os.ReadFile(filepath.Join(dir, name)); !bytes.HasPrefix(b, []byte(magic)) {
			t.Errorf("%s starts %q", name, b[:min(len(b), 8)])
		}
	}
	if err := WritePlot(filepath.Join(dir, "c.pdf"), series, "t", 0); err == nil {
		t.Error("c.pdf: no error")
	}
	if _, err := os.Stat(filepath.Join(dir, "c.pdf")); err == nil {
		t.Error("c.pdf written")
	}
	if err := WritePlot(filepath.Join(dir, "d.svg"), nil, "t", 0); err == nil {
		t.Error("no series: no error")
	}
}
