package flash

import (
	"bytes"
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/usbflash/usbflash/drive"
	"github.com/usbflash/usbflash/fakecheck"
	"github.com/usbflash/usbflash/fakecheck/fakecases"
)

// TestCheckTable: every card of the fake-card table is told right through
// the simulated reader (Bulk-Only Transport and SCSI all the way), by the
// probe `usbflash check` runs on an opened target and by `write --check`
// (Config.Check), and the probe leaves the card as it was.
func TestCheckTable(t *testing.T) {
	t.Parallel()
	const imageSize = 4 << 20
	dir := t.TempDir()
	image := filepath.Join(dir, "os.img")
	img := bytes.Repeat([]byte("usbflash check table image......"), imageSize/32)
	if err := os.WriteFile(image, img, 0o644); err != nil {
		t.Fatal(err)
	}
	before := bytes.Repeat([]byte{0xA5, 0x5A, 0x3C, 0xC3}, (2<<20)/4)
	for _, fc := range fakecases.All() {
		t.Run(fc.Name, func(t *testing.T) {
			t.Parallel()
			card := filepath.Join(t.TempDir(), "card.img")
			if err := os.WriteFile(card, before, 0o644); err != nil {
				t.Fatal(err)
			}
			spec, err := drive.Parse("sim:" + card + "?" + fc.SimOptions())
			if err != nil {
				t.Fatal(err)
			}

			// check
			d, err := drive.Open(context.Background(), spec, drive.Options{})
			if err != nil {
				t.Fatal(err)
			}
			res, err := fakecheck.Probe(context.Background(), d.Dev, fakecheck.Options{MaxCache: fakecases.MaxCache})
			d.Close()
			if err != nil || string(res.Kind) != fc.Kind || res.Usable != fc.Real {
				t.Fatalf("check: %+v, %v; want %s with %d usable bytes", res, err, fc.Kind, fc.Real)
			}
			if got, err := readPrefix(card, len(before)); err != nil || !bytes.Equal(got, before) {
				t.Fatalf("check changed the card's first %d bytes (%v)", len(before), err)
			}

			// write --check
			var mu sync.Mutex
			var notes []string
			_, err = Run(context.Background(), Config{Image: image, TransferSize: 1 << 20, Buffers: 2, Verify: true,
				Check: true, CheckMaxCache: fakecases.MaxCache,
				Observer: ObserverFunc(func(e Event) {
					if n, ok := e.(Note); ok {
						mu.Lock()
						notes = append(notes, n.Message)
						mu.Unlock()
					}
				})}, []drive.Spec{spec})
			var fake *fakecheck.FakeError
			all := strings.Join(notes, "\n")
			switch {
			case !fc.Fake():
				if err != nil || !strings.Contains(all, "is genuine") {
					t.Fatalf("write --check of a genuine card: %v\n%s", err, all)
				}
			case fc.Real < imageSize:
				if !errors.As(err, &fake) || fake.Result.Usable != fc.Real {
					t.Fatalf("write --check of a fake card too small for the image: %v", err)
				}
				if got, _ := readPrefix(card, len(before)); !bytes.Equal(got, before) {
					t.Fatal("a refused write --check changed the card")
				}
			default:
				if err != nil || !strings.Contains(all, "is fake") {
					t.Fatalf("write --check of a fake card the image fits in: %v\n%s", err, all)
				}
			}
		})
	}
}

// readPrefix reads the first n bytes of a (large, sparse) file.
func readPrefix(path string, n int) ([]byte, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	b := make([]byte, n)
	_, err = f.ReadAt(b, 0)
	return b, err
}
