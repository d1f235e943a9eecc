package main

import (
	"bytes"
	"context"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// testBenchPlot: --plot saves the chart as the name's extension says.
func testBenchPlot(t *testing.T) {
	for _, tt := range []struct{ ext, magic string }{{".svg", "<?xml"}, {".png", "\x89PNG"}} {
		card := benchCard(t)
		plot := filepath.Join(t.TempDir(), "bench"+tt.ext)
		r := runCLI(t, benchArgs("--quiet", "--plot", plot, "--sizes", "4KiB,64KiB", "sim:"+card)...)
		if r.code != exitOK {
			t.Fatalf("exit %d\n%s", r.code, r.stderr)
		}
		b, err := os.ReadFile(plot)
		if err != nil || !bytes.HasPrefix(b, []byte(tt.magic)) {
			t.Errorf("plot %s: %v, starts %q", plot, err, b[:min(len(b), 8)])
		}
	}
}

// testBenchPlotLost: a plot that cannot be saved after the run (its
// directory went away meanwhile) is an error with its exit code, also
// with -q, after the results.
func testBenchPlotLost(t *testing.T) {
	card := benchCard(t)
	for _, quiet := range []string{"-q", "--json"} {
		dir := filepath.Join(t.TempDir(), "plots")
		if err := os.Mkdir(dir, 0o755); err != nil {
			t.Fatal(err)
		}
		plot := filepath.Join(dir, "bench.svg")
		var out, errOut bytes.Buffer
		// The question comes after the checks: the directory goes away
		// while the user answers.
		answer := readFunc(func(p []byte) (int, error) {
			os.RemoveAll(dir)
			return copy(p, "y\n"), io.EOF
		})
		a := &app{stdin: answer, stdout: &out, stderr: &errOut, interactive: true}
		code := runApp(context.Background(), a, benchArgs(quiet, "--write", "--preserve", "--skip", "align,random,roundtrip",
			"--sizes", "1MiB", "--region", "4MiB:4MiB", "--plot", plot, "sim:"+card))
		if code != exitDevice {
			t.Errorf("%s: exit %d, want %d\n%s", quiet, code, exitDevice, errOut.String())
		}
		msg := errOut.String()
		if quiet == "--json" {
			msg = lastEvent(t, out.String(), "error")["message"].(string)
			if s := lastEvent(t, out.String(), "summary"); s["plot"] != nil {
				t.Errorf("the summary names a plot that was not saved: %v", s["plot"])
			}
		}
		if !strings.Contains(msg, "--plot: writing "+plot+": no such file or directory") {
			t.Errorf("%s: %q does not say the plot was not written", quiet, msg)
		}
	}
}

type readFunc func([]byte) (int, error)

func (f readFunc) Read(p []byte) (int, error) { return f(p) }
