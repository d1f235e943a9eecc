package session

import (
	"bytes"
	"context"
	"errors"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/usbflash/usbflash/internal/customize"
	"github.com/usbflash/usbflash/internal/drive"
	"github.com/usbflash/usbflash/internal/failure"
	"github.com/usbflash/usbflash/internal/probe/fakecheck"
	"github.com/usbflash/usbflash/internal/testkit/factsonly"
	"github.com/usbflash/usbflash/internal/testkit/osimage"
)

// inPlace is a disk made at test time for a customisation in place: its
// layout and where its boot partition lies.
type inPlace struct {
	layout              osimage.Layout
	bootStart, bootSize int64
}

// image makes the disk: mkfs.fat's boot partition holding a Raspberry Pi
// OS's boot files, in an MBR or a GPT, and 1 MiB of root partition.
func (p inPlace) image(t *testing.T) []byte {
	t.Helper()
	img, err := osimage.BootableAs(t.TempDir(), p.layout, p.bootStart, p.bootSize, 1<<20, osimage.RaspiosBoot, 3)
	if err != nil {
		t.Fatal(err)
	}
	return img
}

// check reads the card's boot partition with fsck.fat -n and mtools and
// holds it to what a customisation with hostname host writes: firstrun.sh
// setting it, and cmdline.txt starting it once.
func (p inPlace) check(t *testing.T, card []byte, host string) {
	t.Helper()
	dir := t.TempDir()
	path := filepath.Join(dir, "card.img")
	if err := os.WriteFile(path, card, 0o644); err != nil {
		t.Fatal(err)
	}
	got := bootFilesAt(t, path, p.bootStart, p.bootSize, "firstrun.sh", "cmdline.txt")
	if want := "NEW_HOSTNAME='" + host + "'\n"; !strings.Contains(got["firstrun.sh"], want) {
		t.Errorf("firstrun.sh lacks %q", want)
	}
	if n := strings.Count(got["cmdline.txt"], "systemd.run="); n != 1 || !strings.HasPrefix(got["cmdline.txt"], "console=serial0") {
		t.Errorf("cmdline.txt starts firstrun.sh %d times: %q", n, got["cmdline.txt"])
	}
}

// files are the files left in dir.
func files(t *testing.T, dir string) []string {
	t.Helper()
	list, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, e := range list {
		names = append(names, e.Name())
	}
	return names
}

// TestCustomizeInPlace: cards already written (sim:) and image files
// (file:), in an MBR and a GPT, FAT16 and FAT32, the boot partition past
// the first transfer and inside it, customised twice: each time checked by
// fsck.fat and read back by mtools, cmdline.txt edited once, the root
// partition untouched, read back by usbflash, and no file left behind.
func TestCustomizeInPlace(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name   string
		disk   inPlace
		scheme string
	}{
		{"sim card, MBR, FAT32", inPlace{osimage.Layout{FAT: "32"}, 4 << 20, 40 << 20}, "sim:"},
		{"sim card, GPT, FAT16 inside the first transfer", inPlace{osimage.Layout{FAT: "16", GPT: true}, 64 << 10, 16 << 20}, "sim:"},
		{"image file, MBR, FAT16 inside the first transfer", inPlace{osimage.Layout{FAT: "16"}, 64 << 10, 16 << 20}, "file:"},
		{"image file, GPT, FAT32", inPlace{osimage.Layout{FAT: "32", GPT: true}, 4 << 20, 40 << 20}, "file:"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			dir, keep := t.TempDir(), t.TempDir()
			img := tc.disk.image(t)
			card := filepath.Join(dir, "card.img")
			if err := os.WriteFile(card, img, 0o644); err != nil {
				t.Fatal(err)
			}
			spec, err := drive.Parse(tc.scheme + card)
			if err != nil {
				t.Fatal(err)
			}
			rootAt := tc.disk.bootStart + tc.disk.bootSize
			for i, host := range []string{"first-{n}", "second-{n}"} {
				cfg := CustomizeConfig{Customize: customize.Config{Hostname: host, User: "maker"}, Dir: keep}
				res, err := Customize(context.Background(), cfg, []drive.Spec{spec})
				if err != nil {
					t.Fatalf("run %d: %v", i+1, err)
				}
				if len(res) != 1 || res[0].Result.Format != customize.FormatSystemd || res[0].Verify.Bytes < 1<<20 {
					t.Fatalf("run %d: %+v", i+1, res)
				}
				b, err := os.ReadFile(card)
				if err != nil {
					t.Fatal(err)
				}
				tc.disk.check(t, b, strings.ReplaceAll(host, "{n}", "1"))
				if !bytes.Equal(b[rootAt:], img[rootAt:]) {
					t.Errorf("run %d: the root partition changed", i+1)
				}
				if left := files(t, keep); len(left) > 0 {
					t.Errorf("run %d left %v", i+1, left)
				}
			}
		})
	}
}

