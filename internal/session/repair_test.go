package session

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/usbflash/usbflash/internal/drive"
	"github.com/usbflash/usbflash/internal/failure"
	"github.com/usbflash/usbflash/internal/image"
	"github.com/usbflash/usbflash/internal/testkit/factsonly"
	"github.com/usbflash/usbflash/internal/testkit/testimage"
)

// TestWriteRepair: a write whose read-back differs has the blocks that
// differ written again with Repair: a card that stored a block wrong once
// then holds the image and is verified, its outcome saying what was
// repaired; one that keeps storing it wrong fails as a verify failure
// naming the block; without Repair the first kind fails as it always did.
// With several cards the one repaired goes on alone.
func TestWriteRepair(t *testing.T) {
	t.Parallel()
	const size = 3<<20 + 777
	for _, tc := range []struct {
		name     string
		cards    []string
		repair   bool
		repaired []int  // per card: ranges repaired (0: none, -1: it failed)
		err      string // of the failing card
	}{
		{name: "a block stored wrong once", cards: []string{"a.img?size=8MiB&fault=corrupt:lba=3000"}, repair: true, repaired: []int{1}},
		{name: "in the first transfer", cards: []string{"a.img?size=8MiB&fault=corrupt:lba=7,count=2"}, repair: true, repaired: []int{1}},
		{name: "a block always stored wrong", cards: []string{"a.img?size=8MiB&fault=corrupt:lba=3000,persistent"}, repair: true, repaired: []int{-1},
			err: "still reads back different after 3 repairs: 1 range(s), 512 B, at byte offset 1536000"},
		{name: "without repair", cards: []string{"a.img?size=8MiB&fault=corrupt:lba=3000"}, repaired: []int{-1}, err: "verify failed"},
		{name: "several cards", cards: []string{"a.img?size=8MiB", "b.img?size=8MiB&fault=corrupt:lba=3000", "c.img?size=8MiB&fault=corrupt:lba=5000,persistent"},
			repair: true, repaired: []int{0, 1, -1}, err: "still reads back different"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			dir := t.TempDir()
			imagePath, img := testimage.File(t, dir, size)
			var ev events
			res, _ := Run(context.Background(), Config{Image: image.Ref{Path: imagePath}, Engine: Engine{Verify: true, Repair: tc.repair, Lag: 2}, Output: Output{Observer: &ev}}, simSpecs(t, dir, tc.cards...))
			if len(res.Cards) != len(tc.cards) {
				t.Fatalf("%d outcomes", len(res.Cards))
			}
			for _, o := range res.Cards {
				i := cardIndex(t, tc.cards, o.Target)
				name, _, _ := strings.Cut(tc.cards[i], "?")
				want := tc.repaired[i]
				switch {
				case want < 0:
					if failure.Of(o.Err) != failure.Verify || !strings.Contains(o.Err.Error(), tc.err) {
						t.Errorf("%s: err %v, want a verify failure saying %q", name, o.Err, tc.err)
					}
					factsonly.Check(t, o.Err.Error())
				case o.Err != nil || !o.Verified():
					t.Errorf("%s: %v", name, o.Err)
				case want == 0 && o.Repair != nil, want > 0 && (o.Repair == nil || o.Repair.Ranges != want || o.Repair.Bytes != 512):
					t.Errorf("%s: repair %+v, want %d ranges", name, o.Repair, want)
				case !testimage.Holds(filepath.Join(dir, name), img):
					t.Errorf("%s does not hold the image", name)
				}
			}
			if tc.repaired[0] > 0 && !noted(&ev, "written again") {
				t.Error("no note says the card was repaired")
			}
		})
	}
}

// cardIndex is the index of the card an outcome is of.
func cardIndex(t *testing.T, cards []string, target string) int {
	t.Helper()
	for i, c := range cards {
		name, _, _ := strings.Cut(c, "?")
		if strings.HasSuffix(target, name) {
			return i
		}
	}
	t.Fatalf("no card is %s", target)
	return -1
}

func noted(ev *events, what string) bool {
	ev.mu.Lock()
	defer ev.mu.Unlock()
	for _, e := range ev.list {
		if n, ok := e.(Note); ok && strings.Contains(n.Message, what) {
			return true
		}
	}
	return false
}

// TestVerifyRepair: verify with Repair writes again only the blocks of a
// card that differ from the image and then matches; a write-protected
// card is refused before anything is compared.
func TestVerifyRepair(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name  string
		opts  string
		class failure.Class // of the error; Unknown: none
	}{
		{name: "two blocks differ", opts: "?size=8MiB"},
		{name: "write-protected", opts: "?size=8MiB&wp=1", class: failure.Refused},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			dir := t.TempDir()
			imagePath, img := testimage.File(t, dir, 2<<20+300)
			card := filepath.Join(dir, "card.img")
			onCard := bytes.Clone(img)
			onCard[0] ^= 1         // the first block
			onCard[600000] ^= 0x80 // one in the middle
			if err := os.WriteFile(card, append(onCard, make([]byte, 8<<20-len(onCard))...), 0o644); err != nil {
				t.Fatal(err)
			}
			spec, err := drive.Parse("sim:" + card + tc.opts)
			if err != nil {
				t.Fatal(err)
			}
			res, err := Verify(context.Background(), VerifyConfig{Image: image.Ref{Path: imagePath}, Repair: true}, spec)
			if tc.class != 0 {
				if failure.Of(err) != tc.class {
					t.Fatalf("err %v, want class %v", err, tc.class)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if res.Repair == nil || res.Repair.Ranges != 2 || res.Repair.Bytes != 1024 || res.Bytes != int64(len(img)) {
				t.Errorf("result %+v, repair %+v", res.VerifyResult, res.Repair)
			}
			if !testimage.Holds(card, img) {
				t.Error("the card does not hold the image")
			}
		})
	}
}
