package main

import (
	"bytes"
	"context"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"usbflash/usbms"
	"usbflash/usbms/sim"
)

// simReader is a simulated reader a fake finder can show to the watcher.
func simReader(spec string) foundReader {
	return foundReader{key: spec, name: "sim:" + spec, open: func(ctx context.Context) (usbms.Endpoint, func() error, error) {
		d, err := sim.Open("sim:" + spec)
		if err != nil {
			return nil, nil, err
		}
		return d, d.Close, nil
	}}
}

// TestWatchWritesEachCardOnce drives the watcher scan by scan: a reader
// that appears with a card is written; a card that stays in is not written
// again; an empty reader is left alone; a reader that comes back is a new
// card; every outcome lands in the report.
func TestWatchWritesEachCardOnce(t *testing.T) {
	dir := t.TempDir()
	img := testImage(1<<20 + 99)
	imgPath := filepath.Join(dir, "os.img")
	os.WriteFile(imgPath, img, 0o644)
	cardA := filepath.Join(dir, "a.img")
	cardB := filepath.Join(dir, "b.img")
	a := filepath.Join(dir, "a.img") + "?size=4MiB"
	empty := filepath.Join(dir, "e.img") + "?size=4MiB&nomedium=1"
	b := filepath.Join(dir, "b.img") + "?size=4MiB"

	var present []foundReader
	find := func(context.Context) ([]foundReader, error) { return present, nil }
	var out bytes.Buffer
	app := &app{stdin: strings.NewReader(""), stdout: &out, stderr: io.Discard}
	report := filepath.Join(dir, "watch.csv")
	f := writeFlags{yes: true, buffers: 4, transferSize: "1MiB", report: report}
	w := &watcher{a: app, image: imgPath, f: f, transfer: 1 << 20, rep: app.reporterFor(false, false), find: find,
		readers: map[string]*watchedReader{}, ignored: map[string]bool{}, s: &session{Image: imgPath}}
	ctx := context.Background()
	settle := func() {
		for _, r := range w.readers {
			r.writes.Wait()
		}
	}
	holds := func(path string) bool {
		b, err := os.ReadFile(path)
		return err == nil && len(b) >= len(img) && bytes.Equal(b[:len(img)], img)
	}

	present = []foundReader{simReader(a), simReader(empty)}
	w.scan(ctx)
	settle()
	if !holds(cardA) || len(w.s.Cards) != 1 {
		t.Fatalf("after the first scan: card written %v, %d outcomes", holds(cardA), len(w.s.Cards))
	}
	// The card stays in: it is not written again, even if changed since.
	os.WriteFile(cardA, make([]byte, 4<<20), 0o644)
	w.scan(ctx)
	settle()
	if holds(cardA) || len(w.s.Cards) != 1 {
		t.Errorf("a card that stayed in was written again (%d outcomes)", len(w.s.Cards))
	}
	// A is unplugged and B plugged in: B is a new card.
	present = []foundReader{simReader(empty), simReader(b)}
	w.scan(ctx)
	settle()
	if !holds(cardB) || len(w.s.Cards) != 2 {
		t.Errorf("the new reader's card: written %v, %d outcomes", holds(cardB), len(w.s.Cards))
	}
	if _, ok := w.readers[a]; ok {
		t.Error("the unplugged reader is still held")
	}
	if err := w.stop(); err != nil {
		t.Errorf("stop: %v", err)
	}
	rows, _ := os.ReadFile(report)
	if n := strings.Count(string(rows), "\n"); n != 3 {
		t.Errorf("report has %d lines, want a header and 2 cards:\n%s", n, rows)
	}
}

func TestWatchNeedsYes(t *testing.T) {
	r := runCLI(t, "write", "x.img", "--watch")
	if r.code != exitUsage || !strings.Contains(r.stderr, "--yes") {
		t.Errorf("exit %d: %s", r.code, r.stderr)
	}
}
