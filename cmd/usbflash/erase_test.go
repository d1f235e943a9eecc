package main

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// blocksCase is one run of erase or format on a sim: card (CARD in args)
// whose first MiB held 0xa5 bytes.
type blocksCase struct {
	name   string
	args   []string
	code   int
	stdout []string // each in stdout; sim:CARD is the card
	stderr []string // each in stderr
	// card checks what the card holds after.
	card func(t *testing.T, got, old []byte)
}

// runBlocksCases runs command's cases, each on a new card.
func runBlocksCases(t *testing.T, command string, cases []blocksCase) {
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			card := filepath.Join(t.TempDir(), "card.img")
			old := bytes.Repeat([]byte{0xa5}, 1<<20)
			if err := os.WriteFile(card, old, 0o644); err != nil {
				t.Fatal(err)
			}
			args := []string{command}
			for _, a := range tc.args {
				args = append(args, strings.Replace(a, "CARD", "sim:"+card, 1))
			}
			r := runCLI(t, args...)
			if r.code != tc.code {
				t.Fatalf("exit %d, want %d\nstdout: %s\nstderr: %s", r.code, tc.code, r.stdout, r.stderr)
			}
			for _, s := range tc.stdout {
				if s = strings.Replace(s, "sim:CARD", "sim:"+card, 1); !strings.Contains(r.stdout, s) {
					t.Errorf("stdout does not say %q:\n%s", s, r.stdout)
				}
			}
			for _, s := range tc.stderr {
				if !strings.Contains(r.stderr, s) {
					t.Errorf("stderr does not say %q:\n%s", s, r.stderr)
				}
			}
			f, err := os.Open(card)
			if err != nil {
				t.Fatal(err)
			}
			defer f.Close()
			got := make([]byte, 4<<20)
			n, _ := f.Read(got)
			tc.card(t, got[:n], old)
		})
	}
}

// cardUnchanged: the card is as it was.
func cardUnchanged(t *testing.T, got, old []byte) {
	if !bytes.Equal(got[:len(old)], old) {
		t.Error("a card that was not to be written changed")
	}
}

// TestEraseCommand: erase writes zeros over every block and reads them
// back; it asks first, refuses without a terminal or --yes, refuses a
// write-protected card, and says what it cannot reach.
func TestEraseCommand(t *testing.T) {
	t.Parallel()
	zeros := func(t *testing.T, got, _ []byte) {
		if len(got) != 4<<20 || bytes.Count(got, []byte{0}) != len(got) {
			t.Errorf("the card is not %d zero bytes", 4<<20)
		}
	}
	runBlocksCases(t, "erase", []blocksCase{
		{name: "zeros", args: []string{"--yes", "CARD?size=4MiB"}, code: exitOK, card: zeros,
			stdout: []string{"Erasing sim:CARD", "writing zeros", "offers no unmap", "Verified 4.19 MB read back"}},
		{name: "json", args: []string{"--yes", "--json", "CARD?size=4MiB"}, code: exitOK, card: zeros,
			stdout: []string{`"command":"erase"`, `"event":"summary"`, `"verified":true`}},
		{name: "not confirmed without a terminal", args: []string{"CARD?size=4MiB"}, code: exitRefused, stderr: []string{"Pass --yes"}, card: cardUnchanged},
		{name: "write-protected", args: []string{"--yes", "CARD?size=4MiB&wp=1"}, code: exitRefused, stderr: []string{"write-protected"}, card: cardUnchanged},
		{name: "no target", args: []string{"--yes"}, code: exitUsage, stderr: []string{"at least one TARGET"}, card: cardUnchanged},
	})
}

// TestFormatCommand: format lays the card out and says how; a label or
// an erase unit it cannot use is a usage error naming its flag, before any
// card is opened; without --yes and a terminal nothing is written.
func TestFormatCommand(t *testing.T) {
	t.Parallel()
	changed := func(t *testing.T, got, old []byte) {
		if bytes.Equal(got[:len(old)], old) || got[510] != 0x55 || got[511] != 0xaa {
			t.Error("the card holds no partition table")
		}
	}
	runBlocksCases(t, "format", []blocksCase{
		{name: "2 GiB, labelled", args: []string{"--yes", "--label", "pics", "CARD?size=2GiB"}, code: exitOK, card: changed,
			stdout: []string{"Formatting sim:CARD", `FAT32, labelled "PICS", 16 KiB clusters`, "Verified"}},
		{name: "64 GiB, json", args: []string{"--yes", "--json", "CARD?size=64GiB"}, code: exitOK, card: changed,
			stdout: []string{`"command":"format"`, `exFAT, 128 KiB clusters`}},
		{name: "an erase unit given", args: []string{"--yes", "--erase-unit", "8MiB", "CARD?size=16GiB"}, code: exitOK, card: changed,
			stdout: []string{"on a 8 MiB erase unit (given)"}},
		{name: "a label too long", args: []string{"--yes", "--label", "TWELVE CHARS", "CARD?size=2GiB"}, code: exitUsage,
			stderr: []string{"--label", "more than the 11"}, card: cardUnchanged},
		{name: "an erase unit of no power of two", args: []string{"--yes", "--erase-unit", "3MiB", "CARD?size=2GiB"}, code: exitUsage,
			stderr: []string{"--erase-unit", "not a power of two"}, card: cardUnchanged},
		{name: "not confirmed", args: []string{"CARD?size=2GiB"}, code: exitRefused, stderr: []string{"Pass --yes"}, card: cardUnchanged},
	})
}
