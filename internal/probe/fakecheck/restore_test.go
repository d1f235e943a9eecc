package fakecheck

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"testing"

	"github.com/usbflash/usbflash/internal/failure"
	"github.com/usbflash/usbflash/internal/probe/fakecheck/fakecases"
	"github.com/usbflash/usbflash/internal/probe/region"
	"github.com/usbflash/usbflash/pipeline/blockdev"
	"github.com/usbflash/usbflash/usbms/sim"
)

// failing is a dev that cancels, or fails, after a number of writes.
type failing struct {
	*dev
	writes      int
	after       int    // on the after-th write...
	cancel      func() // ...cancel the probe
	fail        error  // ...or fail it and every later command of kind failOn
	failOn      string // "read" or "write"
	failedSince bool
}

func (f *failing) WriteBlocks(ctx context.Context, lba int64, p []byte) error {
	f.writes++
	if f.writes == f.after {
		if f.cancel != nil {
			f.cancel()
		} else {
			f.failedSince = true
		}
	}
	if f.failedSince && f.failOn == "write" {
		return f.fail
	}
	return f.dev.WriteBlocks(ctx, lba, p)
}

func (f *failing) ReadBlocks(ctx context.Context, lba int64, p []byte) error {
	if f.failedSince && f.failOn == "read" {
		return f.fail
	}
	return f.dev.ReadBlocks(ctx, lba, p)
}

func wrapFake(bs int64) (*dev, *card) {
	c := newCard(bs)
	m := sim.NewFakeMedium(c, bs, sim.Fake{Kind: sim.FakeDrop, Real: 100 * mib, Cache: 4 * mib})
	return &dev{m: m, bs: int(bs), blocks: 256 * mib / bs}, c
}

// TestProbeCancelRestores: a cancel mid-probe stops it, and every block
// it wrote is put back and read back before Probe returns.
func TestProbeCancelRestores(t *testing.T) {
	for _, after := range []int{1, 40, 200, 270} {
		d, c := wrapFake(512)
		ctx, cancel := context.WithCancel(context.Background())
		f := &failing{dev: d, after: after, cancel: cancel}
		res, err := Probe(ctx, f, Options{MaxCache: 16 * mib})
		if !errors.Is(err, context.Canceled) {
			t.Fatalf("cancel at write %d: %v, want it cancelled", after, err)
		}
		if !res.Restored || !res.Verified {
			t.Fatalf("cancel at write %d: restored %v verified %v", after, res.Restored, res.Verified)
		}
		if bad := c.changed(100 * mib / 512); len(bad) > 0 {
			t.Fatalf("cancel at write %d: %d blocks changed, e.g. LBA %d", after, len(bad), bad[0])
		}
	}
}

// TestProbeCancelWhilePuttingBack: a cancel that comes while the blocks
// are put back, after a probe that found its verdict, still puts every
// block back and makes the probe a cancelled one.
func TestProbeCancelWhilePuttingBack(t *testing.T) {
	d, c := wrapFake(512)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	res, err := Probe(ctx, d, Options{MaxCache: 16 * mib, Progress: func(p Progress) {
		if p.Step == StepRestore {
			cancel()
		}
	}})
	if !errors.Is(err, context.Canceled) || failure.Of(err) != failure.Interrupted {
		t.Fatalf("probe: %v, want it cancelled", err)
	}
	if !res.Restored || !res.Verified {
		t.Fatalf("restored %v verified %v", res.Restored, res.Verified)
	}
	if bad := c.changed(100 * mib / 512); len(bad) > 0 {
		t.Fatalf("%d blocks changed, e.g. LBA %d", len(bad), bad[0])
	}
}

// TestProbeErrorRestores: a device error mid-probe ends it with that
// error, and every block it wrote is put back.
func TestProbeErrorRestores(t *testing.T) {
	d, c := wrapFake(512)
	boom := errors.New("medium error")
	f := &failing{dev: d, after: 300, fail: boom, failOn: "read"}
	res, err := Probe(context.Background(), f, Options{MaxCache: 16 * mib, SaveDir: t.TempDir(), Target: "sim:card.img"})
	// The reads fail from then on, so the read-back of the restore fails
	// too: both are said, and the saved blocks are kept in a file.
	var re *RestoreError
	if !errors.Is(err, boom) || !errors.As(err, &re) {
		t.Fatalf("error %v, want the device's and a RestoreError", err)
	}
	if !res.Restored || res.Verified {
		t.Fatalf("restored %v verified %v: the blocks are written back, the read-back fails", res.Restored, res.Verified)
	}
	if bad := c.changed(100 * mib / 512); len(bad) > 0 {
		t.Fatalf("%d blocks changed, e.g. LBA %d", len(bad), bad[0])
	}
	savedHolds(t, re, c, 100*mib/512)
}

// savedHolds: the list a RestoreError names holds, for every saved block
// below limit, what the card held before the probe.
func savedHolds(t *testing.T, re *RestoreError, c *card, limit int64) {
	t.Helper()
	if re.Kept.Path == "" {
		t.Fatalf("no file holds the saved blocks: %v", re.FileErr)
	}
	l, err := region.Load(re.Kept.Path)
	if err != nil {
		t.Fatal(err)
	}
	if len(l.Saved) != re.Kept.Regions || l.Card.Target != re.Target {
		t.Fatalf("the list holds %d regions of %q, the error says %d of %q", len(l.Saved), l.Card.Target, re.Kept.Regions, re.Target)
	}
	want := make([]byte, 512)
	for _, s := range l.Saved {
		for off := s.Region.Offset; off < s.Region.End(); off += 512 {
			c.pattern(off/512, want)
			if at := off - s.Region.Offset; off/512 < limit && !bytes.Equal(s.Bytes()[at:at+512], want) {
				t.Fatalf("the saved block at LBA %d is not what the card held", off/512)
			}
		}
	}
}

