package session

import (
	"bytes"
	"context"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/usbflash/usbflash/internal/customize"
	"github.com/usbflash/usbflash/internal/failure"
	"github.com/usbflash/usbflash/internal/image"
	"github.com/usbflash/usbflash/internal/testkit/factsonly"
	"github.com/usbflash/usbflash/internal/testkit/osimage"
	"github.com/usbflash/usbflash/pipeline"
)

// bootImage writes an OS-like image with a FAT32 boot partition at
// bootStart holding files, and returns its path.
func bootImage(t *testing.T, dir string, bootStart int64, files map[string]string) string {
	t.Helper()
	img, err := osimage.Bootable(t.TempDir(), bootStart, 40<<20, 3<<20+512, files, 1)
	if err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(dir, "os.img")
	if err := os.WriteFile(path, img, 0o644); err != nil {
		t.Fatal(err)
	}
	return path
}

// bootFiles checks a card's boot partition with fsck.fat and reads files
// from it with mtools.
func bootFiles(t *testing.T, card string, bootStart int64, names ...string) map[string]string {
	t.Helper()
	return bootFilesAt(t, card, bootStart, 40<<20, names...)
}

// bootFilesAt is bootFiles of a boot partition of size bytes.
func bootFilesAt(t *testing.T, card string, bootStart, size int64, names ...string) map[string]string {
	t.Helper()
	b, err := os.ReadFile(card)
	if err != nil {
		t.Fatal(err)
	}
	part := filepath.Join(t.TempDir(), "boot.part")
	if err := os.WriteFile(part, b[bootStart:bootStart+size], 0o644); err != nil {
		t.Fatal(err)
	}
	if out, err := exec.Command("fsck.fat", "-n", part).CombinedOutput(); err != nil {
		t.Fatalf("fsck.fat: %v\n%s", err, out)
	}
	got := map[string]string{}
	for _, n := range names {
		cmd := exec.Command("mtype", "-i", part, "::"+n)
		cmd.Env = append(os.Environ(), "MTOOLS_SKIP_CHECK=1")
		out, err := cmd.CombinedOutput()
		if err != nil {
			t.Fatalf("mtype %s: %v\n%s", n, err, out)
		}
		got[n] = string(out)
	}
	return got
}

// TestRunCustomize: cards written with a customisation each get their own
// values (one decode, the cards in lockstep and with a lag, the boot
// partition past the first transfer and inside it), read back by fsck.fat
// and mtools, verified as they are, and reported without secrets.
func TestRunCustomize(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name      string
		bootStart int64
		cards     []string
		lag       int
		sparse    bool // zeros left out (a new card, zeros itself): the free clusters are written by the customisation alone
	}{
		{"two cards, boot past the first transfer", 4 << 20, []string{"a.img?size=64MiB", "b.img?size=64MiB"}, 0, false},
		{"two cards with a lag", 4 << 20, []string{"a.img?size=64MiB", "b.img?size=64MiB&speed=200MB/s"}, 8, false},
		{"one card, boot inside the first transfer", 64 << 10, []string{"a.img?size=64MiB"}, 0, false},
		{"one card, sparse", 4 << 20, []string{"a.img?size=64MiB"}, 0, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			dir := t.TempDir()
			imagePath := bootImage(t, dir, tc.bootStart, osimage.RaspiosBoot)
			report := &MemReport{}
			cfg := Config{Image: image.Ref{Path: imagePath}, Engine: Engine{TransferSize: 1 << 20, Lag: tc.lag, Verify: true, BlockMap: BlockMapChoice{Sparse: tc.sparse}}, Output: Output{Report: report}, Customize: &customize.Config{Hostname: "station-{n}", User: "maker", Password: "secret-pw", SSH: true,
				WiFi: customize.WiFi{SSID: "Shop", Password: "wifi-passphrase", Country: "GB"}}}
			if tc.sparse {
				cfg.Output.Report = nil // a report is a run of several cards, and a sparse write is of one
			}
			res, err := Run(context.Background(), cfg, simSpecs(t, dir, tc.cards...))
			if err != nil {
				t.Fatal(err)
			}
			for i, c := range tc.cards {
				o := res.Cards[i]
				if !o.Verified() || (o.Verify.Bytes < 40<<20 && !tc.sparse) || o.Customized == nil || o.Customized.Format != customize.FormatSystemd {
					t.Fatalf("%s: verified %v, customised %+v", c, o.Verified(), o.Customized)
				}
				name, _, _ := strings.Cut(c, "?")
				got := bootFiles(t, filepath.Join(dir, name), tc.bootStart, "firstrun.sh", "cmdline.txt")
				if want := "NEW_HOSTNAME='station-" + itoa(i+1) + "'\n"; !strings.Contains(got["firstrun.sh"], want) {
					t.Errorf("%s: firstrun.sh lacks %q", c, want)
				}
				if !strings.HasSuffix(got["cmdline.txt"], "systemd.unit=kernel-command-line.target") {
					t.Errorf("%s: cmdline.txt = %q", c, got["cmdline.txt"])
				}
			}
			if tc.sparse {
				return
			}
			if cards := report.Records(); len(cards) != len(tc.cards) || cards[0].Customized == nil || len(cards[0].Customized.Files) != 2 {
				t.Fatalf("report %s", report.Text())
			}
			for _, secret := range []string{"secret-pw", "wifi-passphrase", "station-"} {
				if strings.Contains(report.Text(), secret) {
					t.Errorf("the report holds %q", secret)
				}
			}
		})
	}
}

