package session

import (
	"bytes"
	"context"
	"errors"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/usbflash/usbflash/internal/customize"
	"github.com/usbflash/usbflash/internal/failure"
	"github.com/usbflash/usbflash/internal/image"
	"github.com/usbflash/usbflash/internal/testkit/factsonly"
	"github.com/usbflash/usbflash/internal/testkit/osimage"
	"github.com/usbflash/usbflash/internal/testkit/testpattern"
)

// smallBootImage is an OS-like image of 10 MiB: a FAT12 boot partition of
// 8 MiB at 1 MiB holding files, and 1 MiB of root.
func smallBootImage(t *testing.T, files map[string]string) []byte {
	t.Helper()
	img, err := osimage.BootableAs(t.TempDir(), osimage.Layout{FAT: "12"}, 1<<20, 8<<20, 1<<20, files, 7)
	if err != nil {
		t.Fatal(err)
	}
	return img
}

// patternCard is a 64 MiB sim: card holding a pattern (no write can leave
// it as it was by chance) and its bytes.
func patternCard(t *testing.T, dir string) (string, []byte) {
	t.Helper()
	path := filepath.Join(dir, "card.img")
	b := testpattern.Bytes(64<<20, 5)
	if err := os.WriteFile(path, b, 0o644); err != nil {
		t.Fatal(err)
	}
	return path, b
}

// TestRunCustomizeStreams: an image read once (from a URL, from standard
// input) is decided before its write as a file is: one that cannot be
// customised is refused before the first byte, the card as it was (it
// was refused after the stream, the card overwritten, before); one that
// can is written whole, the bytes read to decide included.
func TestRunCustomizeStreams(t *testing.T) {
	t.Parallel()
	plain := xzBytes(t, smallBootImage(t, map[string]string{"kernel.img": "k"}))
	raspiosImg := smallBootImage(t, osimage.RaspiosBoot)
	raspios := xzBytes(t, raspiosImg)
	serve := func(data []byte) string {
		srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			if r.URL.Path != "/os.img.xz" {
				http.NotFound(w, r)
				return
			}
			http.ServeContent(w, r, "os.img.xz", time.Unix(1700000000, 0), bytes.NewReader(data))
		}))
		t.Cleanup(srv.Close)
		return srv.URL + "/os.img.xz"
	}
	for _, tc := range []struct {
		name, how string // how: url, stdin, file
		data      []byte
		ok        bool
	}{
		{"URL, unrecognised", "url", plain, false},
		{"standard input, unrecognised", "stdin", plain, false},
		{"file, unrecognised", "file", plain, false},
		{"URL, Raspberry Pi OS", "url", raspios, true},
		{"standard input, Raspberry Pi OS", "stdin", raspios, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			dir := t.TempDir()
			card, before := patternCard(t, dir)
			cfg := Config{Image: image.Ref{HTTP: instantHTTP()}, Engine: Engine{TransferSize: 1 << 20, Verify: true}, Customize: &customize.Config{Hostname: "kiosk"}}
			switch tc.how {
			case "url":
				cfg.Image.Path = serve(tc.data)
			case "stdin":
				r, w, err := os.Pipe()
				if err != nil {
					t.Fatal(err)
				}
				go func() { w.Write(tc.data); w.Close() }()
				defer r.Close()
				cfg.Image.Path, cfg.Image.Stdin = "-", r
			case "file":
				cfg.Image.Path = filepath.Join(dir, "os.img.xz")
				if err := os.WriteFile(cfg.Image.Path, tc.data, 0o644); err != nil {
					t.Fatal(err)
				}
			}
			res, err := Run(context.Background(), cfg, simSpecs(t, dir, "card.img"))
			after, rerr := os.ReadFile(card)
			if rerr != nil {
				t.Fatal(rerr)
			}
			if !tc.ok {
				if !errors.Is(err, customize.ErrUnrecognised) || failure.Of(err) != failure.Refused {
					t.Fatalf("Run = %v (class %v), want the refusal", err, failure.Of(err))
				}
				factsonly.Check(t, err.Error())
				if !bytes.Equal(before, after) {
					t.Fatal("a refused customisation wrote to the card")
				}
				return
			}
			if err != nil || res.Cards[0].Customized == nil {
				t.Fatalf("Run = %v", err)
			}
			got := bootFilesAt(t, card, 1<<20, 8<<20, "firstrun.sh")
			if !strings.Contains(got["firstrun.sh"], "NEW_HOSTNAME='kiosk'\n") {
				t.Errorf("firstrun.sh:\n%s", got["firstrun.sh"])
			}
			// Past the boot partition the card is the image: the bytes read
			// to decide were written, in their place.
			if end := int64(len(raspiosImg)); !bytes.Equal(after[9<<20:end], raspiosImg[9<<20:]) || !bytes.Equal(after[446:512], raspiosImg[446:512]) {
				t.Error("the card does not hold the image around the customisation")
			}
		})
	}
}

