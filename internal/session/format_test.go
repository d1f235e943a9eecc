package session

import (
	"context"
	"path/filepath"
	"strings"
	"testing"

	"github.com/usbflash/usbflash/internal/testkit/fsck"
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
			res, err := Run(context.Background(), Config{Blocks: f, Engine: Engine{Verify: true}, Output: Output{Observer: log}}, simSpecs(t, "", card+"?"+tc.card))
			if err != nil {
				t.Fatalf("Run: %v\n%s", err, strings.Join(log.all(), "\n"))
			}
			if notes := strings.Join(log.all(), "\n"); !strings.Contains(notes, tc.fs) || !strings.Contains(notes, tc.say) {
				t.Errorf("notes:\n%s\nwant %s and %q", notes, tc.fs, tc.say)
			}
			if !res.Cards[0].Verified() {
				t.Error("not verified")
			}
			fsck.Card(t, card, tc.fs)
		})
	}
}
