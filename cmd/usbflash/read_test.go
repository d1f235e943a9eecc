package main

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/usbflash/usbflash/bmap"
)

// cardWith makes a card file holding img followed by zeros up to size.
func cardWith(t *testing.T, img []byte, size int) string {
	t.Helper()
	b := make([]byte, size)
	copy(b, img)
	return writeFile(t, "card.img", b)
}

// noFiles fails when anything but the listed names is in dir.
func noFiles(t *testing.T, dir string, allowed ...string) {
	t.Helper()
	entries, _ := os.ReadDir(dir)
	for _, e := range entries {
		ok := false
		for _, a := range allowed {
			ok = ok || e.Name() == a
		}
		if !ok {
			t.Errorf("%s was left in %s", e.Name(), dir)
		}
	}
}

// TestReadRoundTripsEveryFormat: a backup in every format, written back to
// another card with usbflash (every byte, and with the backup's block map
// onto a blank card), gives the first card byte for byte.
func TestReadRoundTripsEveryFormat(t *testing.T) {
	t.Parallel()
	card := cardWith(t, holeyImage(), 4<<20)
	orig, _ := os.ReadFile(card)
	sum := sha256.Sum256(orig)
	for _, name := range []string{"backup.img.zst", "backup.img.gz", "backup.img.xz", "backup.img"} {
		t.Run(name, func(t *testing.T) {
			dir := t.TempDir()
			out := filepath.Join(dir, name)
			r := runCLI(t, "read", "--json", "--verify", "--transfer-size", "256KiB", "sim:"+card, out)
			if r.code != exitOK {
				t.Fatalf("read: exit %d\nstdout: %s\nstderr: %s", r.code, r.stdout, r.stderr)
			}
			s := lastEvent(t, r.stdout, "summary")
			if s["sha256"] != hex.EncodeToString(sum[:]) || s["verified"] != true || s["bytes"] != float64(len(orig)) {
				t.Errorf("summary %v: want %d bytes, sha256 %x, verified", s, len(orig), sum)
			}
			noFiles(t, dir, name, name+".bmap")
			data, err := os.ReadFile(out + ".bmap")
			if err != nil {
				t.Fatal(err)
			}
			m, err := bmap.Parse(data)
			if err != nil {
				t.Fatal(err)
			}
			for off := 0; off < len(orig); off += 4096 {
				if m.Mapped(int64(off), 4096) == bytes.Equal(orig[off:off+4096], make([]byte, 4096)) {
					t.Fatalf("block at %d: mapped %v but all zero %v", off, m.Mapped(int64(off), 4096), bytes.Equal(orig[off:off+4096], make([]byte, 4096)))
				}
			}

			old := oldCard(t, 4<<20)
			if r := runCLI(t, "write", "--yes", "--no-bmap", out, "sim:"+old); r.code != exitOK {
				t.Fatalf("write --no-bmap: exit %d: %s", r.code, r.stderr)
			}
			blank := filepath.Join(t.TempDir(), "blank.img")
			r = runCLI(t, "write", "--yes", out, "sim:"+blank+"?size=4MiB")
			if r.code != exitOK || !strings.Contains(r.stdout, "Block map "+out+".bmap") {
				t.Fatalf("write with the backup's map: exit %d\n%s\n%s", r.code, r.stdout, r.stderr)
			}
			for _, c := range []string{old, blank} {
				if got, _ := os.ReadFile(c); !bytes.Equal(got, orig) {
					t.Errorf("%s is not the original card", filepath.Base(c))
				}
			}
		})
	}
}

// mbrCard is a card of size bytes whose MBR's last partition ends at end.
func mbrCard(t *testing.T, size, end int) string {
	b := holeyImage()
	e := b[446+16:]
	e[4] = 0x83
	binary.LittleEndian.PutUint32(e[8:], 2048)
	binary.LittleEndian.PutUint32(e[12:], uint32(end/512-2048))
	b[510], b[511] = 0x55, 0xAA
	return cardWith(t, b, size)
}

