package main

import (
	"os/exec"
	"strings"
	"testing"
)

// TestStartLinksNoCostlyInit: Go runs every linked package's init at every
// start of the binary, whatever the command, and a slow host pays for it
// on `usbflash version` as on a write. These packages did much at init
// (gonum/plot's output formats and text engine: encoding/gob for the PDF
// writer, the LaTeX symbol tables, the Liberation fonts) for one option of
// one command; the plot is drawn with chartdraw, whose fonts are read when
// a plot is drawn.
func TestStartLinksNoCostlyInit(t *testing.T) {
	t.Parallel()
	goTool, err := exec.LookPath("go")
	if err != nil {
		t.Fatalf("no go command on PATH: %v", err)
	}
	out, err := exec.Command(goTool, "list", "-deps", "-tags", testBuildTags, ".").CombinedOutput()
	if err != nil {
		t.Fatalf("go list: %v\n%s", err, out)
	}
	costly := []string{"encoding/gob", "gonum.org/v1/plot", "codeberg.org/go-latex/", "codeberg.org/go-pdf/", "codeberg.org/go-fonts/"}
	for _, pkg := range strings.Fields(string(out)) {
		for _, c := range costly {
			if pkg == c || strings.HasPrefix(pkg, c+"/") || strings.HasSuffix(c, "/") && strings.HasPrefix(pkg, c) {
				t.Errorf("usbflash links %s, whose init runs at every start", pkg)
			}
		}
	}
}
