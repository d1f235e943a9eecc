package sim

import (
	"bytes"
	"encoding/binary"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestOpenSlots: a reader whose cards come and go: the card file's
// presence and size are the slot's, looked at before each command; a card
// put in (created, grown from 0, replaced by another file) is announced
// with UNIT ATTENTION 6/28/00 once, then reads and writes its own file; a
// card taken out (removed, truncated to 0) is an empty slot (2/3A/00).
func TestOpenSlots(t *testing.T) {
	dir := t.TempDir()
	card := filepath.Join(dir, "a.img")
	d, err := OpenSlots(card + "?luns=2")
	if err != nil {
		t.Fatal(err)
	}
	defer d.Close()
	h := &host{t: t, d: d, tag: 1}
	tur := func(lun byte) (key, asc byte) {
		if x := h.run(lun, false, 0, cdbTUR(), nil); x.csw.status == 0 {
			return 0, 0
		}
		k, a, _, _ := h.sense(lun)
		return k, a
	}
	capacity := func(lun byte) int64 {
		x := h.run(lun, true, 8, []byte{opReadCapacity10, 0, 0, 0, 0, 0, 0, 0, 0, 0}, nil)
		if x.csw.status != 0 {
			t.Fatalf("READ CAPACITY of LUN %d: status %d", lun, x.csw.status)
		}
		return (int64(binary.BigEndian.Uint32(x.data[0:4])) + 1) * int64(binary.BigEndian.Uint32(x.data[4:8]))
	}
	size := func(path string, n int64) {
		t.Helper()
		err := os.Truncate(path, n)
		if errors.Is(err, os.ErrNotExist) {
			err = os.WriteFile(path, make([]byte, n), 0o644)
		}
		if err != nil {
			t.Fatal(err)
		}
	}
	steps := []struct {
		name   string
		change func()
		lun    byte
		// What the next TEST UNIT READY and the one after say (sense key,
		// ASC; 0 for GOOD).
		first, then [2]byte
		capacity    int64 // with a card, after
	}{
		{name: "no file: empty", change: func() {}, first: [2]byte{2, 0x3A}, then: [2]byte{2, 0x3A}},
		{name: "created: in", change: func() { size(card, 1<<20) }, first: [2]byte{6, 0x28}, capacity: 1 << 20},
		{name: "stays", change: func() {}, capacity: 1 << 20},
		{name: "truncated to 0: out", change: func() { size(card, 0) }, first: [2]byte{2, 0x3A}, then: [2]byte{2, 0x3A}},
		{name: "grown: in again", change: func() { size(card, 2<<20) }, first: [2]byte{6, 0x28}, capacity: 2 << 20},
		{name: "less than a block: out", change: func() { size(card, 100) }, first: [2]byte{2, 0x3A}, then: [2]byte{2, 0x3A}},
		{name: "whole blocks of it", change: func() { size(card, 3<<20+100) }, first: [2]byte{6, 0x28}, capacity: 3 << 20},
		{name: "replaced by another file", change: func() {
			next := filepath.Join(dir, "next")
			size(next, 4<<20)
			if err := os.Rename(next, card); err != nil {
				t.Fatal(err)
			}
		}, first: [2]byte{6, 0x28}, capacity: 4 << 20},
		{name: "removed: out", change: func() { os.Remove(card) }, first: [2]byte{2, 0x3A}, then: [2]byte{2, 0x3A}},
		{name: "the second slot's card", change: func() { size(card+".lun1", 1<<20) }, lun: 1, first: [2]byte{6, 0x28}, capacity: 1 << 20},
	}
	for _, s := range steps {
		s.change()
		for i, want := range [][2]byte{s.first, s.then} {
			if k, a := tur(s.lun); k != want[0] || a != want[1] {
				t.Fatalf("%s: TEST UNIT READY %d says %x/%02x, want %x/%02x", s.name, i+1, k, a, want[0], want[1])
			}
		}
		if s.capacity > 0 {
			if got := capacity(s.lun); got != s.capacity {
				t.Fatalf("%s: capacity %d, want %d", s.name, got, s.capacity)
			}
		}
	}
	// The card in the slot is its file.
	data := pattern(512, 9)
	if x := h.run(1, false, 512, cdbWrite10(3, 1), data); x.csw.status != 0 {
		t.Fatalf("WRITE: status %d", x.csw.status)
	}
	if b, _ := os.ReadFile(card + ".lun1"); !bytes.Equal(b[3*512:4*512], data) {
		t.Fatal("the write did not reach the card's file")
	}
}

// TestOpenSlotsOptions: the options that name a card's size or presence
// are refused (the files say both); fake= applies to each card that comes
// in, a card smaller than real= being genuine.
func TestOpenSlotsOptions(t *testing.T) {
	dir := t.TempDir()
	for _, opts := range []string{"size=1MiB", "nomedium=1"} {
		var spec *SpecError
		if _, err := OpenSlots(filepath.Join(dir, "x.img") + "?" + opts); !errors.As(err, &spec) || !strings.Contains(err.Error(), "do not apply") {
			t.Errorf("%s: %v, want a *SpecError", opts, err)
		}
	}
	card := filepath.Join(dir, "fake.img")
	if err := os.WriteFile(card, make([]byte, 4<<20), 0o644); err != nil {
		t.Fatal(err)
	}
	d, err := OpenSlots(card + "?fake=wrap&real=1MiB")
	if err != nil {
		t.Fatal(err)
	}
	m := d.luns[0].medium
	writeBlock(t, m, 2048, 7) // 1 MiB in: lands on block 0
	if readBlock(t, m, 0)[0] != 7 {
		t.Fatal("fake=wrap&real=1MiB: block 2048 of the card that came in must land on block 0")
	}
	d.Close()
}
