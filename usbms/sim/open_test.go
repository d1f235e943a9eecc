package sim

import (
	"context"
	"encoding/binary"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/usbflash/usbflash/internal/testkit/factsonly"
	"github.com/usbflash/usbflash/internal/testkit/readonly"
)

// TestOpen parses good and bad sim: targets against real files.
func TestOpen(t *testing.T) {
	type check func(t *testing.T, d *Device, path string)
	capacity := func(lun byte, blocks int64, bs uint32) check {
		return func(t *testing.T, d *Device, _ string) {
			h := &host{t: t, d: d}
			ex := h.run(lun, true, 32, []byte{opServiceIn16, 0x10, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 32, 0, 0}, nil)
			if ex.csw.status != 0 {
				t.Fatalf("READ CAPACITY(16) on LUN %d: status %d", lun, ex.csw.status)
			}
			if last, got := binary.BigEndian.Uint64(ex.data), binary.BigEndian.Uint32(ex.data[8:]); last != uint64(blocks-1) || got != bs {
				t.Fatalf("LUN %d: last LBA %d block %d, want %d blocks of %d", lun, last, got, blocks, bs)
			}
		}
	}
	fileSize := func(want int64) check {
		return func(t *testing.T, _ *Device, path string) {
			st, err := os.Stat(path)
			if err != nil || st.Size() != want {
				t.Fatalf("file size %v (%v), want %d", st.Size(), err, want)
			}
		}
	}
	tests := []struct {
		name     string
		existing int64  // size of PATH made before Open; -1: none
		lun1     int64  // size of PATH.lun1; 0: none
		opts     string // appended to sim:PATH
		wantErr  string // substring of the error; "" for success
		checks   []check
	}{
		{"existing file", 1 << 20, 0, "", "", []check{capacity(0, 2048, 512)}},
		{"create with size", -1, 0, "?size=64MiB", "", []check{fileSize(64 << 20), capacity(0, 131072, 512)}},
		{"extend with size", 1 << 20, 0, "?size=2MiB", "", []check{fileSize(2 << 20)}},
		{"same size", 1 << 20, 0, "?size=1MiB", "", []check{fileSize(1 << 20)}},
		{"block 4096", 1 << 20, 0, "?block=4096", "", []check{capacity(0, 256, 4096)}},
		{"speed and latency", 1 << 20, 0, "?speed=30MB/s&latency=1ms", "", []check{
			func(t *testing.T, d *Device, _ string) {
				if d.cfg.Speed != 30e6 || d.cfg.Latency != time.Millisecond {
					t.Fatalf("speed %v latency %v", d.cfg.Speed, d.cfg.Latency)
				}
			}}},
		{"luns from file and memory", 1 << 20, 512 << 10, "?luns=3", "", []check{
			capacity(0, 2048, 512), capacity(1, 1024, 512), capacity(2, 2048, 512)}},
		{"write-protected", 1 << 20, 0, "?wp=1", "", []check{func(t *testing.T, d *Device, _ string) {
			h := &host{t: t, d: d}
			if ex := h.run(0, false, 512, cdbWrite10(0, 1), make([]byte, 512)); ex.csw.status != 1 {
				t.Fatal("write to wp=1 passed")
			}
		}}},
		{"no medium", 1 << 20, 0, "?nomedium=true", "", []check{func(t *testing.T, d *Device, _ string) {
			h := &host{t: t, d: d}
			if ex := h.run(0, false, 0, cdbTUR(), nil); ex.csw.status != 1 {
				t.Fatal("TUR with nomedium=1 passed")
			}
		}}},
		{"identity and quirks", 1 << 20, 0, "?serial=ABC&vendor=V&product=P&revision=9&maxlun-stall=1&reject-sync=1&reject-modesense=1&max-transfer=128&removable=0", "", []check{
			func(t *testing.T, d *Device, _ string) {
				_, product, serial := d.Identity()
				l := d.luns[0].cfg
				if serial != "ABC" || product != "P" || l.Serial != "ABC" || l.Vendor != "V" || l.Revision != "9" ||
					!d.cfg.StallGetMaxLUN || !l.RejectSyncCache || !l.RejectModeSense || l.MaxTransferBlocks != 128 || l.Removable {
					t.Fatalf("config %+v lun %+v", d.cfg, l)
				}
			}}},
		{"faults", 1 << 20, 0, "?fault=medium-error:lba=2048&fault=disconnect:after=1MiB&fault=not-ready:count=3&fault=stall-out:after=64KiB,count=2,persistent", "", []check{
			func(t *testing.T, d *Device, _ string) {
				want := []Fault{
					{Kind: MediumError, LBA: 2048},
					{Kind: NotReady, Count: 3},
					{Kind: StallDataOut, AfterBytes: 64 << 10, Count: 2, Persistent: true},
				}
				if len(d.faults) != len(want) || d.disconnectAt != 1<<20 {
					t.Fatalf("%d faults, disconnect at %d", len(d.faults), d.disconnectAt)
				}
				for i, w := range want {
					if d.faults[i].Fault != w {
						t.Errorf("fault %d: %+v, want %+v", i, d.faults[i].Fault, w)
					}
				}
			}}},

		{"missing file", -1, 0, "", "no size= was given", nil},
		{"refuse to shrink", 2 << 20, 0, "?size=1MiB", "refusing to shrink", nil},
		{"not a block multiple", 1000, 0, "", "multiple", nil},
		{"empty file", 0, 0, "", "multiple", nil},
		{"4096 block of 512 multiple", 1536, 0, "?block=4096", "multiple", nil},
		{"bad block", 1 << 20, 0, "?block=1024", "block=1024: want 512 or 4096", nil},
		{"bad size", -1, 0, "?size=lots", "option size=lots", nil},
		{"bad speed", 1 << 20, 0, "?speed=fast", "option speed=fast", nil},
		{"bad latency", 1 << 20, 0, "?latency=soon", "option latency=soon", nil},
		{"too many luns", 1 << 20, 0, "?luns=17", "luns=17: want 1 to 16", nil},
		{"bad bool", 1 << 20, 0, "?wp=maybe", "wp=maybe: want 1 or 0", nil},
		{"unknown option", 1 << 20, 0, "?colour=red", `unknown option "colour"`, nil},
		{"unknown fault", 1 << 20, 0, "?fault=explode", "never-answer", nil},
		{"medium error without lba", 1 << 20, 0, "?fault=medium-error", "lba=N", nil},
		{"corrupt without lba", 1 << 20, 0, "?fault=corrupt", "lba=N", nil},
		{"fault count 0", 1 << 20, 0, "?fault=not-ready:count=0", "count=0", nil},
		{"fault on missing LUN", 1 << 20, 0, "?fault=stall-in:lun=1", "lun=1", nil},
		{"fault bad parameter", 1 << 20, 0, "?fault=disconnect:when=now", `unknown parameter "when"`, nil},
		{"bad lun file", 1 << 20, 1000, "?luns=2", "multiple", nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			path := filepath.Join(t.TempDir(), "card.img")
			if tt.existing >= 0 {
				if err := os.WriteFile(path, make([]byte, tt.existing), 0o644); err != nil {
					t.Fatal(err)
				}
			}
			if tt.lun1 > 0 {
				if err := os.WriteFile(path+".lun1", make([]byte, tt.lun1), 0o644); err != nil {
					t.Fatal(err)
				}
			}
			d, err := Open("sim:" + path + tt.opts)
			if tt.wantErr != "" {
				if err == nil {
					d.Close()
					t.Fatalf("Open succeeded, want error containing %q", tt.wantErr)
				}
				if !strings.Contains(err.Error(), tt.wantErr) {
					t.Fatalf("error %q, want it to contain %q", err, tt.wantErr)
				}
				factsonly.Check(t, err.Error())
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			defer d.Close()
			for _, c := range tt.checks {
				c(t, d, path)
			}
		})
	}
}

