package fakecheck

import (
	"bytes"
	"context"
	"encoding/binary"
	"fmt"
	"sync"
	"testing"

	"usbflash/usbms/sim"
)

// card is a medium whose blocks hold a pattern naming their LBA until
// they are written: what a probe leaves behind is checked block by block
// without holding a whole card in memory.
type card struct {
	mu      sync.Mutex
	bs      int64
	written map[int64][]byte
}

func newCard(bs int64) *card { return &card{bs: bs, written: map[int64][]byte{}} }

func (c *card) pattern(lba int64, p []byte) {
	for i := 0; i < len(p); i += 8 {
		binary.LittleEndian.PutUint64(p[i:], uint64(lba)<<20|uint64(i)|0xA5<<56)
	}
}

func (c *card) ReadAt(p []byte, off int64) (int, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	for n := int64(0); n < int64(len(p)); n += c.bs {
		lba := (off + n) / c.bs
		if b, ok := c.written[lba]; ok {
			copy(p[n:], b)
		} else {
			c.pattern(lba, p[n:n+c.bs])
		}
	}
	return len(p), nil
}

func (c *card) WriteAt(p []byte, off int64) (int, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if off%c.bs != 0 || int64(len(p))%c.bs != 0 {
		return 0, fmt.Errorf("unaligned write")
	}
	for n := int64(0); n < int64(len(p)); n += c.bs {
		c.written[(off+n)/c.bs] = bytes.Clone(p[n : n+c.bs])
	}
	return len(p), nil
}

// changed lists the blocks below limit that no longer hold their pattern.
func (c *card) changed(limit int64) []int64 {
	var bad []int64
	want := make([]byte, c.bs)
	for lba, b := range c.written {
		if lba >= limit {
			continue
		}
		c.pattern(lba, want)
		if !bytes.Equal(b, want) {
			bad = append(bad, lba)
		}
	}
	return bad
}

// dev is a blockdev.Device over a sim medium.
type dev struct {
	m      sim.Medium
	bs     int
	blocks int64
	syncs  int
}

func (d *dev) BlockSize() int    { return d.bs }
func (d *dev) BlockCount() int64 { return d.blocks }
func (d *dev) ReadBlocks(_ context.Context, lba int64, p []byte) error {
	if lba < 0 || lba+int64(len(p)/d.bs) > d.blocks {
		return fmt.Errorf("read past the end")
	}
	_, err := d.m.ReadAt(p, lba*int64(d.bs))
	return err
}
func (d *dev) WriteBlocks(_ context.Context, lba int64, p []byte) error {
	if lba < 0 || lba+int64(len(p)/d.bs) > d.blocks {
		return fmt.Errorf("write past the end")
	}
	_, err := d.m.WriteAt(p, lba*int64(d.bs))
	return err
}
func (d *dev) Sync(context.Context) error { d.syncs++; return nil }

const (
	kib = int64(1) << 10
	mib = int64(1) << 20
	gib = int64(1) << 30
)

// fakeCase is one card of the table: what it claims, what it has, how it
// lies, the cache that hides it.
type fakeCase struct {
	name    string
	bs      int64
	claimed int64
	kind    sim.FakeKind
	real    int64 // 0: genuine
	cache   int64
}

