package sim

import (
	"bytes"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestWriteBack: a write-back cache answers its blocks until its timer
// (counted in commands) or a full cache sends them to the flash, oldest
// write first; SYNCHRONIZE CACHE leaves it be; on a wrap-around fake the
// alias shows on the flash only once the cache went out.
func TestWriteBack(t *testing.T) {
	const real = 100 // blocks of flash behind a wrap-around fake
	type step struct {
		op  string // "w" write blk=v, "cmd" a command passes, "sync", "flush"
		blk int64
		v   byte
	}
	tests := []struct {
		name  string
		wb    WriteBack
		fake  bool
		steps []step
		// after the steps: what a read answers and what the flash holds
		read, flash map[int64]byte
	}{
		{name: "held until the timer", wb: WriteBack{Size: 8 * 512, Every: 3},
			steps: []step{{op: "w", blk: 5, v: 1}, {op: "cmd"}, {op: "cmd"}},
			read:  map[int64]byte{5: 1}, flash: map[int64]byte{5: 0}},
		{name: "the timer's third command flushes", wb: WriteBack{Size: 8 * 512, Every: 3},
			steps: []step{{op: "w", blk: 5, v: 1}, {op: "cmd"}, {op: "cmd"}, {op: "cmd"}},
			read:  map[int64]byte{5: 1}, flash: map[int64]byte{5: 1}},
		{name: "no timer while clean", wb: WriteBack{Size: 8 * 512, Every: 2},
			steps: []step{{op: "cmd"}, {op: "cmd"}, {op: "cmd"}, {op: "w", blk: 5, v: 1}, {op: "cmd"}},
			read:  map[int64]byte{5: 1}, flash: map[int64]byte{5: 0}},
		{name: "SYNCHRONIZE CACHE flushes nothing", wb: WriteBack{Size: 8 * 512, Every: 100},
			steps: []step{{op: "w", blk: 5, v: 1}, {op: "sync"}},
			read:  map[int64]byte{5: 1}, flash: map[int64]byte{5: 0}},
		{name: "full: flushed before the next block", wb: WriteBack{Size: 2 * 512, Every: 100},
			steps: []step{{op: "w", blk: 1, v: 1}, {op: "w", blk: 2, v: 2}, {op: "w", blk: 3, v: 3}},
			read:  map[int64]byte{1: 1, 2: 2, 3: 3}, flash: map[int64]byte{1: 1, 2: 2, 3: 0}},
		{name: "wrap: the alias waits for the flush", wb: WriteBack{Size: 8 * 512, Every: 100}, fake: true,
			steps: []step{{op: "w", blk: 0, v: 1}, {op: "flush"}, {op: "w", blk: real, v: 2}},
			// Block 0 reads the flash (1); block real is answered by the
			// cache (2), which the flash has not seen.
			read: map[int64]byte{0: 1, real: 2}, flash: map[int64]byte{0: 1}},
		{name: "wrap: the newest write lands last", wb: WriteBack{Size: 8 * 512, Every: 100}, fake: true,
			steps: []step{{op: "w", blk: real, v: 2}, {op: "w", blk: 0, v: 1}, {op: "flush"}},
			read:  map[int64]byte{0: 1, real: 1}, flash: map[int64]byte{0: 1}},
		{name: "wrap: written again, ordered by the latest write", wb: WriteBack{Size: 8 * 512, Every: 100}, fake: true,
			steps: []step{{op: "w", blk: 0, v: 1}, {op: "w", blk: real, v: 2}, {op: "w", blk: 0, v: 3}, {op: "flush"}},
			read:  map[int64]byte{0: 3, real: 3}, flash: map[int64]byte{0: 3}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			flash := NewMemory(4 * real * 512)
			var under Medium = flash
			if tt.fake {
				under = NewFakeMedium(flash, 512, Fake{Kind: FakeWrap, Real: real * 512})
			}
			m := NewWriteBackMedium(under, 512, tt.wb)
			for _, s := range tt.steps {
				switch s.op {
				case "w":
					m.Command()
					writeBlock(t, m, s.blk, s.v)
				case "cmd":
					m.Command()
				case "sync":
					if err := m.Sync(); err != nil {
						t.Fatal(err)
					}
				case "flush":
					if err := m.Flush(); err != nil {
						t.Fatal(err)
					}
				}
			}
			for blk, want := range tt.read {
				if got := readBlock(t, m, blk); !bytes.Equal(got, blockOf(512, want)) {
					t.Errorf("block %d reads %d, want %d", blk, got[0], want)
				}
			}
			for blk, want := range tt.flash {
				if got := readBlock(t, flash, blk); !bytes.Equal(got, blockOf(512, want)) {
					t.Errorf("the flash's block %d holds %d, want %d", blk, got[0], want)
				}
			}
		})
	}
}

