package session

import (
	"bytes"
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/usbflash/usbflash/internal/drive"
	"github.com/usbflash/usbflash/internal/image"
	"github.com/usbflash/usbflash/internal/probe/fakecheck"
)

// TestRunCheck: with Config.Check every card is probed after the
// pre-write checks; a fake card the image does not fit in fails alone with
// its own FakeError, a fake card it fits in is written with a warning, and
// a genuine card is written.
func TestRunCheck(t *testing.T) {
	dir := t.TempDir()
	img := bytes.Repeat([]byte("usbflash check test image......."), 3<<20/32)
	imagePath := filepath.Join(dir, "os.img")
	if err := os.WriteFile(imagePath, img, 0o644); err != nil {
		t.Fatal(err)
	}
	var specs []drive.Spec
	for _, s := range []string{
		"genuine.img?size=8MiB",
		"small.img?size=64MiB&fake=wrap&real=1MiB",
		"large.img?size=64MiB&fake=drop&real=5MiB&fake-cache=1MiB",
	} {
		spec, err := drive.Parse("sim:" + filepath.Join(dir, s))
		if err != nil {
			t.Fatal(err)
		}
		specs = append(specs, spec)
	}
	var mu sync.Mutex
	var notes []string
	obs := ObserverFunc(func(e Event) {
		if n, ok := e.(Note); ok {
			mu.Lock()
			notes = append(notes, n.Message)
			mu.Unlock()
		}
	})
	res, err := Run(context.Background(), Config{Image: image.Ref{Path: imagePath}, Targets: Targets{Check: &fakecheck.Options{MaxCache: 4 << 20}},
		Engine: Engine{TransferSize: 1 << 20, Buffers: 2, Verify: true}, Output: Output{Observer: obs}}, specs)
	var cards *CardsError
	if !errors.As(err, &cards) || cards.Succeeded != 2 || cards.Failed != 1 {
		t.Fatalf("Run: %v, want 2 cards written and 1 failed", err)
	}
	for _, o := range res.Cards {
		var fake *fakecheck.FakeError
		isFake := errors.As(o.Err, &fake)
		switch {
		case strings.Contains(o.Target, "small.img"):
			if !isFake || fake.Result.Kind != fakecheck.Wrap || fake.Result.Usable != 1<<20 || fake.Need != int64(len(img)) {
				t.Errorf("small fake card: %v", o.Err)
			}
		case o.Err != nil || !o.Verified():
			t.Errorf("%s: %v, verified %v", o.Target, o.Err, o.Verified())
		}
	}
	all := strings.Join(notes, "\n")
	if !strings.Contains(all, "large.img is fake") || !strings.Contains(all, "fits in what it holds") || !strings.Contains(all, "genuine.img shows no fake capacity") {
		t.Errorf("notes:\n%s", all)
	}
	// A refused card this run created is removed; one that stays must not
	// hold the image.
	if b, err := os.ReadFile(filepath.Join(dir, "small.img")); err == nil && bytes.Contains(b[:1<<20], img[:4096]) {
		t.Error("the refused fake card holds the image")
	}
}