func TestReadUsedAndSize(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name  string
		card  func(t *testing.T) string
		args  []string
		bytes int
		note  string
	}{
		{"MBR", func(t *testing.T) string { return mbrCard(t, 8<<20, 3<<20) }, []string{"--used"}, 3 << 20, "MBR: reading up to the end of the last partition"},
		{"no partition table", func(t *testing.T) string { return cardWith(t, []byte("no table here"), 2<<20) }, []string{"--used"}, 2 << 20, "no partition table: reading the whole card"},
		{"MBR past the end", func(t *testing.T) string { return mbrCard(t, 2<<20, 3<<20) }, []string{"--used"}, 2 << 20, "damaged partition table: the MBR's partitions end at 3.15 MB, past the disk's 2.10 MB: reading the whole card"},
		{"size", func(t *testing.T) string { return mbrCard(t, 8<<20, 3<<20) }, []string{"--size", "1000000"}, 1000000, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			card := tc.card(t)
			out := filepath.Join(t.TempDir(), "b.img")
			r := runCLI(t, append(append([]string{"read"}, tc.args...), "sim:"+card, out)...)
			if r.code != exitOK || !strings.Contains(r.stdout, tc.note) {
				t.Fatalf("exit %d, want 0 and %q\nstdout: %s\nstderr: %s", r.code, tc.note, r.stdout, r.stderr)
			}
			got, _ := os.ReadFile(out)
			orig, _ := os.ReadFile(card)
			if !bytes.Equal(got, orig[:tc.bytes]) {
				t.Errorf("backup holds %d bytes, want the card's first %d", len(got), tc.bytes)
			}
		})
	}
}

func TestReadRefuses(t *testing.T) {
	t.Parallel()
	card := cardWith(t, holeyImage(), 4<<20)
	dir := t.TempDir()
	existing := filepath.Join(dir, "b.img.zst")
	os.WriteFile(existing, []byte("yesterday's backup"), 0o644)
	for _, tc := range []struct {
		name string
		args []string
		code int
		msg  string
	}{
		{"existing OUT", []string{"sim:" + card, existing}, exitRefused, "Pass --force to overwrite it"},
		{"size past the card", []string{"--size", "5MiB", "sim:" + card, filepath.Join(dir, "new.img")}, exitRefused, "more than"},
		{"size and used", []string{"--size", "1MiB", "--used", "sim:" + card, filepath.Join(dir, "new.img")}, exitUsage, "pass one"},
		{"stdout", []string{"sim:" + card, "-"}, exitUsage, `OUT: "-" is not a file name`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := runCLI(t, append([]string{"read"}, tc.args...)...)
			if r.code != tc.code || !strings.Contains(r.stderr, tc.msg) {
				t.Fatalf("exit %d, want %d and %q\nstderr: %s", r.code, tc.code, tc.msg, r.stderr)
			}
			if got, _ := os.ReadFile(existing); string(got) != "yesterday's backup" {
				t.Error("the existing backup was changed")
			}
			noFiles(t, dir, "b.img.zst")
		})
	}
	if r := runCLI(t, "read", "--force", "sim:"+card, existing); r.code != exitOK {
		t.Fatalf("--force: exit %d: %s", r.code, r.stderr)
	}
}

// cancelOnRead cancels the run at the first progress event of the read.
type cancelOnRead struct {
	once   sync.Once
	cancel context.CancelFunc
}

func (c *cancelOnRead) Write(p []byte) (int, error) {
	if bytes.Contains(p, []byte(`"phase":"read"`)) {
		c.once.Do(c.cancel)
	}
	return len(p), nil
}

// TestReadFailureLeavesNoFile: a device error and Ctrl-C both leave nothing
// that looks like a backup, not even the .part file.
func TestReadFailureLeavesNoFile(t *testing.T) {
	t.Parallel()
	card := cardWith(t, holeyImage(), 16<<20)
	t.Run("device error", func(t *testing.T) {
		dir := t.TempDir()
		r := runCLI(t, "read", "--transfer-size", "64KiB", "sim:"+card+"?fault=medium-error:lba=5000,persistent", filepath.Join(dir, "b.img.xz"))
		if r.code != exitDevice || !strings.Contains(r.stderr, "LBA 4992") {
			t.Fatalf("exit %d, want %d naming LBA 4992\nstderr: %s", r.code, exitDevice, r.stderr)
		}
		noFiles(t, dir)
	})
	t.Run("cancelled", func(t *testing.T) {
		dir := t.TempDir()
		ctx, cancel := context.WithCancel(context.Background())
		defer cancel()
		r := runCLIContext(t, ctx, &cancelOnRead{cancel: cancel}, "read", "--json", "--transfer-size", "256KiB",
			"sim:"+card+"?speed=20MB/s", filepath.Join(dir, "b.img.zst"))
		if r.code != exitCancelled || !strings.Contains(r.stdout, "cancelled") {
			t.Fatalf("exit %d, want %d\n%s\n%s", r.code, exitCancelled, r.stdout, r.stderr)
		}
		noFiles(t, dir)
	})
}

