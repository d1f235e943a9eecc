package main

import (
	"bytes"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
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

// TestCustomizeValuesRefused: a value that breaks its kind's rule is a
// usage error (exit 2) before any card is opened, naming the flag (or the
// file and its key), the value (its control characters escaped) and the
// rule, for write and customize alike.
func TestCustomizeValuesRefused(t *testing.T) {
	t.Parallel()
	hostile := []string{"$(touch /tmp/PWNED)", "`reboot`", "it's", `"q"`, "a\nb", "a;b", "{a: b}", "[x]", "k: v", "#c", "a\x1b[2Jb", strings.Repeat("a", 70)}
	rules := map[string]string{
		"--hostname":     "RFC 1123",
		"--user":         "useradd",
		"--timezone":     "IANA time zone",
		"--keymap":       "XKB keyboard layout",
		"--wifi-country": "ISO 3166-1 alpha-2",
		"--ssh-key":      "SSH public key",
	}
	dir := t.TempDir()
	file := filepath.Join(dir, "pi.toml")
	if err := os.WriteFile(file, []byte("hostname = \"pi; reboot\"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	type run struct {
		args       []string
		want, rule string // the error's start, after "usbflash: "; words of its rule
	}
	var runs []run
	for flag, rule := range rules {
		for _, v := range hostile {
			if flag == "--ssh-key" {
				v = "ssh-ed25519 " + v
			}
			runs = append(runs, run{[]string{flag, v}, flag + ": " + strconv.Quote(v)[:min(len(v), 20)], rule})
		}
	}
	runs = append(runs,
		run{[]string{"--wifi-ssid", "net\x1b[2J"}, `--wifi-ssid: "net\x1b[2J" breaks the rule: `, "SSID"},
		run{[]string{"--wifi-ssid", strings.Repeat("s", 33)}, "--wifi-ssid: ", "1 to 32 bytes"},
		run{[]string{"--customize", file}, "--customize: " + file + `: hostname "pi; reboot" breaks the rule: `, "RFC 1123"})
	for _, r := range runs {
		for _, command := range []string{"write", "customize"} {
			card := filepath.Join(dir, "card.img")
			args := []string{command, "--yes"}
			if command == "write" {
				args = append(args, filepath.Join(dir, "none.img.xz"))
			}
			res := runCLI(t, append(append(args, "sim:"+card+"?size=64MiB"), r.args...)...)
			if res.code != 2 || !strings.HasPrefix(res.stderr, "usbflash: "+r.want) || !strings.Contains(res.stderr, r.rule) {
				t.Errorf("%s %q: exit %d\n%s\nwant usbflash: %s...%s", command, r.args, res.code, res.stderr, r.want, r.rule)
			}
			if strings.ContainsAny(strings.TrimSuffix(res.stderr, "\n"), "\x1b\r") || strings.Count(res.stderr, "\n") > 2 {
				t.Errorf("%s %q: %q is not one fact", command, r.args, res.stderr)
			}
			if _, err := os.Stat(card); err == nil {
				t.Fatalf("%s %q: the card was made", command, r.args)
			}
		}
	}
}
