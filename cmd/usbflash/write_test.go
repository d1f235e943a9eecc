package main

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/klauspost/compress/zstd"
)

// TestWriteCommand: what write says and exits with for each way a write
// ends; what reaches the card is flash's (flash.TestRunImages,
// flash.TestRunMany, flash.TestRunBlockMap). Messages state the facts and
// the advice follows; JSON phases and the summary say how the card was
// checked.
func TestWriteCommand(t *testing.T) {
	t.Parallel()
	img := testImage(2<<20 + 1234)
	sum := sha256.Sum256(img)
	dir := t.TempDir()
	file := func(name string, data []byte) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, data, 0o644); err != nil {
			t.Fatal(err)
		}
		return p
	}
	raw, xz, gz := file("os.img", img), file("os.img.xz", compress(t, "xz", img)), file("os.img.gz", compress(t, "gzip", img))
	cut := compress(t, "xz", img)
	truncated := file("cut.img.xz", cut[:len(cut)*2/3])
	page := []byte("<!DOCTYPE html>\n<html><body><h1>404 Not Found</h1></body></html>\n")
	pageXZ, pageIMG := file("page.img.xz", page), file("page.img", page)
	sums := file("sums.img", []byte("3f2a  os.img.xz\n"))
	newFile := filepath.Join(dir, "new.img")
	zst := func(crc bool) []byte {
		var buf bytes.Buffer
		enc, err := zstd.NewWriter(&buf, zstd.WithEncoderCRC(crc))
		if err != nil {
			t.Fatal(err)
		}
		enc.Write(img)
		enc.Close()
		return buf.Bytes()
	}
	zstNoCRC, zstCRC := file("nocrc.img.zst", zst(false)), file("crc.img.zst", zst(true))
	holds := func(t *testing.T, card string) {
		if got, _ := os.ReadFile(card); len(got) < len(img) || !bytes.Equal(got[:len(img)], img) {
			t.Error("the card does not hold the image")
		}
	}
	only := func(event string) func(t *testing.T, r result) {
		return func(t *testing.T, r result) {
			if evs := jsonEvents(t, r.stdout); len(evs) != 1 || evs[0]["event"] != event {
				t.Errorf("events %v: want only the %s", evs, event)
			}
		}
	}
	// The notes of a reader that fails large commands end with the
	// advice to start at the size that works.
	lastHint := func(want string) func(t *testing.T, r result) {
		return func(t *testing.T, r result) {
			var hints []string
			for _, n := range notes(t, r.stdout) {
				if n.Hint != "" {
					hints = append(hints, n.Hint)
				}
			}
			if len(hints) == 0 || hints[len(hints)-1] != want {
				t.Errorf("hints %q, want the last to be %q", hints, want)
			}
		}
	}
	for _, tc := range []struct {
		name   string
		args   []string // after write; CARD is a new sim: card's target
		code   int
		stderr []string                        // each in stderr, case aside
		stdout []string                        // each in stdout
		not    []string                        // none in stdout
		after  func(t *testing.T, card string) // what the card (sim: CARD) or file holds
		out    func(t *testing.T, r result)    // what else the output must say
	}{
		{name: "sha256", args: []string{"--json", "--yes", "--verify-hash", "sha256", xz, "CARD?size=4MiB"}, code: exitOK,
			stdout: []string{`"phase":"write"`, `"phase":"sync"`, `"phase":"verify"`, `"verify":"sha256"`, `"sha256":"` + hex.EncodeToString(sum[:]) + `"`}},
		{name: "digests", args: []string{"--json", "--yes", raw, "CARD?size=4MiB"}, code: exitOK,
			stdout: []string{`"verified":true`, `"verify":"xxh3 per transfer"`}, not: []string{`"sha256"`}},
		{name: "sha256, in words", args: []string{"--yes", "--verify-hash", "sha256", raw, "CARD?size=4MiB"}, code: exitOK,
			stdout: []string{"its SHA-256 checked against the image's", "\nSHA-256 " + hex.EncodeToString(sum[:])}},
		{name: "digests, in words", args: []string{"--yes", raw, "CARD?size=4MiB"}, code: exitOK,
			stdout: []string{"each write command's xxh3 digest checked"}, not: []string{"SHA-256 "}},
		{name: "no verify", args: []string{"--json", "--yes", "--no-verify", raw, "CARD?size=4MiB"}, code: exitOK,
			stdout: []string{`"verified":false`}, not: []string{`"phase":"verify"`, `"sha256"`, `"verify":`}},
		{name: "write-protected", args: []string{"--yes", xz, "CARD?size=4MiB&wp=1"}, code: exitRefused, stderr: []string{"write-protected"}},
		{name: "larger than the card", args: []string{"--yes", xz, "CARD?size=1MiB"}, code: exitRefused, stderr: []string{"use a larger card"}},
		{name: "larger than the card, found by writing", args: []string{"--yes", gz, "CARD?size=1MiB"}, code: exitRefused,
			stderr: []string{"after writing 1.05 mb"}},
		{name: "not confirmed without a terminal", args: []string{xz, "CARD?size=4MiB"}, code: exitRefused, stderr: []string{"pass --yes"}},
		{name: "a truncated image", args: []string{"--yes", truncated, "CARD?size=4MiB"}, code: exitSource, stderr: []string{"xz", "byte"}},
		{name: "a device fault", args: []string{"--yes", "--transfer-size", "64KiB", raw, "CARD?size=4MiB&fault=medium-error:lba=1000,persistent"},
			code: exitDevice, stderr: []string{"LBA 896-1023"}},
		{name: "an error page named .xz", args: []string{"--yes", pageXZ, "CARD?size=4MiB"}, code: exitSource, stderr: []string{"named .xz", "HTML document"}},
		{name: "an error page named .img", args: []string{"--yes", pageIMG, "CARD?size=4MiB"}, code: exitRefused,
			stderr: []string{"only 65 bytes", "HTML document", "1 MiB transfer", "--force"}},
		{name: "a checksum file named .img", args: []string{"--yes", "--transfer-size", "4KiB", sums, "CARD?size=4MiB"}, code: exitRefused,
			stderr: []string{"only 16 bytes", "(text)", "4 KiB transfer"}},
		{name: "an error page, forced", args: []string{"--yes", "--force", pageIMG, "CARD?size=4MiB"}, code: exitOK},
		{name: "a new file", args: []string{"--yes", xz, "file:" + newFile}, code: exitOK, after: func(t *testing.T, _ string) {
			got, err := os.ReadFile(newFile)
			if err != nil || len(got) != (len(img)+511)/512*512 || !bytes.Equal(got[:len(img)], img) {
				t.Errorf("the image file is %d bytes (%v), want the image (%d) in whole blocks", len(got), err, len(img))
			}
		}},
		{name: "quiet JSON: the summary alone", args: []string{"--yes", "--json", "-q", raw, "CARD?size=4MiB"}, code: exitOK, out: only("summary")},
		{name: "quiet JSON: the error alone", args: []string{"--yes", "--json", "-q", raw, "CARD?size=4MiB&wp=1"}, code: exitRefused, out: only("error")},
		{name: "quiet: nothing on stdout, the error on stderr", args: []string{"--yes", "-q", raw, "CARD?size=4MiB&wp=1"}, code: exitRefused,
			stderr: []string{"write-protected"}, out: func(t *testing.T, r result) {
				if r.stdout != "" {
					t.Errorf("stdout %q", r.stdout)
				}
			}},
		{name: "eject on a file, JSON", args: []string{"--yes", "--json", "--eject", raw, "file:" + newFile + ".eject?size=4MiB"}, code: exitOK,
			stdout: []string{`"message":"--eject does nothing for a file: target"`, `"ejected":false`}},
		{name: "eject on a file", args: []string{"--yes", "--eject", raw, "file:" + newFile + ".eject2?size=4MiB"}, code: exitOK,
			stdout: []string{"Not ejected: --eject does nothing for a file: target"}},
		// A compressed image without a checksum of its own is written,
		// and the user is told what alone can tell it is intact.
		{name: "zstd without a checksum", args: []string{"--yes", zstNoCRC, "CARD?size=4MiB"}, code: exitOK, stdout: []string{"carries no checksum of its own"}},
		{name: "zstd with a checksum", args: []string{"--yes", zstCRC, "CARD?size=4MiB"}, code: exitOK, not: []string{"carries no checksum of its own"}},
		// A reader that fails large commands is written and verified
		// anyway (drive.TestMisbehavingReaders); its note carries the
		// flag that starts there next time.
		{name: "a reader that chokes above 240 blocks, JSON", args: []string{"--json", "--yes", raw, "CARD?size=4MiB&clock=virtual&choke=240"}, code: exitOK,
			after: holds, out: lastHint("pass --transfer-size 120KiB to start there")},
		{name: "a reader that chokes above 64 blocks, JSON", args: []string{"--json", "--yes", raw, "CARD?size=4MiB&clock=virtual&choke=64:stall&vid=1234&pid=5678"}, code: exitOK,
			after: holds, out: lastHint("pass --transfer-size 32KiB, or --quirks 1234:5678:m (as Linux's usb-storage.quirks=), to start there")},
		{name: "a reader that chokes above 240 blocks", args: []string{"--yes", raw, "CARD?size=4MiB&clock=virtual&choke=240"}, code: exitOK,
			stdout: []string{"commands of 1 MiB", "\nPass --transfer-size 120KiB to start there.\n"}},
		{name: "a new file for a gzip image needs a size", args: []string{"--yes", gz, "file:" + newFile + ".2"}, code: exitUsage, stderr: []string{"?size="}},
		{name: "a new file of the size given", args: []string{"--yes", gz, "file:" + newFile + ".3?size=4MiB"}, code: exitOK},
		{name: "two loaded slots, no /LUN", args: []string{"--yes", raw, "CARD?size=4MiB&luns=2"}, code: exitUsage, stderr: []string{"/LUN"}},
		{name: "a slot named", args: []string{"--yes", "--json", raw, "CARD?size=4MiB&luns=2&lun=1"}, code: exitOK, stdout: []string{`"target":"sim:CARD/1"`},
			after: func(t *testing.T, card string) {
				// LUN 1 is memory (no PATH.lun1 file): LUN 0's file is untouched.
				if b, _ := os.ReadFile(card); bytes.Count(b, []byte{0}) != len(b) {
					t.Error("writing LUN 1 changed LUN 0's card")
				}
			}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			card := filepath.Join(t.TempDir(), "card.img")
			args := []string{"write"}
			for _, a := range tc.args {
				args = append(args, strings.Replace(a, "CARD", "sim:"+card, 1))
			}
			r := runCLI(t, args...)
			if r.code != tc.code {
				t.Fatalf("exit %d, want %d\nstdout: %s\nstderr: %s", r.code, tc.code, r.stdout, r.stderr)
			}
			for _, s := range tc.stderr {
				if !strings.Contains(strings.ToLower(r.stderr), strings.ToLower(s)) {
					t.Errorf("stderr %q does not say %q", r.stderr, s)
				}
			}
			for _, s := range tc.stdout {
				if s = strings.Replace(s, "sim:CARD", "sim:"+card, 1); !strings.Contains(r.stdout, s) {
					t.Errorf("stdout does not say %q:\n%s", s, r.stdout)
				}
			}
			for _, s := range tc.not {
				if strings.Contains(r.stdout, s) {
					t.Errorf("stdout says %q:\n%s", s, r.stdout)
				}
			}
			if tc.after != nil {
				tc.after(t, card)
			}
			if tc.out != nil {
				tc.out(t, r)
			}
		})
	}
}
