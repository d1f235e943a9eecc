//go:build unix

package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestDemoExamples runs the examples README and docs/usage.md print for
// the simulated reader and the demo image as they are printed, in order,
// in a directory holding testdata/demo.img.xz (the repository's) and
// ~/.ssh/id_ed25519.pub: each must exit 0, or 2 where it prints a usage
// error, and print every line docs/usage.md shows under it. They run as
// the usbflash process, in that directory.
func TestDemoExamples(t *testing.T) {
	t.Parallel()
	bin := usbflashBinary(t)
	demo, err := filepath.Abs(filepath.Join("..", "..", "testdata", "demo.img.xz"))
	if err != nil {
		t.Fatal(err)
	}
	readme := docSection(t, "README.md", "## What you can do with it")
	usage := docSection(t, "docs/usage.md", "## First-boot settings: `--customize`")
	dir := t.TempDir()
	if err := os.MkdirAll(filepath.Join(dir, "testdata"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(demo, filepath.Join(dir, "testdata", "demo.img.xz")); err != nil {
		t.Fatal(err)
	}
	if err := os.MkdirAll(filepath.Join(dir, ".ssh"), 0o700); err != nil {
		t.Fatal(err)
	}
	key := "ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIHq8MG/N4le2dfNS0JOAMmvgJDtUxi25HmT+0oiEJQjj maker@laptop\n"
	if err := os.WriteFile(filepath.Join(dir, ".ssh", "id_ed25519.pub"), []byte(key), 0o644); err != nil {
		t.Fatal(err)
	}

	type example struct {
		line string   // as printed
		want []string // the lines printed under it
	}
	var examples []example
	in := false
	for _, l := range readme {
		if strings.HasPrefix(l, "```") {
			in = !in
		} else if in && strings.Contains(l, "sim:") {
			examples = append(examples, example{line: l})
		}
	}
	readmeRuns := len(examples)
	cur := -1 // cur: the example whose printed lines follow
	for _, l := range usage {
		switch {
		case strings.HasPrefix(l, "```"):
			in, cur = !in, -1
		case !in:
		case strings.HasPrefix(l, "$ usbflash ") && strings.Contains(l, "sim:"):
			examples = append(examples, example{line: strings.TrimPrefix(l, "$ ")})
			cur = len(examples) - 1
		case strings.HasPrefix(l, "$ ") || strings.HasPrefix(l, "#") || l == "":
			cur = -1
		case cur >= 0:
			examples[cur].want = append(examples[cur].want, l)
		}
	}
	usageRuns := 0
	for i, ex := range examples {
		words := shellWords(t, ex.line)
		if len(words) < 2 || words[0] != "usbflash" {
			t.Fatalf("not a usbflash command: %q", ex.line)
		}
		args := words[1:]
		for j, a := range args {
			if strings.HasPrefix(a, "~/") {
				args[j] = filepath.Join(dir, a[2:])
			}
		}
		r := runIn(t, bin, dir, nil, args...)
		code := 0
		for _, w := range ex.want {
			if strings.HasPrefix(w, "usbflash: ") {
				code = 2 // a usage error, as printed
			}
		}
		if r.code != code {
			t.Fatalf("%s\nexit %d, want %d\nstdout: %s\nstderr: %s", ex.line, r.code, code, r.stdout, r.stderr)
		}
		for _, w := range ex.want {
			if !strings.Contains(r.stdout+r.stderr, w) {
				t.Errorf("%s\ndoes not print %q:\nstdout: %s\nstderr: %s", ex.line, w, r.stdout, r.stderr)
			}
		}
		if i >= readmeRuns {
			usageRuns++
		}
	}
	if readmeRuns < 4 || usageRuns < 4 {
		t.Errorf("ran %d of README's examples and %d of docs/usage.md's; they print 4 each", readmeRuns, usageRuns)
	}
}