// TestOpenPersists checks that data written through the device lands in
// the file, and that Close closes it.
func TestOpenPersists(t *testing.T) {
	path := filepath.Join(t.TempDir(), "card.img")
	d, err := Open(path + "?size=1MiB") // the sim: prefix is optional
	if err != nil {
		t.Fatal(err)
	}
	h := &host{t: t, d: d}
	data := pattern(1024, 5)
	if ex := h.run(0, false, 1024, cdbWrite10(10, 2), data); ex.csw.status != 0 {
		t.Fatalf("WRITE: status %d", ex.csw.status)
	}
	if ex := h.run(0, false, 0, make10(opSyncCache10), nil); ex.csw.status != 0 {
		t.Fatalf("SYNCHRONIZE CACHE: status %d", ex.csw.status)
	}
	if err := d.Close(); err != nil {
		t.Fatal(err)
	}
	if _, err := d.BulkOut(context.Background(), buildCBW(1, 0, false, 0, cdbTUR())); err == nil {
		t.Fatal("BulkOut after Close succeeded")
	}
	got, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if string(got[10*512:12*512]) != string(data) {
		t.Fatal("file does not hold the written blocks")
	}
}

// TestOpenEmptyPath rejects a target without a path.
func TestOpenEmptyPath(t *testing.T) {
	for _, spec := range []string{"sim:", "sim:?size=1MiB", ""} {
		if _, err := Open(spec); err == nil || !strings.Contains(err.Error(), "sim:PATH") {
			t.Errorf("Open(%q): %v, want a usage error", spec, err)
		}
	}
}

