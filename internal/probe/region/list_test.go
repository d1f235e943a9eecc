package region

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/usbflash/usbflash/internal/failure"
	"github.com/usbflash/usbflash/internal/testkit/factsonly"
)

// TestListKeepLoadRestore: regions kept in a file go back exactly, also
// the zero ones (which dd conv=sparse skips) and a block saved twice (the
// first save's bytes win); a card of another size is refused untouched.
func TestListKeepLoadRestore(t *testing.T) {
	c := newSimCard(t, cardSize)
	ctx := context.Background()
	zero := Region{Offset: 5 << 20, Length: 64 << 10}
	c.overwriteWith(t, zero, 0) // the card's own zeros
	before := c.hash(t, 0, cardSize)
	regions := []Region{{Offset: 0, Length: 1 << 20}, {Offset: 8<<20 + 512, Length: 512}, zero, {Offset: cardSize - 4096, Length: 4096}}
	var saved []*Saved
	for _, r := range regions {
		s, err := Save(ctx, c.lun, "sim:card.img", r)
		if err != nil {
			t.Fatal(err)
		}
		saved = append(saved, s)
	}
	// The probe writes over the first region, then saves a block in it
	// again: that save holds its data, not the card's.
	c.overwrite(t, regions[0])
	again, err := Save(ctx, c.lun, "sim:card.img", Region{Offset: 4096, Length: 512})
	if err != nil {
		t.Fatal(err)
	}
	saved = append(saved, again)
	for _, r := range regions[1:] {
		c.overwrite(t, r)
	}
	// The order they go back in: the latest saved first.
	l := &List{Card: Card{Target: "sim:card.img?size=16MiB", Capacity: cardSize, BlockSize: 512, Holds: cardSize}}
	for i := len(saved) - 1; i >= 0; i-- {
		l.Saved = append(l.Saved, saved[i])
	}
	dir := t.TempDir()
	k, err := l.Keep(dir, "usbflash-test-*")
	if err != nil {
		t.Fatal(err)
	}
	if filepath.Dir(k.Path) != dir || filepath.Dir(k.Data) != dir || k.Regions != len(saved) {
		t.Fatalf("kept %+v, want %d regions in %s", k, len(saved), dir)
	}

	loaded, err := Load(k.Path)
	if err != nil {
		t.Fatal(err)
	}
	if loaded.Card != l.Card || len(loaded.Saved) != len(saved) {
		t.Fatalf("loaded %+v with %d regions, want %+v with %d", loaded.Card, len(loaded.Saved), l.Card, len(saved))
	}
	if err := loaded.Restore(ctx, c.lun, "sim:card.img"); err != nil {
		t.Fatal(err)
	}
	if c.hash(t, 0, cardSize) != before {
		t.Fatal("the card does not hold what it held before")
	}

	small := newSimCard(t, cardSize/2)
	smallBefore := small.hash(t, 0, cardSize/2)
	var mismatch *CardMismatchError
	if err := loaded.Restore(ctx, small.lun, "sim:small.img"); !errors.As(err, &mismatch) || failure.Of(err) != failure.Refused {
		t.Fatalf("restore onto a card of another size: %v, want a refusal", err)
	}
	if small.hash(t, 0, cardSize/2) != smallBefore {
		t.Fatal("a refused restore wrote to the card")
	}
}

// TestLoadRefuses: a list that is not one, or whose regions are not the
// card's, is the caller's mistake, named.
func TestLoadRefuses(t *testing.T) {
	head := listMagic + "\ntarget sim:c.img\ncapacity 1048576\nblock-size 512\nholds 1048576\ndata d.img\n"
	tests := []struct{ name, list, want string }{
		{"not a list", "hello\n", "not a list of saved regions"},
		{"unknown key", head + "colour red\n", `line 7: unknown key "colour"`},
		{"a region past the card", head + "region 1048064 1024\n", "not whole blocks of the card"},
		{"a region of no whole blocks", head + "region 0 100\n", "not whole blocks of the card"},
		{"data elsewhere", strings.Replace(head, "data d.img", "data ../d.img", 1), "no data file"},
		{"no data file", head + "region 0 512\n", "d.img"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			path := filepath.Join(t.TempDir(), "l.regions")
			if err := os.WriteFile(path, []byte(tt.list), 0o600); err != nil {
				t.Fatal(err)
			}
			_, err := Load(path)
			var le *ListError
			if !errors.As(err, &le) || failure.Of(err) != failure.Usage || !strings.Contains(err.Error(), tt.want) {
				t.Fatalf("Load = %v, want a usage error saying %q", err, tt.want)
			}
			factsonly.Check(t, err.Error())
		})
	}
}

// TestListPast: what of the regions lies past what the card holds is
// counted, a region that straddles it by its bytes past it; a card that
// holds all it claims has none.
func TestListPast(t *testing.T) {
	regions := []Region{{Offset: 0, Length: 4096}, {Offset: 8192, Length: 4096}, {Offset: 16384, Length: 512}}
	for _, tt := range []struct {
		holds     int64
		regions   int
		pastBytes int64
	}{
		{holds: 0, regions: 0, pastBytes: 0},       // not known: all it claims
		{holds: 1 << 20, regions: 0, pastBytes: 0}, // the capacity
		{holds: 16384, regions: 1, pastBytes: 512},
		{holds: 10240, regions: 2, pastBytes: 2048 + 512},
		{holds: 512, regions: 3, pastBytes: 3584 + 4096 + 512},
	} {
		l := &List{Card: Card{Capacity: 1 << 20, BlockSize: 512, Holds: tt.holds}}
		for _, r := range regions {
			l.Saved = append(l.Saved, &Saved{Region: r})
		}
		if n, b := l.Past(); n != tt.regions || b != tt.pastBytes {
			t.Errorf("holds %d: %d regions, %d bytes past it; want %d, %d", tt.holds, n, b, tt.regions, tt.pastBytes)
		}
	}
}