// atPhase runs do at the first progress event of a phase.
type atPhase struct {
	once  sync.Once
	phase string
	do    func()
}

func (a *atPhase) Write(p []byte) (int, error) {
	if bytes.Contains(p, []byte(`"event":"progress"`)) && bytes.Contains(p, []byte(`"phase":"`+a.phase+`"`)) {
		a.once.Do(a.do)
	}
	return len(p), nil
}

// TestReadVerify: OUT appears only once the second read matched. A card
// that reads differently the second time exits 6, with advice about the
// card and reader, and keeps the first read as OUT.part; Ctrl-C during the
// second read keeps it too (it is complete), and says so.
func TestReadVerify(t *testing.T) {
	t.Parallel()
	t.Run("the card changes between the reads", func(t *testing.T) {
		card := cardWith(t, holeyImage(), 4<<20)
		orig, _ := os.ReadFile(card)
		dir := t.TempDir()
		out := filepath.Join(dir, "b.img")
		change := func() {
			f, err := os.OpenFile(card, os.O_WRONLY, 0)
			if err != nil {
				t.Error(err)
				return
			}
			defer f.Close()
			f.WriteAt([]byte("another card"), 4096)
		}
		r := runCLIContext(t, context.Background(), &atPhase{phase: "verify", do: change}, "read", "--json", "--verify", "--transfer-size", "64KiB", "sim:"+card, out)
		if r.code != exitVerify {
			t.Fatalf("exit %d, want %d\n%s", r.code, exitVerify, r.stderr)
		}
		noFiles(t, dir, "b.img.part")
		if got, _ := os.ReadFile(out + ".part"); !bytes.Equal(got, orig) {
			t.Error("b.img.part is not the first read")
		}
		e := lastEvent(t, r.stdout, "error")
		msg, advice := e["message"].(string), e["hint"].(string)
		if !strings.Contains(msg, "b.img was not written") || !strings.Contains(msg, "differs from the first") ||
			!strings.Contains(advice, "another reader") || strings.Contains(advice, "write the image again") {
			t.Errorf("message %q, advice %q", msg, advice)
		}
	})
	t.Run("Ctrl-C during the second read", func(t *testing.T) {
		card := cardWith(t, holeyImage(), 16<<20)
		dir := t.TempDir()
		ctx, cancel := context.WithCancel(context.Background())
		defer cancel()
		out := filepath.Join(dir, "b.img.zst")
		r := runCLIContext(t, ctx, &atPhase{phase: "verify", do: cancel}, "read", "--json", "--verify", "--transfer-size", "256KiB",
			"sim:"+card+"?speed=40MB/s", out)
		if msg := lastEvent(t, r.stdout, "error")["message"]; r.code != exitCancelled || !strings.Contains(fmt.Sprint(msg), "the first read is complete and kept in "+out+".part") {
			t.Fatalf("exit %d, want %d saying the first read is kept\n%s\n%s", r.code, exitCancelled, r.stdout, r.stderr)
		}
		noFiles(t, dir, "b.img.zst.part")
	})
}

// TestReadOutputRefused: OUT in a directory that is not there is a usage
// error found before the card is opened, naming OUT.
func TestReadOutputRefused(t *testing.T) {
	t.Parallel()
	out := filepath.Join(t.TempDir(), "missing", "b.img")
	r := runCLI(t, "read", "usb:ffff:fffe", out)
	if r.code != exitUsage || !strings.Contains(r.stderr, "cannot create "+out+": no such file or directory") || strings.Contains(r.stderr, ".b.img.") {
		t.Fatalf("exit %d, want %d naming %s\n%s", r.code, exitUsage, out, r.stderr)
	}
}
