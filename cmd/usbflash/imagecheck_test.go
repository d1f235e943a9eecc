package main

import (
	"bytes"
	"context"
	"encoding/binary"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/klauspost/compress/zstd"

	"github.com/usbflash/usbflash/imagesrc"
)

// TestWriteRefusesWhatIsNoImage: an error page saved under the image's name
// is never written: refused as a source (exit 4) when the name promises a
// container, as too small (exit 3, unless --force) otherwise. The card is
// untouched either way.
func TestWriteRefusesWhatIsNoImage(t *testing.T) {
	t.Parallel()
	page := []byte("<!DOCTYPE html>\n<html><body><h1>404 Not Found</h1></body></html>\n")
	for _, tt := range []struct {
		name  string
		image string
		data  []byte
		args  []string
		code  int
		say   []string
	}{
		{"error page named .img.xz", "os.img.xz", page, nil, exitSource,
			[]string{"named .xz", "HTML document"}},
		{"error page named .img", "os.img", page, nil, exitRefused,
			[]string{"only 65 bytes", "HTML document", "1 MiB transfer", "--force"}},
		{"tiny xz archive", "os.img.xz", compress(t, "xz", page), nil, exitRefused,
			[]string{"only 65 bytes", "HTML document"}},
		{"checksum file named .img", "os.img", []byte("3f2a  os.img.xz\n"), []string{"--transfer-size", "4KiB"}, exitRefused,
			[]string{"only 16 bytes", "(text)", "4 KiB transfer"}},
		{"forced", "os.img", page, []string{"--force"}, exitOK, nil},
		{"one transfer exactly", "os.img", testImage(64 << 10), []string{"--transfer-size", "64KiB"}, exitOK, nil},
	} {
		t.Run(tt.name, func(t *testing.T) {
			image := writeFile(t, tt.image, tt.data)
			card := filepath.Join(t.TempDir(), "card.img")
			old := bytes.Repeat([]byte{0xA5}, 1<<20)
			if err := os.WriteFile(card, old, 0o644); err != nil {
				t.Fatal(err)
			}
			args := append(append([]string{"write", "--yes"}, tt.args...), image, "sim:"+card)
			r := runCLI(t, args...)
			if r.code != tt.code {
				t.Fatalf("exit %d, want %d\nstderr: %s", r.code, tt.code, r.stderr)
			}
			for _, s := range tt.say {
				if !strings.Contains(r.stderr, s) {
					t.Errorf("stderr %q does not say %q", r.stderr, s)
				}
			}
			got, _ := os.ReadFile(card)
			if tt.code != exitOK && !bytes.Equal(got, old) {
				t.Error("the card was changed")
			}
			if tt.code == exitOK && !bytes.HasPrefix(got, tt.data) {
				t.Error("the image was not written")
			}
		})
	}
}

// TestWriteSizeClaimsAreSourceErrors: a container's size that disagrees
// with its data is a bad image (exit 4) naming the format and the offset,
// and a truncated gzip whose last 4 bytes read as a huge size is
// "truncated", never "use a larger card".
func TestWriteSizeClaimsAreSourceErrors(t *testing.T) {
	t.Parallel()
	img := testImage(2 << 20)
	enc, err := zstd.NewWriter(nil)
	if err != nil {
		t.Fatal(err)
	}
	zst := enc.EncodeAll(img, nil) // records the content size
	enc.Close()
	var h zstd.Header
	if err := h.Decode(zst); err != nil || !h.HasFCS || zst[4]>>6 != 2 {
		t.Fatalf("want a zstd frame with a 4-byte content size: %v", err)
	}
	fcs := zst[h.HeaderSize-4 : h.HeaderSize]
	binary.LittleEndian.PutUint32(fcs, binary.LittleEndian.Uint32(fcs)-4096)

	// A cut whose last 4 bytes make a plausible ISIZE hint larger than the
	// card: what made the old check refuse with "use a larger card".
	gz := compress(t, "gzip", img)
	var cutGz []byte
	for cut := len(gz) / 2; cut < len(gz)-8 && cutGz == nil; cut++ {
		src, err := imagesrc.New(bytes.NewReader(gz[:cut]), int64(cut))
		if err == nil && src.Size > 4<<20 {
			cutGz = gz[:cut]
		}
		if src != nil {
			src.Close()
		}
	}
	if cutGz == nil {
		t.Fatal("no cut of the gzip file makes a size hint over 4 MiB")
	}
	for _, tt := range []struct {
		name, image string
		data        []byte
		say         []string
	}{
		{"zstd frame claims less", "os.img.zst", zst, []string{"zstd", "compressed byte"}},
		{"truncated gzip with a huge size hint", "os.img.gz", cutGz, []string{"gzip", "truncated"}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			image := writeFile(t, tt.image, tt.data)
			card := filepath.Join(t.TempDir(), "card.img")
			r := runCLI(t, "write", "--yes", image, "sim:"+card+"?size=4MiB")
			if r.code != exitSource {
				t.Fatalf("exit %d, want %d\nstderr: %s", r.code, exitSource, r.stderr)
			}
			for _, s := range tt.say {
				if !strings.Contains(r.stderr, s) {
					t.Errorf("stderr %q does not say %q", r.stderr, s)
				}
			}
		})
	}
}

// onStart calls f once, when the start event is written: after the image is
// opened and before the pipeline reads past its first bytes.
type onStart struct {
	f    func()
	done bool
}

func (w *onStart) Write(p []byte) (int, error) {
	if !w.done && bytes.Contains(p, []byte(`"event":"start"`)) {
		w.done = true
		w.f()
	}
	return len(p), nil
}

// TestWriteImageChangedWhileWritten: an image rewritten in place while it
// is written fails the write (exit 4) instead of verifying the card against
// the hash of a mixture.
func TestWriteImageChangedWhileWritten(t *testing.T) {
	t.Parallel()
	img := testImage(2 << 20)
	image := writeFile(t, "os.img", img)
	card := filepath.Join(t.TempDir(), "card.img")
	change := &onStart{f: func() {
		f, err := os.OpenFile(image, os.O_WRONLY, 0)
		if err != nil {
			t.Error(err)
			return
		}
		f.WriteAt([]byte("rewritten"), 1<<20)
		f.Close()
		later := time.Now().Add(time.Minute) // a coarse clock may not tick
		os.Chtimes(image, later, later)
	}}
	r := runCLIContext(t, context.Background(), change, "write", "--yes", "--json", image, "sim:"+card+"?size=4MiB")
	if !change.done {
		t.Fatal("no start event")
	}
	if r.code != exitSource || !strings.Contains(r.stdout, "image changed while it was being written") {
		t.Fatalf("exit %d, want %d\nstdout: %s\nstderr: %s", r.code, exitSource, r.stdout, r.stderr)
	}
	for _, e := range jsonEvents(t, r.stdout) {
		if e["phase"] == "verify" {
			t.Fatalf("a verify phase ran: %v", e)
		}
	}
}