// TestOpenLocks: a card (and its PATH.lunK files) opened by one Device
// cannot be opened for writing by another, through any name, until Close;
// readers share it.
func TestOpenLocks(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "card.img")
	if err := os.WriteFile(path+".lun1", make([]byte, 1<<20), 0o644); err != nil {
		t.Fatal(err)
	}
	link := filepath.Join(dir, "link.img")
	if err := os.Symlink(path, link); err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name          string
		first, second func(string) (*Device, error)
		secondSpec    string
		wantLocked    bool
	}{
		{"writer, writer by a symlink", Open, Open, link, true},
		{"writer, writer of its second LUN's file", Open, Open, path + ".lun1", true},
		{"writer, reader", Open, OpenReadOnly, path, true},
		{"reader, writer", OpenReadOnly, Open, path, true},
		{"reader, reader", OpenReadOnly, OpenReadOnly, path, false},
	}
	if err := os.WriteFile(path, make([]byte, 1<<20), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			first, err := tc.first(path + "?luns=2")
			if err != nil {
				t.Fatal(err)
			}
			second, err := tc.second(tc.secondSpec)
			if err == nil {
				second.Close()
			}
			if errors.Is(err, ErrLocked) != tc.wantLocked {
				t.Fatalf("second open: %v, want locked: %v", err, tc.wantLocked)
			}
			first.Close()
			if second, err := tc.second(tc.secondSpec); err != nil {
				t.Errorf("after the first closed: %v", err)
			} else {
				second.Close()
			}
		})
	}
}

// TestOpenReadOnly: a read-only open extends and writes nothing; size=
// makes a missing card, blank, and nothing without it.
func TestOpenReadOnly(t *testing.T) {
	path := filepath.Join(t.TempDir(), "card.img")
	var ce *CardError
	if _, err := OpenReadOnly(path); !errors.As(err, &ce) || !errors.Is(err, ErrCardNeedsSize) {
		t.Fatalf("missing card without size=: %v, want CardNeedsSize", err)
	}
	if _, err := os.Stat(path); err == nil {
		t.Fatal("a read-only open without size= created the card")
	}
	blank, err := OpenReadOnly(path + "?size=1MiB")
	if err != nil {
		t.Fatalf("missing card with size=: %v, want a blank card", err)
	}
	blank.Close()
	if st, err := os.Stat(path); err != nil || st.Size() != 1<<20 {
		t.Fatalf("the blank card: %v, %v; want 1 MiB", st, err)
	}
	if err := os.Chmod(path, 0o444); err != nil {
		t.Fatal(err)
	}
	if _, err := OpenReadOnly(path + "?size=2MiB"); err == nil || !strings.Contains(err.Error(), "read-only") {
		t.Fatalf("size= larger than the card: %v, want an error", err)
	}
	d, err := OpenReadOnly(path)
	if err != nil {
		t.Fatal(err)
	}
	defer d.Close()
	f := d.closers[0].(*os.File)
	if _, err := f.WriteAt([]byte{1}, 0); err == nil {
		t.Error("the card's file is writable after a read-only open")
	}
}

