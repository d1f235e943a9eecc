package station

import (
	"context"
	"path/filepath"
	"sync"
	"testing"

	"github.com/usbflash/usbflash/internal/drive"
	"github.com/usbflash/usbflash/internal/session"
	"github.com/usbflash/usbflash/internal/testkit/fsck"
)

// TestFormatWatch: a station formats every card that comes, each for its
// own capacity (one FAT32, one exFAT, each passing its fsck), and stops
// when asked.
func TestFormatWatch(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	cards := []string{filepath.Join(dir, "a.img"), filepath.Join(dir, "b.img")}
	readers := []drive.Found{drive.SimReader(cards[0] + "?size=2GiB"), drive.SimReader(cards[1] + "?size=64GiB")}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	obs := stopAfter(len(cards), cancel)
	f, err := session.NewFormat("", "", 0)
	if err != nil {
		t.Fatal(err)
	}
	res, err := Watch(ctx, Config{Write: session.Config{Blocks: f, Engine: session.Engine{Verify: true}, Output: session.Output{Observer: obs}}},
		func(context.Context) ([]drive.Found, error) { return readers, nil })
	if err != nil {
		t.Fatalf("Watch: %v", err)
	}
	if res.Tally.Cards != 2 || res.Tally.Succeeded != 2 {
		t.Fatalf("tally %+v", res.Tally)
	}
	fsck.Card(t, cards[0], "FAT32")
	fsck.Card(t, cards[1], "exFAT")
}

// stopAfter is an Observer that stops a station (cancel, as Ctrl-C does)
// once n cards are done.
func stopAfter(n int, cancel context.CancelFunc) session.Observer {
	var mu sync.Mutex
	done := 0
	return session.ObserverFunc(func(e session.Event) {
		if _, ok := e.(session.CardDone); ok {
			mu.Lock()
			if done++; done == n {
				cancel()
			}
			mu.Unlock()
		}
	})
}
