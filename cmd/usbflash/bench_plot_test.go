package main

import (
	"math"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"testing"
	"time"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/vg"

	"usbflash/cardbench"
	"usbflash/internal/units"
)

// TestSizeTicks: a tick at every size measured, labels that do not crowd
// (120 KiB beside 128 KiB keeps only a tick), and the first size labelled.
func TestSizeTicks(t *testing.T) {
	t.Parallel()
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
			ticks := sizeTicks{sizes: tt.sizes}.Ticks(lo, hi)
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

// TestPlotLayout draws a sample run to SVG and checks where its texts
// land: all inside the image (the title and the last size label were
// cut), the legend beside the curves rather than over them, and the
// recommended size named.
func TestPlotLayout(t *testing.T) {
	t.Parallel()
	var points []cardbench.Point
	for _, n := range cardbench.Sizes(512, cardbench.MaxSize) {
		for _, op := range []string{cardbench.OpRead, cardbench.OpWrite} {
			rate := 40e6 * float64(n) / (float64(n) + 40e3) // 1 ms per command at 40 MB/s
			points = append(points, cardbench.Point{Path: cardbench.PathDirect, Op: op, Size: n, Region: "start",
				Bytes: n * 10, Elapsed: time.Duration(float64(n*10) / rate * float64(time.Second))})
		}
	}
	series := cardbench.Summarize(points)
	path := filepath.Join(t.TempDir(), "bench.svg")
	if err := writePlot(path, series, "sim:card.img", 2<<20); err != nil {
		t.Fatal(err)
	}
	svg, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	size := regexp.MustCompile(`<svg width="([0-9.]+)pt" height="([0-9.]+)pt"`).FindSubmatch(svg)
	width, _ := strconv.ParseFloat(string(size[1]), 64)
	height, _ := strconv.ParseFloat(string(size[2]), 64)
	type text struct {
		x, y, size float64
		s          string
	}
	var texts []text
	// The y axis' label is turned (a rotated group): left out.
	flat := regexp.MustCompile(`(?s)<g transform="rotate\(90\)">.*?</g>`).ReplaceAll(svg, nil)
	for _, m := range regexp.MustCompile(`<text x="([-0-9.]+)" y="([-0-9.]+)"[^>]*font-size:([0-9.]+)px">([^<]*)</text>`).FindAllSubmatch(flat, -1) {
		x, _ := strconv.ParseFloat(string(m[1]), 64)
		y, _ := strconv.ParseFloat(string(m[2]), 64)
		fs, _ := strconv.ParseFloat(string(m[3]), 64)
		texts = append(texts, text{x, -y, fs, string(m[4])}) // y is flipped: scale(1, -1)
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
	style := plot.NewLegend().TextStyle
	for _, tx := range texts {
		style.Font.Size = vg.Length(tx.size)
		if tx.x < 0 || tx.x+float64(style.Width(tx.s)) > width || tx.y < 0 || tx.y+tx.size > height {
			t.Errorf("%q at (%.0f, %.0f) is cut at the edge of the %.0fx%.0f image", tx.s, tx.x, tx.y, width, height)
		}
	}
	find("usbflash bench sim:card.img")
	rightmost := find("32 MiB")
	for _, name := range []string{"direct", "direct write", "recommended: 2 MiB"} {
		if tx := find(name); tx.x < rightmost.x+3*rightmost.size {
			t.Errorf("legend entry %q at x %.0f: over the curves, which end at %.0f", name, tx.x, rightmost.x)
		}
	}
}
