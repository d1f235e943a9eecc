package session

import (
	"bytes"
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/usbflash/usbflash/internal/drive"
	"github.com/usbflash/usbflash/internal/lib/parttable"
)

// TestFormat (issue 46): sim cards of 2, 16, 64 and 256 GiB (sparse
// files) are formatted as the SD Association's formatter does, FAT32 up
// to 32 GiB and exFAT above, on the erase unit the reader reports or the
// specification's, and pass fsck.fat -n and fsck.exfat -n; the first
// transfer (the partition table) is written last, as every write's.
func TestFormat(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		card, fs, say string
		measure       bool
		fs2           string // asked for
	}{
		{"size=2GiB", "FAT32", "16 KiB clusters; the partition at 4 MiB", false, ""},
		{"size=16GiB", "FAT32", "on a 4 MiB erase unit (the SD Association's boundary unit", false, ""},
		{"size=16GiB&au=8MiB&clock=virtual", "FAT32", "the first cluster at 16 MiB, on a 8 MiB erase unit (measured", true, ""},
		{"size=16GiB&clock=virtual", "FAT32", "on a 4 MiB erase unit (the SD Association's boundary unit for its capacity: no boundary stood out when measured", true, ""},
		{"size=64GiB", "exFAT", "128 KiB clusters; the partition at 16 MiB and the first cluster at 32 MiB", false, ""},
		{"size=256GiB", "exFAT", "the partition at 32 MiB", false, ""},
		{"size=64MiB", "exFAT", "exFAT, labelled \"Test\", 128 KiB clusters", false, "exfat"},
		{"size=64GiB", "FAT32", "FAT32, labelled \"TEST\", 32 KiB clusters", false, "fat32"},
	} {
		t.Run(tc.card+tc.fs2, func(t *testing.T) {
			t.Parallel()
			card := filepath.Join(t.TempDir(), "card.img")
			f, err := NewFormat("Test", tc.fs2, 0)
			if err != nil {
				t.Fatal(err)
			}
			f.Measure = tc.measure
			log := &noteLog{}
			res, err := Run(context.Background(), Config{Blocks: f, Verify: true, Observer: log}, simSpecs(t, "", card+"?"+tc.card))
			if err != nil {
				t.Fatalf("Run: %v\n%s", err, strings.Join(log.all(), "\n"))
			}
			if notes := strings.Join(log.all(), "\n"); !strings.Contains(notes, tc.fs) || !strings.Contains(notes, tc.say) {
				t.Errorf("notes:\n%s\nwant %s and %q", notes, tc.fs, tc.say)
			}
			if !res.Cards[0].Verified() {
				t.Error("not verified")
			}
			checkFormatted(t, card, tc.fs)
		})
	}
}

// checkFormatted runs the file system's checker over the card's one
// partition, copied out of the sparse card (the checkers take no offset).
func checkFormatted(t *testing.T, card, fs string) {
	t.Helper()
	c, err := os.Open(card)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	st, _ := c.Stat()
	read := func(off int64, p []byte) error { _, err := c.ReadAt(p, off); return err }
	p, err := parttable.First(read, 512, st.Size())
	if err != nil {
		t.Fatalf("the card's partition table: %v", err)
	}
	part := filepath.Join(t.TempDir(), "part.img")
	out, err := os.Create(part)
	if err != nil {
		t.Fatal(err)
	}
	out.Truncate(p.Size)
	buf := make([]byte, 1<<20)
	for off := int64(0); off < min(p.Size, 128<<20); off += int64(len(buf)) {
		n, _ := c.ReadAt(buf, p.Start+off)
		if !bytes.Equal(buf[:n], make([]byte, n)) {
			out.WriteAt(buf[:n], off)
		}
	}
	out.Close()
	tool := map[string]string{"FAT32": "fsck.fat", "exFAT": "fsck.exfat"}[fs]
	path := "/usr/sbin/" + tool
	if _, err := os.Stat(path); err != nil {
		t.Fatalf("%s is not installed (apt-get install dosfstools exfatprogs): %v", tool, err)
	}
	if b, err := exec.Command(path, "-n", part).CombinedOutput(); err != nil {
		t.Fatalf("%s -n: %v\n%s", tool, err, b)
	}
}

// TestFormatWatch: a station formats every card that comes, each for its
// own capacity (one FAT32, one exFAT), and stops when asked.
func TestFormatWatch(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	cards := []string{filepath.Join(dir, "a.img"), filepath.Join(dir, "b.img")}
	readers := []drive.Found{drive.SimReader(cards[0] + "?size=2GiB"), drive.SimReader(cards[1] + "?size=64GiB")}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	var mu sync.Mutex
	done := 0
	obs := ObserverFunc(func(e Event) {
		if _, ok := e.(CardDone); ok {
			mu.Lock()
			if done++; done == len(cards) {
				cancel()
			}
			mu.Unlock()
		}
	})
	f, err := NewFormat("", "", 0)
	if err != nil {
		t.Fatal(err)
	}
	res, err := Watch(ctx, Config{Blocks: f, Verify: true, Observer: obs},
		func(context.Context) ([]drive.Found, error) { return readers, nil })
	if err != nil {
		t.Fatalf("Watch: %v", err)
	}
	if res.Tally.Cards != 2 || res.Tally.Succeeded != 2 {
		t.Fatalf("tally %+v", res.Tally)
	}
	checkFormatted(t, cards[0], "FAT32")
	checkFormatted(t, cards[1], "exFAT")
}