// TestRunHostileSerials: a reader's serial is hostile input: one full of
// what the files' languages read as code gives a host name that is one
// (its letters, digits and hyphens), and one no host name can hold (70
// characters) refuses that card before its first byte, as a refusal, not
// as the command's mistake.
func TestRunHostileSerials(t *testing.T) {
	t.Parallel()
	img := smallBootImage(t, osimage.RaspiosBoot)
	for _, tc := range []struct {
		serial, want string // want: the host name; "" for a refusal
	}{
		{`$(touch /tmp/PWNED);'"{a: b}[x]#c`, "pi-touch-tmp-PWNED-a-b-x-c"},
		{"`reboot`\n bootcmd: x", "pi-reboot-bootcmd-x"},
		{strings.Repeat("A", 70), ""},
	} {
		t.Run(tc.want, func(t *testing.T) {
			t.Parallel()
			dir := t.TempDir()
			imagePath := filepath.Join(dir, "os.img")
			if err := os.WriteFile(imagePath, img, 0o644); err != nil {
				t.Fatal(err)
			}
			card, before := patternCard(t, dir)
			cfg := Config{Image: image.Ref{Path: imagePath}, Engine: Engine{TransferSize: 1 << 20, Verify: true}, Customize: &customize.Config{Hostname: "pi-{usb_serial}"}}
			_, err := Run(context.Background(), cfg, simSpecs(t, dir, "card.img?serial="+tc.serial))
			if tc.want == "" {
				after, _ := os.ReadFile(card)
				if failure.Of(err) != failure.Refused || !strings.Contains(errText(err), "host name") || !bytes.Equal(before, after) {
					t.Fatalf("Run = %v (class %v), the card unchanged %v", err, failure.Of(err), bytes.Equal(before, after))
				}
				factsonly.Check(t, err.Error())
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			got := bootFilesAt(t, card, 1<<20, 8<<20, "firstrun.sh")
			if !strings.Contains(got["firstrun.sh"], "NEW_HOSTNAME='"+tc.want+"'\n") {
				t.Errorf("firstrun.sh:\n%s", got["firstrun.sh"])
			}
		})
	}
}

// TestRunCustomizeESP: a cloud-init customisation of an image whose only
// FAT is an EFI System Partition (a generic cloud image's GPT) gets a
// CIDATA partition after the image on each card with room for it,
// written, read back and verified as the rest; a card without room is
// refused before its first byte.
func TestRunCustomizeESP(t *testing.T) {
	t.Parallel()
	img, err := osimage.BootableAs(t.TempDir(), osimage.Layout{FAT: "12", GPT: true, ESP: true}, 1<<20, 4<<20, 2<<20,
		map[string]string{"BOOTX64.EFI": "MZ"}, 3)
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	imagePath := filepath.Join(dir, "cloud.img")
	if err := os.WriteFile(imagePath, img, 0o644); err != nil {
		t.Fatal(err)
	}
	log := &eventLog{}
	cfg := Config{Image: image.Ref{Path: imagePath}, Engine: Engine{TransferSize: 1 << 20, Verify: true}, Output: Output{Observer: log}, Customize: &customize.Config{Hostname: "cloud", InitFormat: "cloudinit"}}
	res, err := Run(context.Background(), cfg, simSpecs(t, dir, "card.img?size=64MiB"))
	if err != nil {
		t.Fatal(err)
	}
	if o := res.Cards[0]; !o.Verified() || o.Customized == nil || !strings.Contains(o.Customized.Where, "CIDATA") {
		t.Fatalf("outcome %+v", o)
	}
	if notes := strings.Join(log.all(), "\n"); !strings.Contains(notes, "the settings go into a new partition 3 labelled CIDATA") {
		t.Errorf("notes:\n%s", notes)
	}
	out, err := exec.Command("sfdisk", "--verify", filepath.Join(dir, "card.img")).CombinedOutput()
	if err != nil || !strings.Contains(string(out), "No errors detected") {
		t.Errorf("sfdisk --verify: %v\n%s", err, out)
	}
	got := bootFilesAt(t, filepath.Join(dir, "card.img"), 8<<20, 2<<20, "user-data")
	if !strings.Contains(got["user-data"], "hostname: cloud\n") {
		t.Errorf("user-data:\n%s", got["user-data"])
	}

	small, before := filepath.Join(dir, "small.img"), make([]byte, len(img)+(1<<20))
	copy(before, testpattern.Bytes(len(before), 9))
	if err := os.WriteFile(small, before, 0o644); err != nil {
		t.Fatal(err)
	}
	_, err = Run(context.Background(), cfg, simSpecs(t, dir, "small.img"))
	after, _ := os.ReadFile(small)
	if !errors.Is(err, customize.ErrNoRoom) || failure.Of(err) != failure.Refused || !bytes.Equal(before, after) {
		t.Fatalf("a card without room: %v (class %v), unchanged %v", err, failure.Of(err), bytes.Equal(before, after))
	}
	factsonly.Check(t, err.Error())
}