// TestProbeDestructive saves and restores nothing.
func TestProbeDestructive(t *testing.T) {
	d, _ := wrapFake(512)
	res, err := Probe(context.Background(), d, Options{MaxCache: 16 * mib, Destructive: true})
	if err != nil || res.Kind != Drop || res.Usable != 100*mib || res.Saved != 0 || res.Restored {
		t.Fatalf("%+v, %v", res, err)
	}
}

// TestProbeAbandon: the abandon handed to Options.Abortable (a second
// interrupt) writes the saved blocks to a file, touching no device, and
// the registration ends with the probe.
func TestProbeAbandon(t *testing.T) {
	d, c := wrapFake(512)
	var abandon func() error
	done := 0
	_, err := Probe(context.Background(), d, Options{MaxCache: 16 * mib, SaveDir: t.TempDir(), Abortable: func(a func() error) func() {
		abandon = a
		return func() { done++ }
	}})
	if err != nil || abandon == nil || done != 1 {
		t.Fatalf("err %v, registered %v, done %d times", err, abandon != nil, done)
	}
	var re *RestoreError
	if err := abandon(); !errors.As(err, &re) || !re.Aborted || !errors.Is(err, context.Canceled) || failure.Of(err) != failure.Interrupted {
		t.Fatalf("abandon: %v", err)
	}
	savedHolds(t, re, c, 100*mib/512)
}

// badBlocks is a dev whose reads of some blocks fail as a card's bad
// blocks do (blockdev.ErrBadBlock).
type badBlocks struct {
	*dev
	bad map[int64]bool
}

func (b *badBlocks) ReadBlocks(ctx context.Context, lba int64, p []byte) error {
	for i := range int64(len(p) / b.bs) {
		if b.bad[lba+i] {
			return fmt.Errorf("LBA %d: unrecovered read error: %w", lba+i, blockdev.ErrBadBlock)
		}
	}
	return b.dev.ReadBlocks(ctx, lba, p)
}

// TestProbeUnreadable: a card whose end cannot be read is told apart from
// one with a few bad blocks, whose error stands, and from a destructive
// probe's cached writes.
func TestProbeUnreadable(t *testing.T) {
	const blocks = 1 << 21 // 1 GiB
	tests := []struct {
		name        string
		bad         []int64 // single bad blocks
		fake        *sim.Fake
		destructive bool
		wantUsable  int64 // -1: the bad block's error stands
	}{
		{name: "the last block", bad: []int64{blocks - 1}, wantUsable: (blocks - 1) * 512},
		// The cache flush reads it (the top 16 MiB, below the witnesses).
		{name: "one block near the end", bad: []int64{blocks - 1000}, wantUsable: -1},
		// The bisection's first read lands on the middle one: the end
		// reads above it.
		{name: "the last block and one in the middle", bad: []int64{blocks/2 - 1, blocks - 1}, wantUsable: -1},
		{name: "destructive, behind a cache", fake: &sim.Fake{Kind: sim.FakeUnreadable, Real: 300 << 20, Cache: 8 << 20},
			destructive: true, wantUsable: 300 << 20},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c := newCard(512)
			var m sim.Medium = c
			if tt.fake != nil {
				m = sim.NewFakeMedium(c, 512, *tt.fake)
			}
			d := &badBlocks{dev: &dev{m: m, bs: 512, blocks: blocks}, bad: map[int64]bool{}}
			for _, b := range tt.bad {
				d.bad[b] = true
			}
			res, err := Probe(context.Background(), d, Options{MaxCache: 16 * mib, Destructive: tt.destructive})
			if tt.wantUsable < 0 {
				if !errors.Is(err, blockdev.ErrBadBlock) {
					t.Fatalf("probe: %v (kind %s), want the bad block's error", err, res.Kind)
				}
				return
			}
			if err != nil || res.Kind != Unreadable || res.Usable != tt.wantUsable {
				t.Fatalf("probe: %s with %d usable bytes, %v; want unreadable with %d", res.Kind, res.Usable, err, tt.wantUsable)
			}
		})
	}
}

// allocating is a dev with its own memory, as usbfs has.
type allocating struct {
	*dev
	allocs, frees int
	bufs          [][]byte
}

func (a *allocating) AllocBuffers(count, size int) ([][]byte, string, func(), error) {
	a.allocs++
	a.bufs = make([][]byte, count)
	for i := range a.bufs {
		a.bufs[i] = make([]byte, size)
	}
	return a.bufs, "device", func() { a.frees++ }, nil
}

// TestProbeDeviceMemory: the flush runs from the device's memory, given
// back once when the probe ends.
func TestProbeDeviceMemory(t *testing.T) {
	fc := fakeCase{fakecases.Case{Name: "drop", Block: 512, Claimed: 256 * mib, Kind: "drop", Real: 100 * mib, Cache: 8 * mib}}
	d, _ := fc.device()
	a := &allocating{dev: d}
	res, err := Probe(context.Background(), a, Options{MaxCache: 16 * mib})
	if err != nil || res.Kind != Drop || res.Usable != 100*mib {
		t.Fatalf("probe: %s with %d usable bytes, %v", res.Kind, res.Usable, err)
	}
	if a.allocs != 1 || a.frees != 1 {
		t.Fatalf("AllocBuffers called %d times, its memory freed %d times; want once each", a.allocs, a.frees)
	}
}
