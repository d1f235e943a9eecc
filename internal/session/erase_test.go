package session

import (
	"bytes"
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/usbflash/usbflash/pipeline/blockdev"
)

// TestErase (issue 46): every block of every card is written (zeros, or a
// random pattern no two runs share) and read back, each card its own
// size; a reader that offers no unmap is said; a write-protected card is
// refused before the first byte, and refuses the others unless they are
// to be written without it.
func TestErase(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name   string
		random bool
		cards  []string // sim: options of each card
		skip   bool     // SkipRefused
		wantOK []bool   // each card erased
		err    func(error) bool
		says   string // a note
	}{
		{name: "zeros", cards: []string{"size=3MiB"}, wantOK: []bool{true}, says: "offers no unmap (SCSI UNMAP or WRITE SAME with UNMAP)"},
		{name: "random", random: true, cards: []string{"size=3MiB"}, wantOK: []bool{true}, says: "offers no unmap"},
		{name: "two cards of two sizes", cards: []string{"size=2MiB", "size=5MiB"}, wantOK: []bool{true, true}, says: "offers no unmap"},
		{name: "unmapped first", random: true, cards: []string{"size=3MiB&unmap=unmap"}, wantOK: []bool{true}, says: "every block unmapped (UNMAP, 3.15 MB)"},
		{name: "unmapped by WRITE SAME", cards: []string{"size=3MiB&unmap=writesame"}, wantOK: []bool{true}, says: "every block unmapped (WRITE SAME(16) with UNMAP"},
		{name: "unmap refused", cards: []string{"size=3MiB&unmap=refuse"}, wantOK: []bool{true}, says: "refused UNMAP: every block is overwritten all the same"},
		{name: "write-protected", cards: []string{"size=2MiB&wp=1"}, wantOK: []bool{false},
			err: func(err error) bool { return errors.Is(err, blockdev.ErrWriteProtected) }},
		{name: "one write-protected of two", cards: []string{"size=2MiB", "size=2MiB&wp=1"}, wantOK: []bool{false, false},
			err: func(err error) bool { return errors.As(err, new(*RefusedError)) }},
		{name: "one write-protected of two, the other erased", cards: []string{"size=2MiB", "size=2MiB&wp=1"}, skip: true, wantOK: []bool{true, false},
			err: func(err error) bool { return errors.As(err, new(*CardsError)) }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			dir := t.TempDir()
			old := bytes.Repeat([]byte{0xa5}, 1<<20)
			var specs []string
			for i, o := range tc.cards {
				p := filepath.Join(dir, "card"+string(rune('a'+i))+".img")
				if err := os.WriteFile(p, old, 0o644); err != nil {
					t.Fatal(err)
				}
				specs = append(specs, p+"?"+o)
			}
			e, err := NewErase(tc.random, false)
			if err != nil {
				t.Fatal(err)
			}
			log := &noteLog{}
			res, err := Run(context.Background(), Config{Blocks: e, Targets: Targets{SkipRefused: tc.skip}, Engine: Engine{TransferSize: 256 << 10, Verify: true}, Output: Output{Observer: log}},
				simSpecs(t, "", specs...))
			if tc.err == nil && err != nil || tc.err != nil && !tc.err(err) {
				t.Fatalf("Run: %v (%T)", err, err)
			}
			for i, s := range specs {
				got, err := os.ReadFile(strings.Split(s, "?")[0])
				if err != nil {
					t.Fatal(err)
				}
				erased := !bytes.Equal(got[:len(old)], old)
				if erased != tc.wantOK[i] {
					t.Fatalf("card %d erased: %v, want %v", i, erased, tc.wantOK[i])
				}
				if !erased {
					continue
				}
				zeros := bytes.Count(got, []byte{0})
				if tc.random && zeros > len(got)/200 || !tc.random && zeros != len(got) {
					t.Errorf("card %d: %d of %d bytes zero (random %v)", i, zeros, len(got), tc.random)
				}
			}
			if tc.err != nil {
				return
			}
			for _, o := range res.Cards {
				if !o.Verified() || o.Written != o.Capacity {
					t.Errorf("%s: verified %v, %d of %d bytes written", o.Target, o.Verified(), o.Written, o.Capacity)
				}
			}
			if notes := strings.Join(log.all(), "\n"); !strings.Contains(notes, tc.says) {
				t.Errorf("notes:\n%s\nwant %q", notes, tc.says)
			}
		})
	}
}

// TestEraseRandomDiffers: two random erases write different patterns, and
// a pattern read at any offset is the one read whole (the verify makes it
// again).
func TestEraseRandomDiffers(t *testing.T) {
	a := &patternBlocks{size: 3 << 20, random: true, seed: 1}
	b := &patternBlocks{size: 3 << 20, random: true, seed: 2}
	whole, other := make([]byte, a.size), make([]byte, b.size)
	a.ReadAt(whole, 0)
	b.ReadAt(other, 0)
	if bytes.Equal(whole[:4096], other[:4096]) {
		t.Fatal("two seeds, one pattern")
	}
	for _, off := range []int64{1, 4095, 4096, 5000, 3<<20 - 10} {
		part := make([]byte, 10000)
		n, _ := a.ReadAt(part, off)
		if !bytes.Equal(part[:n], whole[off:off+int64(n)]) {
			t.Errorf("at %d: differs from the whole", off)
		}
	}
}