// fakeCases is the table the probe, check and write --check are held to:
// every kind at power-of-two and other real sizes, with and without a
// cache, a real size inside the probe's window, large claims, 4096-byte
// blocks, and genuine cards.
func fakeCases() []fakeCase {
	return []fakeCase{
		{"genuine 512MiB", 512, 512 * mib, sim.FakeNone, 0, 0},
		{"genuine 999MiB+512", 512, 999*mib + 512, sim.FakeNone, 0, 0},
		{"wrap 256MiB of 1GiB", 512, gib, sim.FakeWrap, 256 * mib, 0},
		{"wrap 300MiB of 1GiB", 512, gib, sim.FakeWrap, 300 * mib, 0},
		{"wrap 777777 blocks of 1GiB", 512, gib, sim.FakeWrap, 777777 * 512, 0},
		{"wrap 3000MiB of 64GiB", 512, 64 * gib, sim.FakeWrap, 3000 * mib, 0},
		{"wrap 512KiB of 1GiB (inside the window)", 512, gib, sim.FakeWrap, 512 * kib, 0},
		{"drop 256MiB of 1GiB", 512, gib, sim.FakeDrop, 256 * mib, 0},
		{"drop 777777 blocks of 1GiB", 512, gib, sim.FakeDrop, 777777 * 512, 0},
		{"drop 7.5GiB of 64GiB", 512, 64 * gib, sim.FakeDrop, 7680 * mib, 0},
		{"drop 300KiB of 1GiB (inside the window)", 512, gib, sim.FakeDrop, 300 * kib, 0},
		{"garbage 256MiB of 1GiB", 512, gib, sim.FakeGarbage, 256 * mib, 0},
		{"garbage 123456789 bytes of 1GiB", 512, gib, sim.FakeGarbage, 241126 * 512, 0},
		{"wrap 256MiB of 1GiB, 16MiB cache", 512, gib, sim.FakeWrap, 256 * mib, 16 * mib},
		{"drop 300MiB of 1GiB, 16MiB cache", 512, gib, sim.FakeDrop, 300 * mib, 16 * mib},
		{"drop 777777 blocks of 1GiB, 64MiB cache", 512, gib, sim.FakeDrop, 777777 * 512, 64 * mib},
		{"garbage 256MiB of 1GiB, 64MiB cache", 512, gib, sim.FakeGarbage, 256 * mib, 64 * mib},
		{"garbage 7.5GiB of 64GiB, 32MiB cache", 512, 64 * gib, sim.FakeGarbage, 7680 * mib, 32 * mib},
		{"drop 1GiB+4KiB of 2GiB, 4096-byte blocks", 4096, 2 * gib, sim.FakeDrop, gib + 4*kib, 0},
		{"wrap 100MiB of 2GiB, 4096-byte blocks, 8MiB cache", 4096, 2 * gib, sim.FakeWrap, 100 * mib, 8 * mib},
	}
}

// testMaxCache is the cache bound of the table's probes: above every
// cache in it, small enough to keep the table quick.
const testMaxCache = 96 * mib

func (fc fakeCase) device() (*dev, *card) {
	c := newCard(fc.bs)
	var m sim.Medium = c
	if fc.kind != sim.FakeNone {
		m = sim.NewFakeMedium(c, fc.bs, sim.Fake{Kind: fc.kind, Real: fc.real, Cache: fc.cache})
	}
	return &dev{m: m, bs: int(fc.bs), blocks: fc.claimed / fc.bs}, c
}

func (fc fakeCase) wantKind() Kind {
	return map[sim.FakeKind]Kind{sim.FakeNone: Genuine, sim.FakeWrap: Wrap, sim.FakeDrop: Drop, sim.FakeGarbage: Garbage}[fc.kind]
}

func (fc fakeCase) wantUsable() int64 {
	if fc.kind == sim.FakeNone {
		return fc.claimed
	}
	return fc.real
}

// TestProbeTable: every card of the table is told right, its usable size
// to the block, and holds afterwards exactly what it held before.
func TestProbeTable(t *testing.T) {
	for _, fc := range fakeCases() {
		t.Run(fc.name, func(t *testing.T) {
			d, c := fc.device()
			res, err := Probe(context.Background(), d, Options{MaxCache: testMaxCache})
			if err != nil {
				t.Fatal(err)
			}
			if res.Kind != fc.wantKind() || res.Usable != fc.wantUsable() {
				t.Fatalf("found %s with %d usable bytes, want %s with %d", res.Kind, res.Usable, fc.wantKind(), fc.wantUsable())
			}
			if fc.cache > 0 && fc.kind != sim.FakeWrap && res.Cache == 0 {
				t.Errorf("a %d-byte cache hid the lie, but the result says none did", fc.cache)
			}
			if !res.Restored || !res.Verified {
				t.Fatalf("restored %v verified %v", res.Restored, res.Verified)
			}
			limit := fc.wantUsable() / fc.bs
			if bad := c.changed(limit); len(bad) > 0 {
				t.Fatalf("%d blocks below the usable size changed, e.g. LBA %d", len(bad), bad[0])
			}
			t.Logf("%s: %d commands, %d MiB written, %d MiB read, cache %d, checked %d MiB",
				res.Kind, res.Commands, res.Written/mib, res.Read/mib, res.Cache, res.CacheChecked/mib)
		})
	}
}
