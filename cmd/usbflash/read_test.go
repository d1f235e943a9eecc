package main

import (
	"bytes"
	"context"
	"encoding/binary"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
)

// The backup's behaviour is flash's (TestBackupSession); these hold what
// the read command says and how it exits.

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

// readContract: what read says of where it stops, the mistakes it
// refuses before reading (with the flag or argument at fault and the
// advice), and its exit codes.
func readContract(t *testing.T) {
	dir := t.TempDir()
	existing := filepath.Join(dir, "b.img.zst")
	os.WriteFile(existing, []byte("yesterday's backup"), 0o644)
	card := cardWith(t, holeyImage(), 4<<20)
	for _, tc := range []struct {
		name string
		args []string
		code int
		msg  string // in stdout or stderr
	}{
		{"MBR", []string{"--used", "sim:" + mbrCard(t, 8<<20, 3<<20)}, exitOK, "MBR: reading up to the end of the last partition, 3 MiB of 8 MiB"},
		{"no partition table", []string{"--used", "sim:" + cardWith(t, []byte("no table here"), 2<<20)}, exitOK, "has no partition table: reading the whole card"},
		{"MBR past the end", []string{"--used", "sim:" + mbrCard(t, 2<<20, 3<<20)}, exitOK, "damaged partition table: the MBR's partitions end at 3.15 MB, past the disk's 2.10 MB: reading the whole card"},
		{"existing OUT", []string{"sim:" + card, existing}, exitRefused, "Pass --force to overwrite it"},
		{"size past the card", []string{"--size", "5MiB", "sim:" + card}, exitRefused, "--size 5 MiB is more than"},
		{"size and used", []string{"--size", "1MiB", "--used", "sim:" + card}, exitUsage, "pass one"},
		{"buffers", []string{"--buffers", "1", "sim:" + card}, exitUsage, "--buffers: 1 is fewer than 2"},
		{"stdout", []string{"sim:" + card, "-"}, exitUsage, `OUT: "-" is not a file name`},
		{"no such directory", []string{"usb:ffff:fffe", filepath.Join(dir, "missing", "b.img")}, exitUsage, "cannot create " + filepath.Join(dir, "missing", "b.img") + ": no such file or directory"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			args := tc.args
			if !strings.Contains(args[len(args)-1], dir) && args[len(args)-1] != "-" {
				args = append(args, filepath.Join(t.TempDir(), "b.img"))
			}
			r := runCLI(t, append([]string{"read"}, args...)...)
			if r.code != tc.code || !strings.Contains(r.stdout+r.stderr, tc.msg) {
				t.Fatalf("exit %d, want %d and %q\nstdout: %s\nstderr: %s", r.code, tc.code, tc.msg, r.stdout, r.stderr)
			}
			if got, _ := os.ReadFile(existing); string(got) != "yesterday's backup" {
				t.Error("the existing backup was changed")
			}
			noFiles(t, dir, "b.img.zst")
		})
	}
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

// readVerify: a second read that differs exits 6 with advice
// about the card and reader, keeping the first read as OUT.part; Ctrl-C
// during the second read exits 130, keeps it too, and says so.
func readVerify(t *testing.T) {
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

// TestReadCommand: what read says and how it exits.
func TestReadCommand(t *testing.T) {
	parallel(t,
		subtest{"where it stops and what it refuses", readContract},
		subtest{"--verify", readVerify},
	)
}