// TestCustomizeInPlaceRefused: what cannot be customised is refused with
// nothing written: an image whose boot partition says nothing of its
// system, a write-protected card, an image file that does not exist.
func TestCustomizeInPlaceRefused(t *testing.T) {
	t.Parallel()
	disk := inPlace{osimage.Layout{FAT: "16"}, 1 << 20, 16 << 20}
	img := disk.image(t)
	plain, err := osimage.BootableAs(t.TempDir(), disk.layout, disk.bootStart, disk.bootSize, 1<<20, map[string]string{"kernel.img": "k"}, 3)
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name, target string
		card         []byte
		err          error
		class        failure.Class
	}{
		{"unrecognised image", "sim:%s", plain, customize.ErrUnrecognised, failure.Refused},
		{"write-protected", "sim:%s?wp=1", img, nil, failure.Refused},
		{"no such file", "file:%s.missing", img, ErrNoImageFile, failure.Usage},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			dir, keep := t.TempDir(), t.TempDir()
			card := filepath.Join(dir, "card.img")
			if err := os.WriteFile(card, tc.card, 0o644); err != nil {
				t.Fatal(err)
			}
			spec, err := drive.Parse(strings.Replace(tc.target, "%s", card, 1))
			if err != nil {
				t.Fatal(err)
			}
			_, err = Customize(context.Background(), CustomizeConfig{Customize: customize.Config{Hostname: "h"}, Dir: keep}, []drive.Spec{spec})
			if err == nil || (tc.err != nil && !errors.Is(err, tc.err)) || failure.Of(err) != tc.class {
				t.Fatalf("Customize = %v (class %v), want %v", err, failure.Of(err), tc.class)
			}
			factsonly.Check(t, err.Error())
			if b, _ := os.ReadFile(card); !bytes.Equal(b, tc.card) {
				t.Error("the card was written")
			}
			if left := files(t, keep); len(left) > 0 {
				t.Errorf("left %v", left)
			}
		})
	}
}

