package main

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestWriteVerifyHash: the read-back is checked by digests unless
// --verify-hash sha256; either way a card that drops what is written past
// its first MiB fails the verify at the first byte past it that is not
// zero in the image (the card reads zeros there), named by LBA,
// and the flag's mistakes are usage errors.
func TestWriteVerifyHash(t *testing.T) {
	t.Parallel()
	image := writeFile(t, "os.img", testImage(3<<20+1234))
	for _, tc := range []struct {
		name   string
		args   []string
		card   string
		code   int
		stderr string // in the message
	}{
		{"digests, fake card", nil, "?size=16MiB&fake=drop&real=1MiB", exitVerify, "first difference at LBA 2056 (byte offset 1052672)"},
		{"sha256, fake card", []string{"--verify-hash", "sha256"}, "?size=16MiB&fake=drop&real=1MiB", exitVerify, "first difference at LBA 2056 (byte offset 1052672)"},
		{"sha256", []string{"--verify-hash", "sha256"}, "?size=8MiB", exitOK, "SHA-256 checked"},
		{"digests", nil, "?size=8MiB", exitOK, "xxh3 digest checked"},
		{"unknown hash", []string{"--verify-hash", "md5"}, "?size=8MiB", exitUsage, "--verify-hash md5: want xxh3 or sha256"},
		{"nothing to verify", []string{"--no-verify", "--verify-hash", "sha256"}, "?size=8MiB", exitUsage, "--verify-hash has nothing to check"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			card := filepath.Join(t.TempDir(), "card.img")
			args := append([]string{"write", "--yes"}, tc.args...)
			r := runCLI(t, append(args, image, "sim:"+card+tc.card)...)
			out := r.stderr + r.stdout
			if r.code != tc.code || !strings.Contains(out, tc.stderr) {
				t.Fatalf("exit %d, want %d with %q\nstdout: %s\nstderr: %s", r.code, tc.code, tc.stderr, r.stdout, r.stderr)
			}
			if hasSHA := strings.Contains(out, "SHA-256 "); hasSHA != (tc.code == exitOK && len(tc.args) > 0) {
				t.Errorf("the image's SHA-256 printed: %v\n%s", hasSHA, out)
			}
		})
	}
}

// TestVerifyReadSize: the read-back reads in 4 MiB commands by default,
// in the --transfer-size given when there is one, and says which in the
// summary; the verify and read commands' default is the same 4 MiB.
func TestVerifyReadSize(t *testing.T) {
	t.Parallel()
	image := writeFile(t, "os.img", testImage(17<<20+1234))
	for _, tc := range []struct {
		name string
		args []string
		want float64
	}{
		{"default", nil, 4 << 20},
		{"chosen", []string{"--transfer-size", "512KiB"}, 512 << 10},
		{"chosen larger", []string{"--transfer-size", "8MiB"}, 8 << 20},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			card := "sim:" + filepath.Join(t.TempDir(), "card.img") + "?size=32MiB"
			args := append([]string{"write", "--yes", "--json"}, tc.args...)
			r := runCLI(t, append(args, image, card)...)
			if r.code != exitOK {
				t.Fatalf("write: exit %d\n%s", r.code, r.stderr)
			}
			if got := lastEvent(t, r.stdout, "summary")["verify_transfer_size"]; got != tc.want {
				t.Errorf("write %v: verify_transfer_size %v, want %v", tc.args, got, tc.want)
			}
			r = runCLI(t, append([]string{"verify", "--json"}, append(tc.args, image, card)...)...)
			if r.code != exitOK {
				t.Fatalf("verify: exit %d\n%s", r.code, r.stderr)
			}
			if got := lastEvent(t, r.stdout, "device")["transfer_size"]; got != tc.want {
				t.Errorf("verify %v: device transfer_size %v, want %v", tc.args, got, tc.want)
			}
			out := filepath.Join(t.TempDir(), "backup.img")
			r = runCLI(t, append([]string{"read", "--json", "--size", "17MiB"}, append(tc.args, card, out)...)...)
			if r.code != exitOK {
				t.Fatalf("read: exit %d\n%s", r.code, r.stderr)
			}
			if got := lastEvent(t, r.stdout, "device")["transfer_size"]; got != tc.want {
				t.Errorf("read %v: device transfer_size %v, want %v", tc.args, got, tc.want)
			}
		})
	}
}

// TestVerifySmallerCard: a card smaller than the image does not match it,
// with one message and exit 6 whatever the image's format, and nothing
// said about writing: verify writes nothing.
func TestVerifySmallerCard(t *testing.T) {
	t.Parallel()
	img := testImage(3 << 20)
	dir := t.TempDir()
	card := writeFile(t, "card.img", img[:2<<20])
	raw := filepath.Join(dir, "os.img")
	if err := os.WriteFile(raw, img, 0o644); err != nil {
		t.Fatal(err)
	}
	for _, name := range []string{"os.img", "os.img.gz", "os.img.xz"} {
		image := filepath.Join(dir, name)
		if name != "os.img" {
			if r := runCLI(t, "read", "sim:"+writeFile(t, "src.img", img), image); r.code != exitOK {
				t.Fatalf("making %s: exit %d: %s", name, r.code, r.stderr)
			}
		}
		r := runCLI(t, "verify", image, "sim:"+card)
		if r.code != exitVerify || !strings.Contains(r.stderr, "holds 2.10 MB, less than the image") || strings.Contains(r.stderr, "writ") {
			t.Errorf("verify %s: exit %d, want %d\n%s", name, r.code, exitVerify, r.stderr)
		}
	}
}

// TestWriteVerifyInterrupted: Ctrl-C during the verify of a write exits
// 130 saying the image was written in full, and how to check it.
func TestWriteVerifyInterrupted(t *testing.T) {
	t.Parallel()
	image := writeFile(t, "os.img", testImage(8<<20))
	card := "sim:" + filepath.Join(t.TempDir(), "card.img") + "?size=16MiB&speed=40MB/s"
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	r := runCLIContext(t, ctx, &atPhase{phase: "verify", do: cancel}, "write", "--yes", "--json", image, card)
	e := lastEvent(t, r.stdout, "error")
	if r.code != exitCancelled || !strings.Contains(fmt.Sprint(e["message"]), "was written in full") ||
		!strings.Contains(fmt.Sprint(e["hint"]), "usbflash verify "+image+" '"+card+"'") {
		t.Fatalf("exit %d, want %d saying the image is written and how to verify it\n%s", r.code, exitCancelled, r.stdout)
	}
}
