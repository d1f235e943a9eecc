package station

import (
	"context"
	"errors"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/usbflash/usbflash/internal/drive"
	"github.com/usbflash/usbflash/internal/image"
	"github.com/usbflash/usbflash/internal/image/httpsrc"
	"github.com/usbflash/usbflash/internal/session"
	"github.com/usbflash/usbflash/internal/testkit/flakyhttp"
	"github.com/usbflash/usbflash/internal/testkit/testimage"
	"github.com/usbflash/usbflash/internal/testkit/testpattern"
)

// instantHTTP reads URLs with no waits between attempts.
func instantHTTP() httpsrc.Options {
	return httpsrc.Options{Sleep: func(ctx context.Context, _ time.Duration) error { return ctx.Err() }}
}

// TestWatchURLDownloadsOnce: a station reads an image at a URL from the
// server once for all its cards, with no cache asked for (it keeps the
// download in a temporary directory, said, and removed when it ends), and
// with a connection dropped once: one request more, for the rest.
func TestWatchURLDownloadsOnce(t *testing.T) {
	t.Parallel()
	img := testpattern.Bytes(3<<20+700, 31)
	file := testimage.Compress(t, "xz", img)
	for _, tc := range []struct {
		name     string
		faults   map[int]flakyhttp.Fault
		requests int
	}{
		{name: "whole", requests: 1},
		{name: "dropped once", faults: map[int]flakyhttp.Fault{0: {DropAt: 300000}}, requests: 2},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			srv := flakyhttp.New(flakyhttp.Version{Data: file, ETag: `"o"`}, tc.faults)
			srv.Path = "/os.img.xz"
			ts := httptest.NewServer(srv)
			defer ts.Close()
			dir := t.TempDir()
			cards := []string{filepath.Join(dir, "a.img"), filepath.Join(dir, "b.img")}
			var kept string // the temporary directory the station said
			ctx, cancel := context.WithCancel(context.Background())
			defer cancel()
			obs := session.Tee(session.ObserverFunc(func(e session.Event) {
				if n, ok := e.(session.Note); ok {
					if _, rest, ok := strings.Cut(n.Message, " once into "); ok {
						kept, _, _ = strings.Cut(rest, " (")
					}
				}
			}), stopAfter(len(cards), cancel)) // the station's cards are done
			readers := []drive.Found{drive.SimReader(cards[0] + "?size=8MiB"), drive.SimReader(cards[1] + "?size=8MiB")}
			res, err := Watch(ctx, Config{Write: session.Config{Image: image.Ref{Path: ts.URL + srv.Path, HTTP: instantHTTP()}, Engine: session.Engine{TransferSize: 1 << 20, Buffers: 2, Verify: true}, Output: session.Output{Observer: obs}}}, func(context.Context) ([]drive.Found, error) { return readers, nil })
			if err != nil || len(res.Cards) != len(cards) {
				t.Fatalf("err = %v, %d cards", err, len(res.Cards))
			}
			for _, c := range cards {
				if !testimage.Holds(c, img) {
					t.Errorf("%s does not hold the image", c)
				}
			}
			if got := srv.Requests(); got != tc.requests {
				t.Errorf("%d requests for the image, want %d", got, tc.requests)
			}
			if kept == "" {
				t.Error("no temporary directory said")
			}
			if _, err := os.Stat(kept); kept != "" && !errors.Is(err, os.ErrNotExist) {
				t.Errorf("%s is left: %v", kept, err)
			}
		})
	}
}

// TestWatchURLNoReaders: a station writing a URL image where readers
// cannot be listed at all (no USB access) says so before it downloads
// the image, not after.
func TestWatchURLNoReaders(t *testing.T) {
	t.Parallel()
	srv := flakyhttp.New(flakyhttp.Version{Data: testpattern.Bytes(1<<20, 55), ETag: `"n1"`}, nil)
	srv.Path = "/os.img"
	ts := httptest.NewServer(srv)
	defer ts.Close()
	noUSB := errors.New("no access to USB devices here")
	find := func(context.Context) ([]drive.Found, error) { return nil, noUSB }
	_, err := Watch(context.Background(), Config{Write: session.Config{Image: image.Ref{Path: ts.URL + "/os.img", HTTP: instantHTTP()}, Engine: session.Engine{TransferSize: 1 << 20, Buffers: 2}}}, find)
	if !errors.Is(err, noUSB) {
		t.Fatalf("Watch: %v, want the readers' error", err)
	}
	if n := srv.Requests(); n != 0 {
		t.Errorf("the image was asked for %d times before the readers were found unlistable", n)
	}
}
