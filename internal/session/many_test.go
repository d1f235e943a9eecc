package session

import (
	"bytes"
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/usbflash/usbflash/internal/drive"
	"github.com/usbflash/usbflash/internal/failure"
	"github.com/usbflash/usbflash/internal/image"
	"github.com/usbflash/usbflash/internal/testkit/simcards"
	"github.com/usbflash/usbflash/internal/testkit/testimage"
	"github.com/usbflash/usbflash/internal/testkit/testpattern"
	"github.com/usbflash/usbflash/pipeline/blockdev"
)

// simSpecs parses sim: targets of cards in dir ("name.img?options").
func simSpecs(t *testing.T, dir string, cards ...string) []drive.Spec {
	return simcards.Specs(t, dir, cards...)
}

// TestRunMany: one image onto several cards. A card that fails while
// written drops out alone, named in its outcome and the report, the
// others written and verified (in lockstep and with a lag); a refusal
// refuses every card before the first byte unless SkipRefused; the slots
// of one reader are written over one open of it.
func TestRunMany(t *testing.T) {
	t.Parallel()
	failing := []string{
		"fast.img?size=8MiB",
		"slow.img?size=8MiB&speed=30MB/s",
		"bad.img?size=8MiB&fault=medium-error:lba=3000,persistent",
		"unplugged.img?size=8MiB&fault=disconnect:after=1MiB",
		"latency.img?size=8MiB&latency=1ms",
	}
	refusing := []string{"a.img?size=8MiB", "b.img?size=8MiB", "wp.img?size=8MiB&wp=1"}
	for _, tc := range []struct {
		name        string
		size        int      // image bytes
		cards       []string // in dir
		old         bool     // the cards hold 0xA5 bytes before the run
		lag         int
		skipRefused bool
		fails       []bool           // per card: its outcome has an error
		err         func(error) bool // the session's error
		changed     bool             // the cards that do not fail hold the image
	}{
		{name: "failures drop out alone, lockstep", size: 3<<20 + 777, cards: failing, lag: 0,
			fails: []bool{false, false, true, true, false}, err: isCards(3, 2), changed: true},
		{name: "failures drop out alone, lag 8", size: 3<<20 + 777, cards: failing, lag: 8,
			fails: []bool{false, false, true, true, false}, err: isCards(3, 2), changed: true},
		{name: "a refusal refuses every card", size: 1<<20 + 3, cards: refusing, old: true,
			fails: []bool{true, true, true}, err: isRefused, changed: false},
		{name: "skip refused writes the others", size: 1<<20 + 3, cards: refusing, old: true, skipRefused: true,
			fails: []bool{false, false, true}, err: isCards(2, 1), changed: true},
		{name: "all succeed", size: 2<<20 + 5, cards: []string{"a.img?size=8MiB", "b.img?size=8MiB&block=512&speed=50MB/s", "c.img?size=8MiB"},
			fails: []bool{false, false, false}, err: func(err error) bool { return err == nil }, changed: true},
		{name: "slots of one reader", size: 2<<20 + 9, cards: []string{"two.img?luns=2&lun=0", "two.img?luns=2&lun=1"}, old: true,
			fails: []bool{false, false}, err: func(err error) bool { return err == nil }, changed: true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			dir := t.TempDir()
			imagePath, img := testimage.File(t, dir, tc.size)
			paths := make([]string, len(tc.cards))
			for i, c := range tc.cards {
				name, opts, _ := strings.Cut(c, "?")
				paths[i] = filepath.Join(dir, name)
				if strings.Contains(opts, "lun=1") {
					paths[i] += ".lun1"
				}
				if tc.old {
					if err := os.WriteFile(paths[i], bytes.Repeat([]byte{0xA5}, 8<<20), 0o644); err != nil {
						t.Fatal(err)
					}
				}
			}
			report := &MemReport{}
			res, err := Run(context.Background(), Config{Image: image.Ref{Path: imagePath}, Targets: Targets{SkipRefused: tc.skipRefused}, Engine: Engine{TransferSize: 1 << 20, Buffers: 4, Lag: tc.lag, Verify: true}, Output: Output{Report: report}}, simSpecs(t, dir, tc.cards...))
			if !tc.err(err) {
				t.Fatalf("Run: %v (%T)", err, err)
			}
			for i, p := range paths {
				if got := testimage.Holds(p, img); got != (tc.changed && !tc.fails[i]) {
					t.Errorf("%s holds the image: %v", tc.cards[i], got)
				}
				if b, _ := os.ReadFile(p); !tc.changed && !bytes.Equal(b, bytes.Repeat([]byte{0xA5}, 8<<20)) {
					t.Errorf("%s was changed although the write was refused", tc.cards[i])
				}
			}
			if errors.As(err, new(*RefusedError)) {
				if !errors.Is(err, blockdev.ErrWriteProtected) {
					t.Errorf("the refusal %v does not say write-protected", err)
				}
				return
			}
			byTarget := map[string]*Outcome{}
			for _, o := range res.Cards {
				byTarget[o.Target] = o
			}
			cards := report.Records()
			if len(cards) != len(tc.cards) {
				t.Fatalf("report: %d cards", len(cards))
			}
			records := map[string]Record{}
			for _, r := range cards {
				records[r.Target] = r
			}
			for i, c := range tc.cards {
				target := "sim:" + filepath.Join(dir, strings.Split(c, "?")[0])
				if strings.Contains(c, "luns=2") {
					target += "/" + c[len(c)-1:]
				}
				o, r := byTarget[target], records[target]
				if o == nil {
					t.Errorf("no outcome for %s among %v", target, byTarget)
					continue
				}
				if (o.Err != nil) != tc.fails[i] || o.Verified() == tc.fails[i] {
					t.Errorf("%s: %v, verified %v", target, o.Err, o.Verified())
				}
				if (r.Error != "") != tc.fails[i] || r.Verified == tc.fails[i] || r.Capacity != 8<<20 {
					t.Errorf("report for %s: %+v", target, r)
				}
				if strings.Contains(c, "medium-error") && !strings.Contains(r.Error, "LBA") {
					t.Errorf("the medium error names no LBA: %q", r.Error)
				}
			}
		})
	}
	// A reader whose slots are named once with and once without one.
	dir := t.TempDir()
	imagePath, _ := testimage.File(t, dir, 1<<20)
	if _, err := Run(context.Background(), Config{Image: image.Ref{Path: imagePath}, Engine: Engine{TransferSize: 1 << 20, Buffers: 4}},
		simSpecs(t, dir, "two.img?size=8MiB&luns=2", "two.img?size=8MiB&luns=2&lun=1")); failure.Of(err) != failure.Usage {
		t.Errorf("a slot left unnamed: %v, want a usage error", err)
	}
	// Several file: targets that do not exist are made at the size the
	// image states (an xz file's index), in whole blocks, as one is.
	xzImage := filepath.Join(dir, "os.img.xz")
	img := testpattern.Bytes(2<<20+99, 7)
	if err := os.WriteFile(xzImage, testimage.Compress(t, "xz", img), 0o644); err != nil {
		t.Fatal(err)
	}
	var files []drive.Spec
	for _, name := range []string{"a.img", "b.img"} {
		spec, err := drive.Parse("file:" + filepath.Join(dir, name))
		if err != nil {
			t.Fatal(err)
		}
		files = append(files, spec)
	}
	if _, err := Run(context.Background(), Config{Image: image.Ref{Path: xzImage}, Engine: Engine{Verify: true}}, files); err != nil {
		t.Fatalf("new file: targets: %v", err)
	}
	for _, name := range []string{"a.img", "b.img"} {
		p := filepath.Join(dir, name)
		if got, err := os.ReadFile(p); err != nil || len(got) != (len(img)+511)/512*512 || !testimage.Holds(p, img) {
			t.Errorf("%s: %d bytes, holds the image %v (%v)", name, len(got), testimage.Holds(p, img), err)
		}
	}
}

// isCards says an error is a *CardsError of that many cards.
func isCards(succeeded, failed int) func(error) bool {
	return func(err error) bool {
		var ce *CardsError
		return errors.As(err, &ce) && ce.Succeeded == succeeded && ce.Failed == failed
	}
}

func isRefused(err error) bool { return errors.As(err, new(*RefusedError)) }
