package main

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestWriteRefusesWhatIsNoImage: an error page saved under the image's name
// is never written: refused as a source (exit 4) when the name promises a
// container, as too small (exit 3, unless --force) otherwise. The card is
// untouched either way.
func TestWriteRefusesWhatIsNoImage(t *testing.T) {
	page := []byte("<!DOCTYPE html>\n<html><body><h1>404 Not Found</h1></body></html>\n")
	for _, tt := range []struct {
		name  string
		image string
		data  []byte
		args  []string
		code  int
		say   []string
	}{
		{"error page named .img.xz", "os.img.xz", page, nil, exitSource,
			[]string{"named .xz", "HTML document"}},
		{"error page named .img", "os.img", page, nil, exitRefused,
			[]string{"only 65 bytes", "HTML document", "1 MiB transfer", "--force"}},
		{"tiny xz archive", "os.img.xz", compress(t, "xz", page), nil, exitRefused,
			[]string{"only 65 bytes", "HTML document"}},
		{"checksum file named .img", "os.img", []byte("3f2a  os.img.xz\n"), []string{"--transfer-size", "4KiB"}, exitRefused,
			[]string{"only 16 bytes", "(text)", "4 KiB transfer"}},
		{"forced", "os.img", page, []string{"--force"}, exitOK, nil},
		{"one transfer exactly", "os.img", testImage(64 << 10), []string{"--transfer-size", "64KiB"}, exitOK, nil},
	} {
		t.Run(tt.name, func(t *testing.T) {
			image := writeFile(t, tt.image, tt.data)
			card := filepath.Join(t.TempDir(), "card.img")
			old := bytes.Repeat([]byte{0xA5}, 1<<20)
			if err := os.WriteFile(card, old, 0o644); err != nil {
				t.Fatal(err)
			}
			args := append(append([]string{"write", "--yes"}, tt.args...), image, "sim:"+card)
			r := runCLI(t, args...)
			if r.code != tt.code {
				t.Fatalf("exit %d, want %d\nstderr: %s", r.code, tt.code, r.stderr)
			}
			for _, s := range tt.say {
				if !strings.Contains(r.stderr, s) {
					t.Errorf("stderr %q does not say %q", r.stderr, s)
				}
			}
			got, _ := os.ReadFile(card)
			if tt.code != exitOK && !bytes.Equal(got, old) {
				t.Error("the card was changed")
			}
			if tt.code == exitOK && !bytes.HasPrefix(got, tt.data) {
				t.Error("the image was not written")
			}
		})
	}
}
