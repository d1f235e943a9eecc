//go:build unix

package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestUsageURLExamples runs the examples of docs/usage.md's sections on
// images from a URL and from a catalog as printed, in-process: a local
// server answers at the printed paths (its address in place of the
// printed hosts, http in place of https), a simulated card is usb:1, the
// cache directory is a temporary one, and --yes answers the question no
// person is there to answer. Each must succeed, the card holding the image.
// They run as the usbflash process, in a directory of their own.
func TestUsageURLExamples(t *testing.T) {
	t.Parallel()
	bin := usbflashBinary(t)
	img := testImage(3<<20 + 512)
	file := compress(t, "xz", img)
	entry := func(name, url string) string { return osEntry(name, url, img, file) }
	// A list shaped as rpi-imager's: folders of entries.
	list := `{"os_list": [
		{"name": "Raspberry Pi OS (other)", "subitems": [` + entry("Raspberry Pi OS Lite (64-bit)", "os/os.img.xz") + `]},
		{"name": "Other general-purpose OS", "subitems": [` + entry("Ubuntu Server 24.04.3 LTS (64-bit)", "os/os.img.xz") + `]}]}`
	srv := serveFiles(t, map[string][]byte{"/os/os.img.xz": file, "/os_list.json": []byte(list)})

	var sections [][]string
	for _, heading := range []string{"### Images from a URL", "### Images from a catalog"} {
		sections = append(sections, docSection(t, "docs/usage.md", heading))
	}
	dir := t.TempDir() // holds os_list.json, as the examples name it
	if err := os.WriteFile(filepath.Join(dir, "os_list.json"), []byte(strings.ReplaceAll(list, `"os/`, `"`+srv.URL+`/os/`)), 0o644); err != nil {
		t.Fatal(err)
	}
	card := filepath.Join(dir, "card.img")
	var ran int
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
			words := shellWords(t, line)
			var env []string
			for len(words) > 0 && strings.Contains(words[0], "=") {
				env = append(env, words[0])
				words = words[1:]
			}
			if len(words) == 0 || words[0] != "usbflash" {
				t.Fatalf("not a usbflash command: %q", line)
			}
			args := words[1:]
			for i, a := range args {
				a = strings.Replace(a, "https://downloads.example.org", srv.URL, 1)
				a = strings.Replace(a, "https://example.org", srv.URL, 1)
				switch {
				case a == "usb:1":
					a = "sim:" + card + "?size=8MiB"
				case strings.HasPrefix(a, "~/"):
					a = filepath.Join(dir, a[2:])
				}
				args[i] = a
			}
			if args[0] == "write" {
				args = append([]string{"write", "--yes"}, args[1:]...)
				os.Remove(card) // each write starts from a blank card
			}
			r := runIn(t, bin, dir, env, args...)
			if r.code != 0 {
				t.Fatalf("%s\nexit %d\nstdout: %s\nstderr: %s", line, r.code, r.stdout, r.stderr)
			}
			if args[0] == "write" && !holds(card, img) {
				t.Fatalf("%s: the card does not hold the image", line)
			}
			ran++
		}
	}
	if ran < 7 {
		t.Errorf("ran %d examples; the sections print 7", ran)
	}
}
