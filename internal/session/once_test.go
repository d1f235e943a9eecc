package session

import (
	"context"
	"net/http/httptest"
	"path/filepath"
	"strings"
	"testing"

	"github.com/usbflash/usbflash/internal/drive"
	"github.com/usbflash/usbflash/internal/image"
	"github.com/usbflash/usbflash/internal/testkit/flakyhttp"
	"github.com/usbflash/usbflash/internal/testkit/testimage"
	"github.com/usbflash/usbflash/internal/testkit/testpattern"
)

// TestURLDownloadsOnce: a write of several cards reads an image at a URL
// from the server once, with no cache asked for, and with a connection
// dropped once: one request more, for the rest (a station's:
// station.TestWatchURLDownloadsOnce).
func TestURLDownloadsOnce(t *testing.T) {
	t.Parallel()
	img := testpattern.Bytes(3<<20+700, 31)
	file := xzBytes(t, img)
	for _, tc := range []struct {
		name     string
		faults   map[int]flakyhttp.Fault
		requests int
	}{
		{name: "several cards", requests: 1},
		{name: "several cards, dropped once", faults: map[int]flakyhttp.Fault{0: {DropAt: 300000}}, requests: 2},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			srv := flakyhttp.New(flakyhttp.Version{Data: file, ETag: `"o"`}, tc.faults)
			srv.Path = "/os.img.xz"
			ts := httptest.NewServer(srv)
			defer ts.Close()
			dir := t.TempDir()
			cards := []string{filepath.Join(dir, "a.img"), filepath.Join(dir, "b.img")}
			log := &noteLog{}
			cfg := Config{Image: image.Ref{Path: ts.URL + srv.Path, HTTP: instantHTTP()}, Engine: Engine{TransferSize: 1 << 20, Buffers: 2, Verify: true}, Output: Output{Observer: log}}
			var specs []drive.Spec
			for _, c := range cards {
				s, perr := drive.Parse("sim:" + c + "?size=8MiB")
				if perr != nil {
					t.Fatal(perr)
				}
				specs = append(specs, s)
			}
			res, err := Run(context.Background(), cfg, specs)
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
			// One decode feeds both cards: nothing is kept to read again.
			if notes := strings.Join(log.all(), "\n"); strings.Contains(notes, " once into ") {
				t.Errorf("a temporary directory for the download:\n%s", notes)
			}
		})
	}
}
