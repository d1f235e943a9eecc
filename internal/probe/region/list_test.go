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
	"github.com/usbflash/usbflash/usbms/sim"
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

// TestRestorePutsBackWhatItCan: a region that cannot be written back (a
// bad block) does not keep the regions after it from going back; the error
// names that region alone, by its bytes, as the device's failure.
func TestRestorePutsBackWhatItCan(t *testing.T) {
	c := newSimCard(t, cardSize)
	ctx := context.Background()
	regions := []Region{{Offset: 1 << 20, Length: 64 << 10}, {Offset: 4 << 20, Length: 64 << 10}, {Offset: 9 << 20, Length: 64 << 10}}
	before := make([][32]byte, len(regions))
	l := &List{Card: Card{Target: "sim:card.img", Capacity: cardSize, BlockSize: 512, Holds: cardSize}}
	for i, r := range regions {
		before[i] = c.hash(t, r.Offset, r.Length)
		s, err := Save(ctx, c.lun, "sim:card.img", r)
		if err != nil {
			t.Fatal(err)
		}
		l.Saved = append(l.Saved, s)
		c.overwrite(t, r)
	}
	bad := regions[1].Offset/512 + 3
	c.dev.Inject(sim.Fault{Kind: sim.MediumError, LBA: bad, Count: 1000})
	err := l.Restore(ctx, c.lun, "sim:card.img")
	var partial *PartialError
	if !errors.As(err, &partial) || failure.Of(err) != failure.Device {
		t.Fatalf("restore over a bad block: %v (class %v), want a PartialError of the device", err, failure.Of(err))
	}
	if len(partial.Failed) != 1 || partial.Failed[0].Region != regions[1] || partial.Failed[0].Written {
		t.Fatalf("not put back: %+v, want the region at byte %d alone, unwritten", partial.Failed, regions[1].Offset)
	}
	if !strings.Contains(err.Error(), "1 of 3 saved regions not put back") || !strings.Contains(err.Error(), "bytes 4194304 to 4259840") {
		t.Errorf("error %q does not say which region and how many", err)
	}
	for _, i := range []int{0, 2} {
		if c.hash(t, regions[i].Offset, regions[i].Length) != before[i] {
			t.Errorf("the region at byte %d was not put back", regions[i].Offset)
		}
	}
	factsonly.Check(t, err.Error())
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
