package main

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// The read-back's behaviour is flash's (TestRunVerifyHash, TestVerify,
// TestRunVerifyInterrupted); this holds what the commands say of it
// (what write says of --verify-hash is TestWriteCommand's, its mistakes
// TestCommandLineMistakesExit2's).

// TestVerifyContract: the READ size the verify and read commands use (4
// MiB by default, the one given otherwise) and the write's read-back's, as
// the events say; a card smaller than the image fails verify with exit 6
// and one message whatever the image's format, saying nothing of writing;
// a card that differs fails it naming the first LBA that does;
// Ctrl-C during a write's verify exits 130 saying the image was written in
// full, and how to check it.
func TestVerifyContract(t *testing.T) {
	t.Parallel()
	t.Run("read sizes", func(t *testing.T) {
		t.Parallel()
		image := writeFile(t, "os.img", testImage(17<<20+1234))
		for _, tc := range []struct {
			args []string
			want float64
		}{{nil, 4 << 20}, {[]string{"--transfer-size", "512KiB"}, 512 << 10}} {
			card := "sim:" + filepath.Join(t.TempDir(), "card.img") + "?size=32MiB"
			r := runCLI(t, append(append([]string{"write", "--yes", "--json"}, tc.args...), image, card)...)
			if got := lastEvent(t, r.stdout, "summary")["verify_transfer_size"]; r.code != exitOK || got != tc.want {
				t.Errorf("write %v: exit %d, verify_transfer_size %v, want %v", tc.args, r.code, got, tc.want)
			}
			r = runCLI(t, append(append([]string{"verify", "--json"}, tc.args...), image, card)...)
			if got := lastEvent(t, r.stdout, "device")["transfer_size"]; r.code != exitOK || got != tc.want {
				t.Errorf("verify %v: exit %d, device transfer_size %v, want %v", tc.args, r.code, got, tc.want)
			}
			r = runCLI(t, append(append([]string{"read", "--json", "--size", "17MiB"}, tc.args...), card, filepath.Join(t.TempDir(), "b.img"))...)
			if got := lastEvent(t, r.stdout, "device")["transfer_size"]; r.code != exitOK || got != tc.want {
				t.Errorf("read %v: exit %d, device transfer_size %v, want %v", tc.args, r.code, got, tc.want)
			}
		}
	})
	t.Run("smaller card", func(t *testing.T) {
		t.Parallel()
		img := testImage(3 << 20)
		dir := t.TempDir()
		card := writeFile(t, "card.img", img[:2<<20])
		if err := os.WriteFile(filepath.Join(dir, "os.img"), img, 0o644); err != nil {
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
	})
	t.Run("the first bad LBA", func(t *testing.T) {
		t.Parallel()
		img := testImage(1 << 20)
		image := writeFile(t, "os.img", img)
		card := filepath.Join(t.TempDir(), "card.img")
		if r := runCLI(t, "write", "--yes", "--quiet", image, "sim:"+card+"?size=2MiB"); r.code != exitOK {
			t.Fatalf("write: exit %d: %s", r.code, r.stderr)
		}
		if r := runCLI(t, "verify", image, "sim:"+card); r.code != exitOK {
			t.Fatalf("verify of a good card: exit %d: %s", r.code, r.stderr)
		}
		f, err := os.OpenFile(card, os.O_RDWR, 0)
		if err != nil {
			t.Fatal(err)
		}
		f.WriteAt([]byte{^img[700000]}, 700000)
		f.Close()
		r := runCLI(t, "verify", image, "sim:"+card)
		if want := fmt.Sprintf("LBA %d", 700000/512); r.code != exitVerify || !strings.Contains(r.stderr, want) {
			t.Errorf("exit %d, want %d naming %s: %s", r.code, exitVerify, want, r.stderr)
		}
	})
	t.Run("Ctrl-C during a write's verify", func(t *testing.T) {
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
	})
}
