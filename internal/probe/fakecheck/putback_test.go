package fakecheck

import (
	"bytes"
	"context"
	"errors"
	"os"
	"path/filepath"
	"testing"

	"github.com/usbflash/usbflash/internal/drive"
	"github.com/usbflash/usbflash/internal/probe/region"
	"github.com/usbflash/usbflash/internal/testkit/testpattern"
)

// TestPutBack: the blocks a check kept go back onto the card they came
// from (zero regions too), and a card of another size is refused with
// nothing written.
func TestPutBack(t *testing.T) {
	dir := t.TempDir()
	card := filepath.Join(dir, "c.img")
	orig := testpattern.Bytes(4<<20, 7)
	copy(orig[1<<20:], make([]byte, 64<<10)) // a zero region, which dd conv=sparse would skip
	if err := os.WriteFile(card, orig, 0o644); err != nil {
		t.Fatal(err)
	}
	open := func(raw string) *drive.Device {
		spec, err := drive.Parse(raw)
		if err != nil {
			t.Fatal(err)
		}
		d, err := drive.Open(context.Background(), spec, drive.Options{})
		if err != nil {
			t.Fatal(err)
		}
		return d
	}
	// Save two regions as a check does, then overwrite them.
	d := open("sim:" + card)
	l := &region.List{Card: region.Card{Target: "sim:" + card, Capacity: d.Capacity(), BlockSize: d.Dev.BlockSize(), Holds: d.Capacity()}}
	for _, r := range []region.Region{{Name: "a", Offset: 0, Length: 128 << 10}, {Name: "zeros", Offset: 1 << 20, Length: 64 << 10}} {
		s, err := region.Save(context.Background(), d.Dev, d.Name, r)
		if err != nil {
			t.Fatal(err)
		}
		l.Saved = append(l.Saved, s)
		if err := d.Dev.WriteBlocks(context.Background(), r.Offset/512, bytes.Repeat([]byte{0xa5}, int(r.Length))); err != nil {
			t.Fatal(err)
		}
	}
	d.Close()
	kept, err := l.Keep(dir, "saved-*")
	if err != nil {
		t.Fatal(err)
	}

	// Another card's size: refused, nothing written.
	other := filepath.Join(dir, "other.img")
	if _, err := PutBack(context.Background(), PutBackConfig{List: kept.Path, Target: mustParse(t, "sim:"+other+"?size=8MiB")}); err == nil {
		t.Error("PutBack onto a card of another size: no error")
	}
	if got, _ := os.ReadFile(other); bytes.ContainsRune(got, 0xa5) {
		t.Error("the other card was written")
	}

	res, err := PutBack(context.Background(), PutBackConfig{List: kept.Path, Target: mustParse(t, "sim:"+card)})
	if err != nil {
		t.Fatal(err)
	}
	if res.Regions != 2 || res.Bytes != 192<<10 || res.Holds != 0 {
		t.Errorf("result %+v, want 2 regions of 192 KiB", res)
	}
	if got, _ := os.ReadFile(card); !bytes.Equal(got, orig) {
		t.Error("the card does not hold its own bytes again")
	}

	// A list that is not one: its error, nothing opened.
	bad := filepath.Join(dir, "bad.regions")
	if err := os.WriteFile(bad, []byte("not a list\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	var le *region.ListError
	if _, err := PutBack(context.Background(), PutBackConfig{List: bad, Target: mustParse(t, "sim:"+card)}); !errors.As(err, &le) {
		t.Errorf("bad list: %v, want a *region.ListError", err)
	}
}

func mustParse(t *testing.T, raw string) drive.Spec {
	t.Helper()
	s, err := drive.Parse(raw)
	if err != nil {
		t.Fatal(err)
	}
	return s
}