// TestCustomizeInPlaceInterrupted: a card lost at each step of a
// customisation in place (the sim's reader drops off the bus after a
// number of bytes, found for each step by bisection) is in the state its
// error says: untouched before the first write, its first transfer zeroed
// while the changes are written; and of the two lists it names, the one
// puts back exactly what the card held, the other finishes the
// customisation (fsck.fat, mtools, cmdline.txt edited once). FAT12 in
// a GPT: small cards, many runs. The same
// holds for a cancel (Ctrl-C) before the first write.
func TestCustomizeInPlaceInterrupted(t *testing.T) {
	t.Parallel()
	disk := inPlace{osimage.Layout{FAT: "12", GPT: true}, 1 << 20, 4 << 20}
	img := disk.image(t)
	const first = 128 << 10
	dir := t.TempDir()
	type outcome struct {
		step CustomizeStep // 0: stopped before writing; StepReadBack+1: done
		card []byte
		err  error
		keep string
	}
	run := func(after int64) outcome {
		keep, err := os.MkdirTemp(dir, "keep")
		if err != nil {
			t.Fatal(err)
		}
		card := filepath.Join(keep, "card.img")
		if err := os.WriteFile(card, img, 0o644); err != nil {
			t.Fatal(err)
		}
		spec, err := drive.Parse("sim:" + card + "?fault=disconnect:after=" + strconv.FormatInt(after, 10))
		if err != nil {
			t.Fatal(err)
		}
		cfg := CustomizeConfig{Customize: customize.Config{Hostname: "station", User: "maker"}, TransferSize: first, Dir: keep}
		_, err = Customize(context.Background(), cfg, []drive.Spec{spec})
		o := outcome{err: err, keep: keep, step: StepReadBack + 1}
		var ie *CustomizeInterruptedError
		switch {
		case errors.As(err, &ie):
			o.step = ie.Step
		case err != nil:
			o.step = 0
		}
		if o.card, err = os.ReadFile(card); err != nil {
			t.Fatal(err)
		}
		return o
	}
	// The least number of bytes, in blocks from the previous step's, after
	// which the card is lost in step s or later: the step a loss falls in
	// grows with the bytes moved.
	boundary := func(s CustomizeStep, from int64) int64 {
		lo, hi := from/512, from/512+(4<<20)/512
		for lo < hi {
			mid := (lo + hi) / 2
			if run(mid*512).step >= s {
				hi = mid
			} else {
				lo = mid + 1
			}
		}
		return lo * 512
	}
	var edges []int64
	from := int64(0)
	for s := StepZeroFirst; s <= StepReadBack+1; s++ {
		from = boundary(s, from)
		edges = append(edges, from)
	}
	t.Logf("the card lost after 0, %v bytes: stopped before writing, in each step, not at all", edges)
	putBack := func(card []byte, list string) []byte {
		copyPath := filepath.Join(t.TempDir(), "card.img")
		if err := os.WriteFile(copyPath, card, 0o644); err != nil {
			t.Fatal(err)
		}
		spec, err := drive.Parse("file:" + copyPath)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := fakecheck.PutBack(context.Background(), fakecheck.PutBackConfig{List: list, Target: spec}); err != nil {
			t.Fatalf("restore %s: %v", list, err)
		}
		b, err := os.ReadFile(copyPath)
		if err != nil {
			t.Fatal(err)
		}
		return b
	}
	before := run(edges[0] - 512)
	if before.step != 0 || !bytes.Equal(before.card, img) || len(files(t, before.keep)) != 1 {
		t.Fatalf("lost before the first write: step %d, left %v, %v", before.step, files(t, before.keep), before.err)
	}
	for i, s := range []CustomizeStep{StepZeroFirst, StepChanges, StepFirst, StepReadBack} {
		for _, after := range []int64{edges[i], (edges[i] + edges[i+1]) / 2, edges[i+1] - 512} {
			o := run(after)
			var ie *CustomizeInterruptedError
			if o.step != s || !errors.As(o.err, &ie) {
				t.Fatalf("lost after %d bytes: step %d, want %d: %v", after, o.step, s, o.err)
			}
			factsonly.Check(t, o.err.Error())
			if failure.Of(o.err) != failure.Device || !strings.Contains(o.err.Error(), ie.Undo.Path) || !strings.Contains(o.err.Error(), ie.Finish.Path) {
				t.Errorf("step %d: %v (class %v)", s, o.err, failure.Of(o.err))
			}
			switch s {
			case StepZeroFirst:
				if !bytes.Equal(o.card[first:], img[first:]) {
					t.Errorf("step %d: written past the first transfer", s)
				}
			case StepChanges:
				if !isZeros(o.card[:first]) {
					t.Errorf("step %d: the first transfer is not zeroed", s)
				}
			case StepReadBack:
				disk.check(t, o.card, "station")
			}
			if got := putBack(o.card, ie.Undo.Path); !bytes.Equal(got, img) {
				t.Errorf("step %d, lost after %d bytes: the undo list did not put the card back as it was", s, after)
			}
			disk.check(t, putBack(o.card, ie.Finish.Path), "station")
		}
	}
	done := run(edges[4])
	if done.err != nil || len(files(t, done.keep)) != 1 {
		t.Fatalf("not lost: %v, left %v", done.err, files(t, done.keep))
	}
	disk.check(t, done.card, "station")

	// A cancel before the first write: nothing written, Interrupted.
	ctx, cancel := context.WithCancel(context.Background())
	card := filepath.Join(t.TempDir(), "card.img")
	if err := os.WriteFile(card, img, 0o644); err != nil {
		t.Fatal(err)
	}
	spec, _ := drive.Parse("sim:" + card)
	obs := ObserverFunc(func(e Event) {
		if _, ok := e.(Opened); ok {
			cancel()
		}
	})
	_, err := Customize(ctx, CustomizeConfig{Customize: customize.Config{Hostname: "h", User: "maker"}, Observer: obs, Dir: t.TempDir()}, []drive.Spec{spec})
	if failure.Of(err) != failure.Interrupted {
		t.Errorf("cancelled: %v (class %v)", err, failure.Of(err))
	}
	if b, _ := os.ReadFile(card); !bytes.Equal(b, img) {
		t.Error("cancelled before the first write: the card was written")
	}
}
