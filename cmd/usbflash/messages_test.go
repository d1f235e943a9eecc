package main

import (
	"flag"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/usbflash/usbflash/internal/testkit/factsonly"
)

// update rewrites the golden files from what the commands print now:
// go test ./cmd/usbflash -run TestMessages -update, then read the diff.
var update = flag.Bool("update", false, "rewrite the golden files in testdata/")

// golden compares got with testdata/name, or writes it there with -update.
func golden(t *testing.T, name, got string) {
	t.Helper()
	path := filepath.Join("testdata", name)
	if *update {
		if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(path, []byte(got), 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("%v (run with -update to create it)", err)
	}
	if got != string(want) {
		t.Errorf("%s differs (run with -update to accept, then read the diff):\ngot\n%s\nwant\n%s", path, got, want)
	}
}

// TestMessagesStateEachFactOnce pins the whole text a person reads for the
// common failures: the facts once (the target, the LBA range), then one
// piece of advice on its own line. TestAdviceTable holds every kind of
// error to the same.
func TestMessagesStateEachFactOnce(t *testing.T) {
	t.Parallel()
	img := testImage(3 << 20)
	tests := []struct {
		name   string
		format string // of the image
		cut    bool   // truncate the image file
		card   string // sim options
		code   int
	}{
		{"unplugged mid-write", "raw", false, "?size=8MiB&fault=disconnect:after=1MiB", exitDevice},
		{"medium error", "raw", false, "?size=8MiB&fault=medium-error:lba=3000,persistent", exitDevice},
		{"empty slot", "raw", false, "?size=8MiB&nomedium=1", exitDevice},
		{"write-protected", "raw", false, "?size=8MiB&wp=1", exitRefused},
		{"too large, known up front", "xz", false, "?size=2MiB", exitRefused},
		{"too large, found at the end of the card", "gzip", false, "?size=2MiB", exitRefused},
		// The committed demo image cut short: offsets that do not move
		// with an encoder's version.
		{"corrupt image", "demo.img.xz", true, "?size=64MiB", exitSource},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var data []byte
			if strings.HasSuffix(tt.format, ".xz") {
				var err error
				if data, err = os.ReadFile(filepath.Join("..", "..", "testdata", tt.format)); err != nil {
					t.Fatal(err)
				}
			} else {
				data = compress(t, tt.format, img)
			}
			if tt.cut {
				data = data[:len(data)/2]
			}
			image := writeFile(t, "os.img", data)
			card := filepath.Join(t.TempDir(), "card.img")
			r := runCLI(t, "write", "--yes", image, "sim:"+card+tt.card)
			if r.code != tt.code {
				t.Errorf("exit %d, want %d", r.code, tt.code)
			}
			golden(t, filepath.Join("messages", strings.ReplaceAll(tt.name, " ", "-")+".txt"),
				strings.ReplaceAll(strings.ReplaceAll(r.stderr, card, "CARD"), image, "IMAGE"))
			// The facts line gives no advice: that is the next line's.
			factsonly.Check(t, strings.SplitN(r.stderr, "\n", 2)[0])
		})
	}
}
