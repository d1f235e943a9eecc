package session

import (
	"context"
	"errors"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/usbflash/usbflash/internal/drive"
	"github.com/usbflash/usbflash/internal/testkit/flakyhttp"
	"github.com/usbflash/usbflash/internal/testkit/testpattern"
)

// TestURLDownloadsOnce: a write of several cards and a --watch station
// read an image at a URL from the server once, with no cache asked for (a
// station keeps it in a temporary directory, removed when it ends), and
// with a connection dropped once: one request more, for the rest.
func TestURLDownloadsOnce(t *testing.T) {
	t.Parallel()
	img := testpattern.Bytes(3<<20+700, 31)
	file := xzBytes(t, img)
	for _, tc := range []struct {
		name     string
		watch    bool
		faults   map[int]flakyhttp.Fault
		requests int
	}{
		{name: "several cards", requests: 1},
		{name: "several cards, dropped once", faults: map[int]flakyhttp.Fault{0: {DropAt: 300000}}, requests: 2},
		{name: "a station", watch: true, requests: 1},
		{name: "a station, dropped once", watch: true, faults: map[int]flakyhttp.Fault{0: {DropAt: 300000}}, requests: 2},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			srv := flakyhttp.New(flakyhttp.Version{Data: file, ETag: `"o"`}, tc.faults)
			srv.Path = "/os.img.xz"
			ts := httptest.NewServer(srv)
			defer ts.Close()
			dir := t.TempDir()
			cards := []string{filepath.Join(dir, "a.img"), filepath.Join(dir, "b.img")}
			var kept string // the temporary directory a station said
			ctx, cancel := context.WithCancel(context.Background())
			defer cancel()
			var mu sync.Mutex
			done := 0
			cfg := Config{Image: ts.URL + srv.Path, TransferSize: 1 << 20, Buffers: 2, Verify: true, HTTP: instantHTTP(),
				Observer: ObserverFunc(func(e Event) {
					if n, ok := e.(Note); ok {
						if _, rest, ok := strings.Cut(n.Message, " once into "); ok {
							kept, _, _ = strings.Cut(rest, " (")
						}
					}
					if _, ok := e.(CardDone); ok {
						mu.Lock()
						if done++; done == len(cards) {
							cancel() // the station's cards are done
						}
						mu.Unlock()
					}
				})}
			var res *Result
			var err error
			if tc.watch {
				readers := []drive.Found{drive.SimReader(cards[0] + "?size=8MiB"), drive.SimReader(cards[1] + "?size=8MiB")}
				res, err = Watch(ctx, cfg, func(context.Context) ([]drive.Found, error) { return readers, nil })
			} else {
				var specs []drive.Spec
				for _, c := range cards {
					s, perr := drive.Parse("sim:" + c + "?size=8MiB")
					if perr != nil {
						t.Fatal(perr)
					}
					specs = append(specs, s)
				}
				res, err = Run(ctx, cfg, specs)
			}
			if err != nil || len(res.Cards) != len(cards) {
				t.Fatalf("err = %v, %d cards", err, len(res.Cards))
			}
			for _, c := range cards {
				if !holds(c, img) {
					t.Errorf("%s does not hold the image", c)
				}
			}
			if got := srv.Requests(); got != tc.requests {
				t.Errorf("%d requests for the image, want %d", got, tc.requests)
			}
			if tc.watch == (kept == "") {
				t.Errorf("temporary directory said: %q", kept)
			}
			if _, err := os.Stat(kept); kept != "" && !errors.Is(err, os.ErrNotExist) {
				t.Errorf("%s is left: %v", kept, err)
			}
		})
	}
}
