package main

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/usbflash/usbflash/internal/testkit/testpgp"
)

// TestTrustExitCodes (issue 41): write and verify take the same image
// options and end alike, through the exit-code table: a keyring with no
// signed sum for the image is an image error (4), a keyring with no
// checksum looked for and a repair of standard input are usage errors (2),
// a sum the image does not have is an image error; each says so with one
// piece of advice, and the card is not touched.
func TestTrustExitCodes(t *testing.T) {
	t.Parallel()
	keys := testpgp.New(t, "Publisher <pub@example.invalid>", "never").Keyring(true)
	img := testImage(2<<20 + 300)
	imagePath := writeFile(t, "os.img", img)
	zeros := strings.Repeat("0", 64)
	for _, tc := range []struct {
		name string
		args []string // before the card
		code int
		says string
	}{
		{"write, a keyring, no list", []string{"write", imagePath, "--yes", "--sha256-keyring", keys}, exitSource, "no signed SHA-256 for os.img"},
		{"verify, a keyring, no list", []string{"verify", imagePath, "--sha256-keyring", keys}, exitSource, "no signed SHA-256 for os.img"},
		{"verify --repair, a keyring, no list", []string{"verify", imagePath, "--repair", "--sha256-keyring", keys}, exitSource, "no signed SHA-256 for os.img"},
		{"verify, a keyring and no checksum", []string{"verify", imagePath, "--no-sha256", "--sha256-keyring", keys}, exitUsage, "--sha256-keyring and --no-sha256"},
		{"verify --repair, standard input", []string{"verify", "-", "--repair"}, exitUsage, "--repair: a repair decodes the image again"},
		{"verify, another sum", []string{"verify", imagePath, "--sha256", zeros}, exitSource, "the SHA-256 given says " + zeros},
		{"verify --repair, another sum", []string{"verify", imagePath, "--repair", "--sha256", zeros}, exitSource, "the SHA-256 given says " + zeros},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			card := filepath.Join(t.TempDir(), "card.img")
			before := append(bytes.Clone(img), make([]byte, 8<<20-len(img))...)
			before[600000] ^= 1 // a card a repair would write to
			if err := os.WriteFile(card, before, 0o644); err != nil {
				t.Fatal(err)
			}
			r := runCLI(t, append(tc.args, "sim:"+card)...)
			if r.code != tc.code || !strings.Contains(r.stderr, tc.says) {
				t.Fatalf("exit %d, stderr:\n%s\nwant exit %d saying %q", r.code, r.stderr, tc.code, tc.says)
			}
			if lines := strings.Split(strings.TrimSpace(r.stderr), "\n"); len(lines) < 2 {
				t.Errorf("stderr:\n%s\nwant the error and its advice", r.stderr)
			}
			if got, err := os.ReadFile(card); err != nil || !bytes.Equal(got, before) {
				t.Errorf("the card was written to (%v)", err)
			}
		})
	}
}
