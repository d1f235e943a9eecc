package drive

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/usbflash/usbflash/internal/failure"
	"github.com/usbflash/usbflash/internal/testkit/cardfile"
	"github.com/usbflash/usbflash/usbms/usbdev"
)

// TestParseReaders: the readers setting is usb (or nothing) or
// sim:DIR[?OPTIONS]; every mistake is a usage error of the setting,
// naming what is wrong.
func TestParseReaders(t *testing.T) {
	dir := t.TempDir()
	file := filepath.Join(dir, "f")
	if err := os.WriteFile(file, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	for _, tt := range []struct {
		in    string
		bus   bool
		proto uint8 // the readers' protocol, for a bus
		speed usbdev.Speed
		err   string
	}{
		{in: ""},
		{in: "usb"},
		{in: "sim:" + dir, bus: true, proto: usbdev.ProtocolBOT, speed: usbdev.SpeedHigh},
		{in: "sim:" + dir + "?speed=40MB/s&uas=only&streams=4", bus: true, proto: usbdev.ProtocolUAS, speed: usbdev.SpeedSuper},
		{in: "sim:" + dir + "?uas=both", bus: true, proto: usbdev.ProtocolBOT, speed: usbdev.SpeedHigh},
		{in: "scsi:" + dir, err: "not a set of readers"},
		{in: "sim:", err: "no directory"},
		{in: "sim:" + filepath.Join(dir, "none"), err: "no such file"},
		{in: "sim:" + file, err: "not a directory"},
		{in: "sim:" + dir + "?size=1MiB", err: "option size= is each reader's own"},
		{in: "sim:" + dir + "?serial=X", err: "option serial= is each reader's own"},
		{in: "sim:" + dir + "?lun=1", err: "option lun= is each reader's own"},
		{in: "sim:" + dir + "?color=red", err: `unknown option "color"`},
	} {
		t.Run(tt.in, func(t *testing.T) {
			b, err := ParseReaders(tt.in)
			if tt.err != "" {
				var se *failure.SettingError
				if !errors.As(err, &se) || se.Setting != SettingReaders || failure.Of(err) != failure.Usage || !strings.Contains(err.Error(), tt.err) {
					t.Fatalf("%v, want a usage error of the readers setting saying %q", err, tt.err)
				}
				return
			}
			if err != nil || (b != nil) != tt.bus {
				t.Fatalf("%v, %v; want a bus %v", b, err, tt.bus)
			}
			if b == nil {
				return
			}
			info := b.info(0, simPort{name: "a"})
			if info.Protocol != tt.proto || info.Speed != tt.speed || !info.Supported || info.Serial != "a" || info.Bus != 0 || info.Address != 1 {
				t.Errorf("a reader: %+v", info)
			}
		})
	}
}

// TestSimBusReaders: a bus's readers are its card files NAME.img, in the
// order of their names; list describes them, an empty file as an empty
// slot; every target form selects them, a card written through one is its
// file; no kernel disk is made up for them.
func TestSimBusReaders(t *testing.T) {
	dir := t.TempDir()
	cardfile.Size(t, filepath.Join(dir, "b.img"), 1<<20)
	cardfile.Size(t, filepath.Join(dir, "a.img"), 0)
	for _, skipped := range []string{"c.txt", ".hidden.img", "two words.img", "a.img.lun1"} {
		cardfile.Size(t, filepath.Join(dir, skipped), 1<<20)
	}
	if err := os.Mkdir(filepath.Join(dir, "d.img"), 0o755); err != nil {
		t.Fatal(err)
	}
	bus, err := ParseReaders("sim:" + dir)
	if err != nil {
		t.Fatal(err)
	}
	readers := &Readers{Sim: bus}
	found, err := readers.ListReaders(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, r := range found {
		names = append(names, r.Name)
	}
	if !slices.Equal(names, []string{"usb:0000:0000:a", "usb:0000:0000:b"}) {
		t.Fatalf("readers %q, want a and b", names)
	}
	if s := found[0].Slots; len(s) != 1 || s[0].LUN != nil || !s[0].NoMedium {
		t.Errorf("a (0 bytes): slots %+v, want one empty", s)
	}
	if s := found[1].Slots; len(s) != 1 || s[0].LUN == nil || s[0].LUN.BlockCount()*int64(s[0].LUN.BlockSize()) != 1<<20 {
		t.Errorf("b: slots %+v, want one 1 MiB card", s)
	}
	if ts, _ := AllWithCards(found); len(ts) != 1 || ts[0].Raw != "usb:0.2" {
		t.Errorf("--all: %v, want usb:0.2", ts)
	}
	for _, target := range []string{"1", "usb:0.2", "usb:0000:0000:b", "usb:0000:0000:b/0"} {
		spec, err := Parse(target)
		if err != nil {
			t.Fatal(err)
		}
		d, err := Open(context.Background(), spec, Options{Readers: readers})
		if err != nil {
			t.Fatalf("%s: %v", target, err)
		}
		if d.Name != "usb:0000:0000:b" || d.Capacity() != 1<<20 {
			t.Errorf("%s opened %s of %d bytes", target, d.Name, d.Capacity())
		}
		if u, ok := d.Dev.(USBReader); !ok || u.USBInfo().PortPath != "0-b" {
			t.Errorf("%s: not a USB reader at port 0-b", target)
		}
		if err := d.Dev.WriteBlocks(context.Background(), 5, make([]byte, 512)); err != nil {
			t.Fatal(err)
		}
		d.Close()
	}
	spec, _ := Parse("usb:0000:0000:b")
	if _, err := readers.KernelDiskNode(context.Background(), spec); !errors.Is(err, ErrNoKernelDisk) {
		t.Errorf("kernel disk of a simulated reader: %v", err)
	}
}

// TestSimBusWatch: a station's look at a bus (the watcher Watch runs
// every interval, here one look at a time, each made once the test's
// change is done and ended once its cards' calls have returned) sees
// readers plugged in and out and cards taken out and put in; each card is
// given once.
func TestSimBusWatch(t *testing.T) {
	dir := t.TempDir()
	card := func(name string) string { return filepath.Join(dir, name+".img") }
	bus, err := ParseReaders("sim:" + dir)
	if err != nil {
		t.Fatal(err)
	}
	type given struct {
		name string
		size int64
	}
	var mu sync.Mutex
	var got []given
	w := &watcher{find: bus.Finder(), opts: WatchOptions{Interval: time.Millisecond}, readers: map[string]*watchedReader{}, refused: map[string]bool{},
		card: func(_ context.Context, d *Device, err error) {
			mu.Lock()
			defer mu.Unlock()
			if err != nil {
				t.Errorf("a reader refused: %v", err)
				return
			}
			got = append(got, given{d.Name, d.Capacity()})
		}}
	ctx := context.Background()
	defer w.stop()
	look := func() []given {
		w.scan(ctx)
		for _, r := range w.readers {
			r.writes.Wait()
		}
		w.calls.Wait()
		mu.Lock()
		defer mu.Unlock()
		g := got
		got = nil
		return g
	}
	a, b := given{"usb:0000:0000:a", 0}, given{"usb:0000:0000:b", 0}
	sized := func(g given, n int64) given { g.size = n; return g }
	for _, s := range []struct {
		name   string
		change func()
		want   []given
	}{
		{name: "nothing plugged in", change: func() {}},
		{name: "a plugged in", change: func() { cardfile.Size(t, card("a"), 1<<20) }, want: []given{sized(a, 1<<20)}},
		{name: "a stays", change: func() {}},
		{name: "b plugged in, its slot empty", change: func() { cardfile.Size(t, card("b"), 0) }},
		{name: "a card into b", change: func() { cardfile.Size(t, card("b"), 2<<20) }, want: []given{sized(b, 2<<20)}},
		{name: "a's card out", change: func() { cardfile.Size(t, card("a"), 0) }},
		{name: "another card into a", change: func() { cardfile.Size(t, card("a"), 3<<20) }, want: []given{sized(a, 3<<20)}},
		{name: "b unplugged", change: func() { os.Remove(card("b")) }},
		{name: "b plugged in again", change: func() { cardfile.Size(t, card("b"), 1<<20) }, want: []given{sized(b, 1<<20)}},
		{name: "a's card file replaced by another", change: func() {
			cardfile.Size(t, filepath.Join(dir, "next"), 4<<20)
			if err := os.Rename(filepath.Join(dir, "next"), card("a")); err != nil {
				t.Fatal(err)
			}
		}, want: []given{sized(a, 4<<20)}},
		{name: "both stay", change: func() {}},
	} {
		s.change()
		if g := look(); !slices.Equal(g, s.want) {
			t.Fatalf("%s: cards %+v given, want %+v", s.name, g, s.want)
		}
	}
}
