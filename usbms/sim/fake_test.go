package sim

import (
	"bytes"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func blockOf(bs int, v byte) []byte { return bytes.Repeat([]byte{v}, bs) }

func readBlock(t *testing.T, m Medium, blk int64) []byte {
	t.Helper()
	p := make([]byte, 512)
	if _, err := m.ReadAt(p, blk*512); err != nil {
		t.Fatal(err)
	}
	return p
}

func writeBlock(t *testing.T, m Medium, blk int64, v byte) {
	t.Helper()
	if _, err := m.WriteAt(blockOf(512, v), blk*512); err != nil {
		t.Fatal(err)
	}
}

// TestFakeMedium: each kind does to blocks past the real size what its
// doc says, and the cache hides it until later writes push the block out.
func TestFakeMedium(t *testing.T) {
	const real = 1000 // blocks: not a power of two
	t.Run("wrap", func(t *testing.T) {
		m := NewFakeMedium(NewMemory(4000*512), 512, Fake{Kind: FakeWrap, Real: real * 512})
		writeBlock(t, m, 7, 1)
		writeBlock(t, m, real+7, 2) // lands on block 7
		if got := readBlock(t, m, 7); got[0] != 2 {
			t.Fatalf("block 7 holds %d, want 2 (overwritten by block %d)", got[0], real+7)
		}
		if got := readBlock(t, m, 2*real+7); got[0] != 2 {
			t.Fatalf("block %d reads %d, want block 7's 2", 2*real+7, got[0])
		}
	})
	t.Run("drop", func(t *testing.T) {
		m := NewFakeMedium(NewMemory(4000*512), 512, Fake{Kind: FakeDrop, Real: real * 512})
		writeBlock(t, m, real-1, 3)
		writeBlock(t, m, real, 4)
		if readBlock(t, m, real-1)[0] != 3 || !bytes.Equal(readBlock(t, m, real), make([]byte, 512)) {
			t.Fatal("the last real block must keep its write and the first fake one read zeros")
		}
	})
	t.Run("garbage", func(t *testing.T) {
		m := NewFakeMedium(NewMemory(4000*512), 512, Fake{Kind: FakeGarbage, Real: real * 512})
		writeBlock(t, m, real+5, 4)
		a, b := readBlock(t, m, real+5), readBlock(t, m, real+5)
		if bytes.Equal(a, b) || a[0] == 4 && a[1] == 4 {
			t.Fatal("garbage must change with every read and not be what was written")
		}
	})
	t.Run("unreadable", func(t *testing.T) {
		m := NewFakeMedium(NewMemory(4000*512), 512, Fake{Kind: FakeUnreadable, Real: real * 512, Cache: 2 * 512}).(*fakeMedium)
		if got := m.firstUnreadable(real-10, 10); got != -1 {
			t.Fatalf("blocks below the real size: first unreadable %d, want none", got)
		}
		if got := m.firstUnreadable(real-10, 20); got != real {
			t.Fatalf("a read across the real size fails at %d, want %d", got, real)
		}
		writeBlock(t, m, real, 8) // into the cache: it reads back
		if got := m.firstUnreadable(real-10, 20); got != real+1 {
			t.Fatalf("with block %d cached: first unreadable %d, want %d", real, got, real+1)
		}
	})
	t.Run("cache", func(t *testing.T) {
		m := NewFakeMedium(NewMemory(4000*512), 512, Fake{Kind: FakeDrop, Real: real * 512, Cache: 4 * 512})
		writeBlock(t, m, real+1, 5)
		for i := range int64(3) {
			writeBlock(t, m, 2000+i, 6)
			writeBlock(t, m, 10+i, 6) // writes to real flash do not enter the cache
		}
		if readBlock(t, m, real+1)[0] != 5 {
			t.Fatal("the cache holds 4 blocks: the first of 4 writes past the real size must still read back")
		}
		writeBlock(t, m, 2003, 6)
		if readBlock(t, m, real+1)[0] != 0 {
			t.Fatal("a fifth write past the real size must push the first out of the cache")
		}
		writeBlock(t, m, 2001, 7) // written again: now the newest
		writeBlock(t, m, 2004, 6)
		writeBlock(t, m, 2005, 6)
		if readBlock(t, m, 2001)[0] != 7 {
			t.Fatal("a block written again must be kept as the newest")
		}
	})
}

// TestFakeOptions: the sim: options build the fake, and their mistakes
// are named.
func TestFakeOptions(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "card.img")
	d, err := Open("sim:" + path + "?size=1MiB&fake=wrap&real=100KiB")
	if err != nil {
		t.Fatal(err)
	}
	m := d.luns[0].medium
	writeBlock(t, m, 200, 9)
	if readBlock(t, m, 0)[0] != 9 {
		t.Fatal("fake=wrap&real=100KiB: block 200 must land on block 0")
	}
	d.Close()
	if st, _ := os.Stat(path); st.Size() != 1<<20 {
		t.Fatalf("file size %d, want the claimed 1 MiB", st.Size())
	}
	// Every mistake is the target's (*SpecError: a usage error in every
	// command), found before a card file is made.
	for opts, want := range map[string]string{
		"fake=wrap":                         "needs real=SIZE",
		"real=100KiB":                       "needs fake=",
		"fake-cache=1MiB":                   "needs fake=",
		"fake=melt&real=1KiB":               "want wrap, drop, garbage or unreadable",
		"fake=drop&real=1000":               "whole number of 512-byte blocks",
		"fake=drop&real=2MiB":               "larger than the card",
		"fake=drop&real=1KiB&fake-cache=-1": "fake-cache",
		"color=red":                         "fake-cache",
	} {
		for _, card := range []string{path + "?", filepath.Join(dir, "new.img") + "?size=1MiB&"} {
			_, err := Open("sim:" + card + opts)
			var spec *SpecError
			if !errors.As(err, &spec) || !strings.Contains(err.Error(), want) {
				t.Errorf("%s%s: error %v, want a *SpecError that says %q", card, opts, err, want)
			}
		}
		if _, err := os.Stat(filepath.Join(dir, "new.img")); err == nil {
			t.Fatalf("%s: a card file was made for a target that cannot be one", opts)
		}
	}
}
