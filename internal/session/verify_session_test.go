package session

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/usbflash/usbflash/internal/drive"
	"github.com/usbflash/usbflash/internal/failure"
	"github.com/usbflash/usbflash/internal/image"
	"github.com/usbflash/usbflash/internal/image/imagedst"
	"github.com/usbflash/usbflash/internal/testkit/testpattern"
	"github.com/usbflash/usbflash/pipeline"
)

// imageFile writes img to dir as name, compressed as its extension says.
func imageFile(t *testing.T, dir, name string, img []byte) string {
	t.Helper()
	path := filepath.Join(dir, name)
	f, err := imagedst.Create(path, false)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Abort()
	if _, err := f.Write(img); err != nil {
		t.Fatal(err)
	}
	if err := f.Finish(); err != nil {
		t.Fatal(err)
	}
	if err := f.Rename(); err != nil {
		t.Fatal(err)
	}
	return path
}

// events records what a session tells its observer.
type events struct {
	mu   sync.Mutex
	list []Event
}

func (e *events) Observe(ev Event) {
	e.mu.Lock()
	defer e.mu.Unlock()
	e.list = append(e.list, ev)
}

// TestVerify: a card that holds the image matches it; one that holds
// something else names the first difference; a card smaller than the
// image does not match it, in every format and whether the image says
// its size (raw, xz: before reading) or not (gzip: at the card's end),
// with one message and one class; and the events say what was compared.
func TestVerify(t *testing.T) {
	t.Parallel()
	img := testpattern.Bytes(3<<20+700, 5)
	dir := t.TempDir()
	for _, name := range []string{"os.img", "os.img.xz", "os.img.gz", "os.img.zst"} {
		imageFile(t, dir, name, img)
	}
	for _, tc := range []struct {
		name, image string
		card        []byte // the card's first bytes
		cardSize    int
		transfer    int
		want        string // "": matches; "differs", "smaller"
	}{
		{"raw", "os.img", img, 8 << 20, 0, ""},
		{"xz, 64 KiB reads", "os.img.xz", img, 8 << 20, 64 << 10, ""},
		{"another image", "os.img", testpattern.Bytes(1<<20, 6), 8 << 20, 0, "differs"},
		{"raw, smaller card", "os.img", img[:2<<20], 2 << 20, 0, "smaller"},
		{"xz, smaller card", "os.img.xz", img[:2<<20], 2 << 20, 0, "smaller"},
		{"gzip, smaller card", "os.img.gz", img[:2<<20], 2 << 20, 0, "smaller"},
		{"zstd, smaller card", "os.img.zst", img[:2<<20], 2 << 20, 0, "smaller"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			imagePath := filepath.Join(dir, tc.image)
			card := filepath.Join(t.TempDir(), "card.img")
			if err := os.WriteFile(card, append(tc.card, make([]byte, tc.cardSize-len(tc.card))...), 0o644); err != nil {
				t.Fatal(err)
			}
			spec, err := drive.Parse("sim:" + card)
			if err != nil {
				t.Fatal(err)
			}
			var seen events
			res, err := Verify(context.Background(), VerifyConfig{Image: image.Ref{Path: imagePath}, TransferSize: tc.transfer, Observer: &seen}, spec)
			var ve *pipeline.VerifyError
			var se *SmallerCardError
			switch tc.want {
			case "":
				if err != nil || res.Bytes != int64(len(img)) || res.Method != pipeline.MethodCompare {
					t.Fatalf("Verify = %+v, %v; want %d bytes compared", res, err, len(img))
				}
			case "differs":
				if !errors.As(err, &ve) || ve.LBA != 0 {
					t.Fatalf("Verify = %v, want a difference at LBA 0", err)
				}
			case "smaller":
				if !errors.As(err, &se) || se.Capacity != 2<<20 || failure.Of(err) != failure.Verify {
					t.Fatalf("Verify = %v, want a *SmallerCardError of class verify", err)
				}
				const want = "holds 2.10 MB, less than the image"
				if msg := err.Error(); !strings.Contains(msg, want) || strings.Contains(msg, "writ") {
					t.Errorf("message %q, want %q and nothing about writing", msg, want)
				}
			}
			wantTransfer := tc.transfer
			if wantTransfer == 0 {
				wantTransfer = pipeline.DefaultReadSize
			}
			var started, opened bool
			for _, e := range seen.list {
				switch e := e.(type) {
				case Started:
					started = e.TransferSize == wantTransfer && len(e.Targets) == 1 && e.Image == imagePath
				case Opened:
					opened = started && e.TransferSize == wantTransfer
				}
			}
			if !started || !opened {
				t.Errorf("events %+v: want Started then Opened, with %d-byte reads", seen.list, wantTransfer)
			}
		})
	}
}