// TestCardErrorReasons: a card file that cannot be one is a *CardError
// saying why, with the sizes the advice needs.
func TestCardErrorReasons(t *testing.T) {
	dir := t.TempDir()
	big, odd := filepath.Join(dir, "big.img"), filepath.Join(dir, "odd.img")
	if err := os.WriteFile(big, make([]byte, 2<<20), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(odd, make([]byte, 1000), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		spec     string
		kind     error
		fileSize int64
	}{
		{filepath.Join(dir, "missing.img"), ErrCardNeedsSize, 0},
		{big + "?size=1MiB", ErrCardWouldShrink, 2 << 20},
		{odd, ErrCardBadSize, 1000},
		{dir, ErrCardNotAFile, 0},
		{filepath.Join(dir, "missing", "card.img") + "?size=1MiB", ErrCardNoDirectory, 0},
	} {
		_, err := Open(tc.spec)
		var ce *CardError
		if !errors.As(err, &ce) || !errors.Is(err, tc.kind) || ce.FileSize != tc.fileSize {
			t.Errorf("Open(%s) = %v, want a *CardError of kind %v, file size %d", tc.spec, err, tc.kind, tc.fileSize)
		}
	}
}

// TestOpenUnwritableCard: a card file the system will not let this
// process write opens read-only, as a write-protected card (file: targets
// do the same); it is never extended. A wrong option is a *SpecError.
func TestOpenUnwritableCard(t *testing.T) {
	path := filepath.Join(t.TempDir(), "card.img")
	if err := os.WriteFile(path, make([]byte, 1<<20), 0o644); err != nil {
		t.Fatal(err)
	}
	readonly.File(t, path)
	d, err := Open(path)
	if err != nil {
		t.Fatalf("Open: %v, want a write-protected card", err)
	}
	if !d.cfg.LUNs[0].WriteProtected {
		t.Error("the card is not write-protected")
	}
	d.Close()
	var ce *CardError
	if _, err := Open(path + "?size=2MiB"); !errors.As(err, &ce) || !errors.Is(err, ErrCardShortReadOnly) {
		t.Errorf("Open with a larger size= = %v, want CardShortReadOnly", err)
	}
	var se *SpecError
	if _, err := Open(path + "?bogus=1"); !errors.As(err, &se) {
		t.Errorf("Open with an unknown option = %v, want a *SpecError", err)
	}
}

func TestOpenUASOptions(t *testing.T) {
	cases := []struct {
		opts string
		want UASConfig
		err  bool
	}{
		{opts: "uas=only", want: UASConfig{Mode: UASOnly}},
		{opts: "uas=both&streams=16", want: UASConfig{Mode: UASAndBOT, Streams: 16}},
		{opts: "uas=only&uas-overlap=7&uas-response=9&uas-abort=fail&uas-no-ready=11", want: UASConfig{Mode: UASOnly, OverlapAt: 7, ResponseAt: 9, AbortFails: true, NoReadyAt: 11}},
		{opts: "uas=sometimes", err: true},
		{opts: "uas=only&streams=-1", err: true},
		{opts: "uas=only&uas-overlap=0", err: true},
	}
	for _, c := range cases {
		path := filepath.Join(t.TempDir(), "card.img")
		d, err := Open("sim:" + path + "?size=1MiB&" + c.opts)
		if c.err {
			if err == nil {
				d.Close()
				t.Errorf("%s: opened, want an error", c.opts)
			}
			continue
		}
		if err != nil {
			t.Errorf("%s: %v", c.opts, err)
			continue
		}
		on, streams := d.UASMode()
		if d.cfg.UAS != c.want || !on || streams != c.want.Streams || d.Offers() != c.want.Mode {
			t.Errorf("%s: UAS %+v (on %v, %d streams), want %+v", c.opts, d.cfg.UAS, on, streams, c.want)
		}
		d.Close()
	}
}
