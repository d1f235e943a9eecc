package main

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/usbflash/usbflash/internal/testkit/cardfile"
	"github.com/usbflash/usbflash/internal/ui/report"
)

// readersSimBus: --readers sim:DIR is the readers every command sees:
// list shows each card file as a reader (an empty one as an empty slot),
// an N target and --all write them, and a bad setting is a usage error
// naming the flag.
func readersSimBus(t *testing.T) {
	img := testImage(3<<20 + 512)
	image := writeFile(t, "os.img", img)
	for _, tt := range []struct {
		name    string
		args    []string
		code    int
		said    []string
		written []string // the cards that hold the image after
	}{
		{name: "list", args: []string{"list"}, said: []string{"usb:0000:0000:a", "0-a", "usb:0000:0000:b", "no medium"}},
		{name: "list --json", args: []string{"list", "--json"}, said: []string{`"target":"usb:0000:0000:a"`, `"path":"0-b"`}},
		{name: "write N", args: []string{"write", "--yes", image, "0"}, said: []string{"Verified"}, written: []string{"a"}},
		{name: "write --all", args: []string{"write", "--yes", "--all", image}, written: []string{"a", "c"}},
		{name: "write by serial", args: []string{"write", "--yes", image, "usb:0000:0000:c"}, written: []string{"c"}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			dir := t.TempDir()
			cardfile.Size(t, filepath.Join(dir, "a.img"), 8<<20)
			cardfile.Size(t, filepath.Join(dir, "b.img"), 0)
			cardfile.Size(t, filepath.Join(dir, "c.img"), 4<<20)
			r := runCLI(t, append([]string{"--readers", "sim:" + dir}, tt.args...)...)
			out := r.stdout + r.stderr
			if r.code != tt.code {
				t.Fatalf("exit %d, want %d\n%s", r.code, tt.code, out)
			}
			for _, want := range tt.said {
				if !strings.Contains(out, want) {
					t.Errorf("output lacks %q:\n%s", want, out)
				}
			}
			for _, name := range []string{"a", "b", "c"} {
				b, _ := os.ReadFile(filepath.Join(dir, name+".img"))
				if got, want := len(b) >= len(img) && bytes.Equal(b[:len(img)], img), slices.Contains(tt.written, name); got != want {
					t.Errorf("%s holds the image: %v, want %v", name, got, want)
				}
			}
		})
	}
	for _, bad := range []string{"scsi:x", "sim:" + filepath.Join(t.TempDir(), "none"), "sim:" + t.TempDir() + "?size=1MiB"} {
		r := runCLI(t, "--readers", bad, "list")
		if r.code != exitUsage || !strings.Contains(r.stderr, "--readers") {
			t.Errorf("--readers %s: exit %d, want %d naming --readers\n%s", bad, r.code, exitUsage, r.stderr)
		}
	}
}

// watchSimBus: write --watch on --readers sim:DIR is a station of
// simulated readers: a reader plugged in (a card file made) is written,
// one plugged in later too, a card file replaced by another is another
// card; each once, and the run ends as a station's does.
func watchSimBus(t *testing.T) {
	img := testImage(2<<20 + 512)
	image := writeFile(t, "os.img", img)
	dir := t.TempDir()
	card := func(name string) string { return filepath.Join(dir, name+".img") }
	reportPath := filepath.Join(t.TempDir(), "station.json")
	cardfile.Size(t, card("a"), 4<<20)
	// Each change once the card before it is in the report; the last
	// card's record ends the station, as a person's Ctrl-C.
	steps := []func(){
		func() { cardfile.Size(t, card("b"), 4<<20) },
		func() {
			next := filepath.Join(dir, "next")
			cardfile.Size(t, next, 8<<20)
			if err := os.Rename(next, card("a")); err != nil {
				t.Error(err)
			}
		},
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	done := make(chan result)
	go func() {
		done <- runCLIContext(t, ctx, nil, "--readers", "sim:"+dir, "write", image, "--watch", "--yes", "--report", reportPath)
	}()
	var rep report.JSON
	deadline := time.After(60 * time.Second) // a station that never sees a card ends the test, failed
	for len(rep.Cards) < len(steps)+1 {
		select {
		case <-deadline:
			cancel()
			t.Fatalf("after 60 s, %d cards in the report, want %d", len(rep.Cards), len(steps)+1)
		case <-time.After(5 * time.Millisecond):
		}
		b, err := os.ReadFile(reportPath)
		var now report.JSON
		if err != nil || json.Unmarshal(b, &now) != nil || len(now.Cards) == len(rep.Cards) {
			continue
		}
		rep = now
		if n := len(rep.Cards); n <= len(steps) {
			steps[n-1]()
		}
	}
	cancel()
	r := <-done
	if r.code != exitOK {
		t.Fatalf("exit %d\n%s%s", r.code, r.stdout, r.stderr)
	}
	var targets []string
	for _, c := range rep.Cards {
		targets = append(targets, c.Target+" "+c.Result)
	}
	if want := []string{"usb:0000:0000:a ok", "usb:0000:0000:b ok", "usb:0000:0000:a ok"}; !slices.Equal(targets, want) {
		t.Fatalf("the station wrote %q, want %q", targets, want)
	}
	for _, name := range []string{"a", "b"} {
		if b, _ := os.ReadFile(card(name)); !bytes.Equal(b[:len(img)], img) {
			t.Errorf("%s does not hold the image", name)
		}
	}
}

// TestReadersSimBus: --readers sim:DIR, the simulated readers every
// command sees.
func TestReadersSimBus(t *testing.T) {
	parallel(t,
		subtest{"every command", readersSimBus},
		subtest{"a station", watchSimBus},
	)
}
