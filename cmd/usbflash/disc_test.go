package main

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/usbflash/usbflash/internal/testkit/testimage"
)

// TestWriteDiscImages (issue 46): an ISO made at test time with an El
// Torito boot catalog and no MBR, as a Windows installer's, is refused
// before the first byte (exit 3, the card untouched) with what would boot
// instead; --force writes it raw; a hybrid ISO (-isohybrid-mbr) is
// written as any image.
func TestWriteDiscImages(t *testing.T) {
	t.Parallel()
	win := testimage.ISO(t, "CCCOMA_X64FRE_EN-US_DV9", false)
	hybrid := testimage.ISO(t, "DEBIAN 12", true)
	for _, tc := range []struct {
		name   string
		image  []byte
		file   string
		flags  []string
		code   int
		stderr []string
	}{
		{name: "Windows-like ISO", image: win, file: "Win11.iso", code: exitRefused,
			stderr: []string{"a Windows installer disc image", `volume "CCCOMA_X64FRE_EN-US_DV9"`, "El Torito", "boots nothing", "nothing was written",
				"FAT32 stick holding the ISO's files", "install.wim", "--force"}},
		{name: "Windows-like ISO, xz", image: compress(t, "xz", win), file: "Win11.iso.xz", code: exitRefused, stderr: []string{"boots nothing"}},
		{name: "Windows-like ISO, forced", image: win, file: "Win11.iso", flags: []string{"--force"}, code: exitOK},
		{name: "hybrid ISO", image: hybrid, file: "debian.iso", code: exitOK},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			dir := t.TempDir()
			card := filepath.Join(dir, "card.img")
			old := bytes.Repeat([]byte{0x5a}, 4<<20)
			if err := os.WriteFile(card, old, 0o644); err != nil {
				t.Fatal(err)
			}
			imageRef := writeFile(t, tc.file, tc.image)
			r := runCLI(t, append(append([]string{"write", "--yes"}, tc.flags...), imageRef, "sim:"+card+"?size=4MiB")...)
			if r.code != tc.code {
				t.Fatalf("exit %d, want %d\nstdout: %s\nstderr: %s", r.code, tc.code, r.stdout, r.stderr)
			}
			for _, s := range tc.stderr {
				if !strings.Contains(r.stderr, s) {
					t.Errorf("stderr does not say %q:\n%s", s, r.stderr)
				}
			}
			got, err := os.ReadFile(card)
			if err != nil {
				t.Fatal(err)
			}
			iso := win
			if tc.name == "hybrid ISO" {
				iso = hybrid
			}
			switch {
			case tc.code != exitOK && !bytes.Equal(got, old):
				t.Error("the card was changed")
			case tc.code == exitOK && !bytes.Equal(got[:len(iso)], iso):
				t.Error("the card does not hold the ISO")
			}
		})
	}
}
