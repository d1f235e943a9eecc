package main

import (
	"os"
	"regexp"
	"strconv"
	"strings"
	"testing"

	"github.com/usbflash/usbflash/internal/testkit/testimage"
)

// TestUsageFormatExamples runs the examples of docs/usage.md's sections
// on image formats, disc images, format and erase as printed, in-process,
// in a directory holding the images they name (made at test time: the
// archives by their own tools, the ISOs by xorriso), with the sim: cards
// they name. Each exits as its comment says ("# exit 3"), else 0.
func TestUsageFormatExamples(t *testing.T) {
	img := testImage(3<<20 + 512)
	headings := []string{"### Image formats", "### Disc images (Windows installers)", "### `format`", "### `erase`"}
	sections := make([][]string, len(headings))
	for i, h := range headings {
		sections[i] = docSection(t, "docs/usage.md", h)
	}
	t.Chdir(t.TempDir())
	for name, data := range map[string][]byte{
		"os.img.lz4": testimage.Compress(t, "lz4", img),
		"os.img.7z":  testimage.Compress(t, "7z", img),
		"os.tar.xz":  testimage.Compress(t, "tar.xz", img),
		"Win11.iso":  testimage.ISO(t, "CCCOMA_X64FRE_EN-US_DV9", false),
		"debian.iso": testimage.ISO(t, "DEBIAN 12", true),
	} {
		if err := os.WriteFile(name, data, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	exitRE := regexp.MustCompile(`# exit (\d+)`)
	ran := 0
	for _, section := range sections {
		in := false
		for _, line := range section {
			if strings.HasPrefix(line, "```") {
				in = !in
				continue
			}
			if !in {
				continue
			}
			want := 0
			if m := exitRE.FindStringSubmatch(line); m != nil {
				want, _ = strconv.Atoi(m[1])
			}
			words := shellWords(t, line)
			if len(words) < 2 || words[0] != "usbflash" {
				t.Fatalf("not a usbflash command: %q", line)
			}
			r := runCLI(t, words[1:]...)
			if r.code != want {
				t.Errorf("%s\nexit %d, want %d\nstdout: %s\nstderr: %s", line, r.code, want, r.stdout, r.stderr)
			}
			ran++
		}
	}
	if ran < 13 {
		t.Errorf("ran %d examples; the sections print 13", ran)
	}
}
