package main

import (
	"bytes"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/usbflash/usbflash/internal/testkit/osimage"
)

// TestCustomizeCommand: `usbflash customize` from its flags to what it
// says: a card customised in place; one lost while its first transfer was
// zeroed, whose error gives the two restore commands, and the one that
// finishes it, run; no setting at all refused as a usage error.
func TestCustomizeCommand(t *testing.T) {
	tmp := t.TempDir()
	t.Setenv("TMPDIR", tmp) // where the region lists are kept
	img, err := osimage.BootableAs(t.TempDir(), osimage.Layout{FAT: "12", GPT: true}, 1<<20, 4<<20, 1<<20, osimage.RaspiosBoot, 3)
	if err != nil {
		t.Fatal(err)
	}
	card := writeFile(t, "card.img", img)
	// No terminal and no --yes: asked nobody, so refused, the card as it was.
	r := runCLI(t, "customize", "--hostname", "station-{n}", "sim:"+card)
	if b, _ := os.ReadFile(card); r.code != 3 || !strings.Contains(r.stderr, "--yes") || !bytes.Equal(b, img) {
		t.Fatalf("customize without --yes: code %d, card unchanged %v\n%s", r.code, bytes.Equal(b, img), r.stderr)
	}
	r = runCLI(t, "customize", "--yes", "--hostname", "station-{n}", "--user", "maker", "sim:"+card)
	if r.code != 0 || !strings.Contains(r.stdout, "card.img customised (systemd, FAT12): firstrun.sh, cmdline.txt; read back the same") {
		t.Fatalf("customize: code %d\n%s\n%s", r.code, r.stdout, r.stderr)
	}

	// Lost after 1.2 MB: past the first transfer's read and the boot
	// partition's, within the 128 KiB of zeros over the first transfer.
	lost := writeFile(t, "lost.img", img)
	r = runCLI(t, "customize", "--yes", "--transfer-size", "128KiB", "--hostname", "h", "sim:"+lost+"?fault=disconnect:after=1250000")
	m := regexp.MustCompile(`usbflash restore (\S+) (\S+)\nor put the card back as it was with\n  usbflash restore (\S+) `).FindStringSubmatch(r.stderr)
	if r.code == 0 || m == nil || !strings.Contains(r.stderr, "while its first 131072 bytes were zeroed") {
		t.Fatalf("customize, lost: code %d\n%s", r.code, r.stderr)
	}
	if r = runCLI(t, "restore", m[1], "sim:"+lost); r.code != 0 {
		t.Fatalf("restore: code %d\n%s", r.code, r.stderr)
	}
	b, err := os.ReadFile(lost)
	if err != nil {
		t.Fatal(err)
	}
	if b[510] != 0x55 || b[511] != 0xAA || string(b[512:520]) != "EFI PART" {
		t.Error("the finished card has no partition table")
	}
	for _, f := range []string{m[1], m[3]} {
		if filepath.Dir(f) != tmp {
			t.Errorf("list %s is not in $TMPDIR", f)
		}
	}

	if r = runCLI(t, "customize", "sim:"+card); r.code != 2 || !strings.Contains(r.stderr, "say what to write") {
		t.Errorf("no setting: code %d\n%s", r.code, r.stderr)
	}
}