// TestRunCustomizeRefused: what cannot be customised is refused before the
// first byte: an image whose boot partition says nothing of its system,
// a verify by SHA-256.
func TestRunCustomizeRefused(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	plain := bootImage(t, dir, 4<<20, map[string]string{"kernel.img": "k"})
	for _, tc := range []struct {
		name  string
		cfg   Config
		err   error
		class failure.Class
	}{
		{"unrecognised image", Config{Image: image.Ref{Path: plain}, Engine: Engine{Verify: true}, Customize: &customize.Config{Hostname: "h"}}, customize.ErrUnrecognised, failure.Refused},
		{"verify by sha256", Config{Image: image.Ref{Path: plain}, Engine: Engine{Verify: true, VerifyMethod: pipeline.MethodSHA256}, Customize: &customize.Config{Hostname: "h", InitFormat: "cloudinit"}}, ErrCustomizeVerify, failure.Usage},
		{"bad format", Config{Image: image.Ref{Path: plain}, Customize: &customize.Config{InitFormat: "netplan"}}, nil, failure.Usage},
	} {
		card := filepath.Join(dir, "card.img")
		if err := os.WriteFile(card, make([]byte, 64<<20), 0o644); err != nil {
			t.Fatal(err)
		}
		_, err := Run(context.Background(), tc.cfg, simSpecs(t, dir, "card.img?size=64MiB"))
		if (tc.err != nil && !errors.Is(err, tc.err)) || failure.Of(err) != tc.class {
			t.Errorf("%s: Run = %v (class %v)", tc.name, err, failure.Of(err))
		}
		if err != nil {
			factsonly.Check(t, err.Error())
		}
		if b, _ := os.ReadFile(card); !isZeros(b) {
			t.Errorf("%s: the card was written", tc.name)
		}
	}
}

func isZeros(b []byte) bool {
	for _, c := range b {
		if c != 0 {
			return false
		}
	}
	return true
}

func itoa(n int) string { return strconv.Itoa(n) }

// TestRunCustomizeInterrupted: a card lost while it is customised (its
// boot partition read, its changes written) keeps its first transfer
// zeroed: it boots neither the image nor half a customisation.
func TestRunCustomizeInterrupted(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	imagePath := bootImage(t, dir, 4<<20, osimage.RaspiosBoot)
	img, err := os.ReadFile(imagePath)
	if err != nil {
		t.Fatal(err)
	}
	n := int64(len(img))
	inWrites := 0
	// The stream moves the zeroed first transfer and the rest of the
	// image; the card goes at points past it, into the customisation.
	for extra := int64(8 << 10); extra < 2<<20; extra += 96 << 10 {
		card := filepath.Join(dir, "card.img")
		os.Remove(card)
		cfg := Config{Image: image.Ref{Path: imagePath}, Engine: Engine{TransferSize: 1 << 20, Verify: true}, Customize: &customize.Config{Hostname: "h", User: "maker"}}
		spec := "card.img?size=64MiB&fault=disconnect:after=" + strconv.FormatInt(n+extra, 10)
		_, err := Run(context.Background(), cfg, simSpecs(t, dir, spec))
		if err == nil || strings.Contains(err.Error(), "at LBA 0-") {
			continue // the card went after or while its first transfer was written, as any write's may
		}
		b, rerr := os.ReadFile(card)
		if rerr != nil {
			t.Fatal(rerr)
		}
		if !isZeros(b[:1<<20]) {
			t.Fatalf("gone %d bytes past the image: the first transfer was written (%v)", extra, err)
		}
		if !bytes.Equal(b[n-(1<<20):n], img[n-(1<<20):]) {
			t.Fatalf("gone %d bytes past the image: the stream did not reach the card's end", extra)
		}
		if strings.Contains(err.Error(), "WRITE") {
			inWrites++
		}
	}
	if inWrites == 0 {
		t.Error("no card went while the customisation's changes were written")
	}
}
