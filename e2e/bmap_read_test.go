//go:build e2e

package e2e

import (
	"bytes"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/klauspost/compress/zstd"

	"github.com/usbflash/usbflash/internal/image/bmap"
)

// bmapBlockMapped: the maps usbflash makes map the blocks that are not zero.
func bmapBlockMapped(img []byte, off int) bool {
	return !bytes.Equal(img[off:off+4096], make([]byte, 4096))
}

// Scenario: on xHCI, in one boot, a write with a block map next to the
// image writes the mapped blocks (short gaps are written through) and
// leaves whole unmapped transfers as they were, and `read` backs the card up to .zst with a map that bmap.Parse accepts;
// the backup decodes to the card's bytes.
func TestBmapWriteAndReadBack(t *testing.T) {
	card := newCard(t, 16<<20)
	m := boot(t, MachineSpec{Controller: XHCI, Readers: []Reader{{Serial: "BMAP1", LUNs: []LUN{{Backing: card}}}}})
	img := makeImage(300, 8<<20)
	// Whole 1 MiB transfers of zeros: the map leaves them out.
	clear(img[2<<20 : 4<<20])
	clear(img[6<<20 : 7<<20])
	p := putImage(t, m, "bm", img, "xz")
	b := bmap.NewBuilder(0)
	b.Write(img)
	data, err := bmap.Marshal(b.Map())
	if err != nil {
		t.Fatal(err)
	}
	// bm.xz finds bm.bmap as bmaptool would: the suffix removed.
	if err := os.WriteFile(filepath.Join(m.Share, "img", "bm.bmap"), data, 0o644); err != nil {
		t.Fatal(err)
	}
	target := serialTarget("BMAP1")
	r := usbflash(t, m, 3*time.Minute, "write", p, target, "--yes")
	wantCode(t, r, 0, "write with a block map")
	wantText(t, r, "names the map", "block map /host/img/bm.bmap")
	got, err := os.ReadFile(card)
	if err != nil {
		t.Fatal(err)
	}
	for off := 0; off < len(got); off += 4096 {
		blk := got[off : off+4096]
		old := bytes.Count(blk, []byte{cardFill}) == len(blk)
		switch {
		case off >= len(img) || (off >= 2<<20 && off < 4<<20) || (off >= 6<<20 && off < 7<<20):
			if !old {
				t.Errorf("block at %d is not mapped but was written", off)
			}
		case bmapBlockMapped(img, off) && !bytes.Equal(blk, img[off:off+4096]):
			t.Errorf("block at %d: not the image's bytes", off)
		case !bytes.Equal(blk, img[off:off+4096]) && !old:
			t.Errorf("block at %d holds neither the image's nor the old bytes", off)
		}
	}

	r = usbflash(t, m, 3*time.Minute, "read", "--size", "8MiB", "--verify", target, "/host/img/backup.img.zst")
	wantCode(t, r, 0, "read to .zst")
	raw, err := os.ReadFile(filepath.Join(m.Share, "img", "backup.img.zst"))
	if err != nil {
		t.Fatal(err)
	}
	dec, err := zstd.NewReader(nil)
	if err != nil {
		t.Fatal(err)
	}
	defer dec.Close()
	backup, err := dec.DecodeAll(raw, nil)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(backup, got[:8<<20]) {
		t.Errorf("the backup (%d bytes) is not the card's first 8 MiB", len(backup))
	}
	mapData, err := os.ReadFile(filepath.Join(m.Share, "img", "backup.img.zst.bmap"))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := bmap.Parse(mapData); err != nil {
		t.Errorf("the backup's block map: %v", err)
	}
}