// TestWriteBackDevice: through the device, each READ and WRITE is a tick
// of the timer, SYNCHRONIZE CACHE is answered without a flush, a read of
// a cached block across uncached ones is whole, and Close flushes.
func TestWriteBackDevice(t *testing.T) {
	path := filepath.Join(t.TempDir(), "card.img")
	d, err := Open("sim:" + path + "?size=1MiB&write-back=4KiB&write-back-every=2")
	if err != nil {
		t.Fatal(err)
	}
	h := &host{t: t, d: d}
	data := pattern(512, 3)
	if x := h.run(0, false, 512, cdbWrite10(7, 1), data); x.csw.status != 0 {
		t.Fatalf("WRITE: status %d", x.csw.status)
	}
	if x := h.run(0, false, 0, []byte{opSyncCache10, 0, 0, 0, 0, 0, 0, 0, 0, 0}, nil); x.csw.status != 0 {
		t.Fatalf("SYNCHRONIZE CACHE: status %d", x.csw.status)
	}
	onDisk := func() []byte {
		b, err := os.ReadFile(path)
		if err != nil {
			t.Fatal(err)
		}
		return b[7*512 : 8*512]
	}
	if bytes.Equal(onDisk(), data) {
		t.Fatal("SYNCHRONIZE CACHE flushed the write-back cache")
	}
	x := h.run(0, true, 4*512, cdbRead10(5, 4), nil) // the first tick since the write
	if x.csw.status != 0 || !bytes.Equal(x.data[2*512:3*512], data) || !bytes.Equal(x.data[:2*512], make([]byte, 2*512)) {
		t.Fatal("a READ across the cached block does not read it from the cache and the rest from the card")
	}
	if bytes.Equal(onDisk(), data) {
		t.Fatal("flushed after one command, want two")
	}
	h.run(0, true, 512, cdbRead10(0, 1), nil)
	if !bytes.Equal(onDisk(), data) {
		t.Fatal("not flushed after two commands")
	}
	h.run(0, false, 512, cdbWrite10(9, 1), data)
	d.Close()
	if b, _ := os.ReadFile(path); !bytes.Equal(b[9*512:10*512], data) {
		t.Fatal("Close did not flush the write-back cache")
	}
}

// TestWriteBackOptions: the options' mistakes are the target's.
func TestWriteBackOptions(t *testing.T) {
	dir := t.TempDir()
	for opts, want := range map[string]string{
		"write-back-every=4":                 "needs write-back=SIZE",
		"write-back=100":                     "at least one 512-byte block",
		"write-back=1KiB&write-back-every=0": "want 1 or more commands",
		"write-back=-1":                      "write-back=-1",
		"color=red":                          "write-back-every",
	} {
		_, err := Open("sim:" + filepath.Join(dir, "c.img") + "?size=1MiB&" + opts)
		var spec *SpecError
		if !errors.As(err, &spec) || !strings.Contains(err.Error(), want) {
			t.Errorf("%s: error %v, want a *SpecError that says %q", opts, err, want)
		}
	}
}
