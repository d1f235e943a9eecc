package main

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/usbflash/usbflash/internal/ui/report"
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
		t.Run(command+"/"+tc.name, func(t *testing.T) {
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

// TestBlocksCommands: erase writes zeros over every block and format lays
// the card out, each reading it back and saying how, in words and in
// --json; without --yes and a terminal nothing is written. What their
// flags alone refuse is TestFlags'; the promises they keep, session's.
func TestBlocksCommands(t *testing.T) {
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
	})
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
		{name: "not confirmed", args: []string{"CARD?size=2GiB"}, code: exitRefused, stderr: []string{"Pass --yes"}, card: cardUnchanged},
	})
}

// TestBlocksWatchSimBus: format --watch and erase --watch on --readers
// sim:DIR are stations as write --watch is: a reader with a card is taken,
// one plugged in later too, each card for its own size (a 2 GiB card
// FAT32, a 64 GiB one exFAT); --all formats every reader with a card.
func TestBlocksWatchSimBus(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		command    string
		sizes      [2]int64
		args       []string
		check      func(t *testing.T, name string, b []byte)
		partitions [2]byte // the MBR partition types, format's
	}{
		{command: "format", sizes: [2]int64{2 << 30, 64 << 30}, partitions: [2]byte{0x0C, 0x07}},
		{command: "erase", sizes: [2]int64{4 << 20, 8 << 20}},
	} {
		t.Run(tc.command, func(t *testing.T) {
			t.Parallel()
			dir := t.TempDir()
			card := func(name string) string { return filepath.Join(dir, name+".img") }
			saved := filepath.Join(t.TempDir(), "station.json")
			fill(t, card("a"), tc.sizes[0])
			ctx, cancel := context.WithCancel(context.Background())
			defer cancel()
			done := make(chan result)
			go func() {
				done <- runCLIContext(t, ctx, nil, "--readers", "sim:"+dir, tc.command, "--watch", "--yes", "--report", saved)
			}()
			var rep report.JSON
			deadline := time.After(60 * time.Second)
			for len(rep.Cards) < 2 {
				select {
				case <-deadline:
					cancel()
					t.Fatalf("after 60 s, %d cards in the report, want 2", len(rep.Cards))
				case <-time.After(5 * time.Millisecond):
				}
				b, err := os.ReadFile(saved)
				var now report.JSON
				if err != nil || json.Unmarshal(b, &now) != nil || len(now.Cards) == len(rep.Cards) {
					continue
				}
				if rep = now; len(rep.Cards) == 1 {
					fill(t, card("b"), tc.sizes[1]) // a reader plugged in, a card in it
				}
			}
			cancel()
			if r := <-done; r.code != exitOK {
				t.Fatalf("exit %d\n%s%s", r.code, r.stdout, r.stderr)
			}
			for i, name := range []string{"a", "b"} {
				if rep.Cards[i].Result != "ok" {
					t.Errorf("card %d: %+v", i, rep.Cards[i])
				}
				b := head(t, card(name))
				switch tc.command {
				case "format":
					if b[446+4] != tc.partitions[i] || b[510] != 0x55 {
						t.Errorf("%s: partition type %#x, want %#x", name, b[446+4], tc.partitions[i])
					}
				case "erase":
					if bytes.Count(b, []byte{0}) != len(b) {
						t.Errorf("%s is not zeros", name)
					}
				}
			}
		})
	}
	// --all: every reader with a card, an empty slot passed over.
	dir := t.TempDir()
	fill(t, filepath.Join(dir, "a.img"), 2<<30)
	fill(t, filepath.Join(dir, "b.img"), 0)
	fill(t, filepath.Join(dir, "c.img"), 64<<30)
	r := runCLI(t, "--readers", "sim:"+dir, "format", "--all", "--yes")
	if r.code != exitOK || !strings.Contains(r.stdout, "FAT32") || !strings.Contains(r.stdout, "exFAT") {
		t.Fatalf("format --all: exit %d\n%s%s", r.code, r.stdout, r.stderr)
	}
}

// fill makes a card file of size bytes whose first MiB is 0xa5 bytes (0:
// an empty slot), sparse past it.
func fill(t *testing.T, path string, size int64) {
	t.Helper()
	f, err := os.Create(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if size > 0 {
		f.Write(bytes.Repeat([]byte{0xa5}, int(min(size, 1<<20))))
		if err := f.Truncate(size); err != nil {
			t.Fatal(err)
		}
	}
}

// head is the first MiB of a card file.
func head(t *testing.T, path string) []byte {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	b := make([]byte, 1<<20)
	n, _ := f.Read(b)
	return b[:n]
}
