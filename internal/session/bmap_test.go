package session

import (
	"bytes"
	"context"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"testing"

	"github.com/usbflash/usbflash/internal/drive"
	"github.com/usbflash/usbflash/internal/image"
	"github.com/usbflash/usbflash/internal/image/bmap"
	"github.com/usbflash/usbflash/internal/testkit/testimage"
)

const mapTransfer = testimage.Transfer // the transfer size of the block map tests

// bmaptoolMap makes the zeros of img holes in a file and maps it with
// `bmaptool create` into path.
func bmaptoolMap(t *testing.T, path string, img []byte) *bmap.Map {
	t.Helper()
	if _, err := exec.LookPath("bmaptool"); err != nil {
		t.Fatal("bmaptool is needed to prove compatibility with it: apt-get install bmap-tools")
	}
	dir := t.TempDir()
	raw, sparse := filepath.Join(dir, "raw.img"), filepath.Join(dir, "sparse.img")
	if err := os.WriteFile(raw, img, 0o644); err != nil {
		t.Fatal(err)
	}
	// bmaptool maps what the file system allocated.
	for _, args := range [][]string{{"cp", "--sparse=always", raw, sparse}, {"bmaptool", "create", "-o", path, sparse}} {
		if out, err := exec.Command(args[0], args[1:]...).CombinedOutput(); err != nil {
			t.Fatalf("%s: %v\n%s", strings.Join(args, " "), err, out)
		}
	}
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	m, err := bmap.Parse(data)
	if err != nil {
		t.Fatal(err)
	}
	if m.MappedBytes() >= int64(len(img))*9/10 {
		t.Fatalf("bmaptool mapped %d of %d bytes: the holes were not made", m.MappedBytes(), len(img))
	}
	return m
}

// oldCards are cards of 4 MiB of 0xA5, so untouched regions show.
func oldCards(t *testing.T, dir string, n int) []string {
	t.Helper()
	var paths []string
	for i := range n {
		p := filepath.Join(dir, "card"+string(rune('0'+i))+".img")
		if err := os.WriteFile(p, bytes.Repeat([]byte{0xA5}, 4<<20), 0o644); err != nil {
			t.Fatal(err)
		}
		paths = append(paths, p)
	}
	return paths
}

// checkMapped: the first transfer and every mapped block hold the image;
// blocks that are not mapped hold the image (a short gap, written through)
// or the old bytes, and transfers without a mapped byte the old bytes.
func checkMapped(t *testing.T, card string, img []byte, mapped func(off, n int64) bool) {
	t.Helper()
	got, err := os.ReadFile(card)
	if err != nil {
		t.Fatal(err)
	}
	for off := 0; off < len(img); off += 4096 {
		end := min(off+4096, len(img))
		same, old := bytes.Equal(got[off:end], img[off:end]), bytes.Count(got[off:end], []byte{0xA5}) == end-off
		tr := off / mapTransfer * mapTransfer
		switch {
		case (off < mapTransfer || mapped(int64(off), int64(end-off))) && !same:
			t.Errorf("block at %d: not the image's bytes", off)
		case !same && !old:
			t.Errorf("block at %d is neither the image's nor the old bytes", off)
		case !mapped(int64(tr), int64(min(tr+mapTransfer, len(img))-tr)) && tr > 0 && !old:
			t.Errorf("block at %d: no byte of its transfer is mapped, but it was written", off)
		}
	}
}

// TestRunBlockMap: a block map found beside the image (bmaptool's, next
// to the compressed image) or given writes and verifies only the mapped
// transfers; a sparse write skips the zeros; without a map, with a map
// turned off, or to several cards every byte is written; a map that does
// not fit the image refuses the write before anything is written; an
// image that does not match its map stops before the transfer holding the
// bad range's end, the first transfer left zeroed.
func TestRunBlockMap(t *testing.T) {
	t.Parallel()
	img := testimage.Holey()
	chksum := regexp.MustCompile(`chksum="[0-9a-f]{64}"`)
	sparse := func(off, n int64) bool { return !bytes.Equal(img[off:off+n], make([]byte, n)) }
	// Written by a map of img: the first transfer, and the 16 KiB of data
	// in each of the 20 other transfers that hold any (pieces never reach
	// across a transfer's edge, so the zeros around them stay out).
	mapSkips := int64(len(img) - mapTransfer - 20*16<<10)
	for _, tc := range []struct {
		name   string
		format string // the image file's: "" raw
		// setup writes the map (or not) beside image, returning the
		// choice and what it maps (nil: every byte is written).
		setup   func(t *testing.T, imagePath string) (BlockMapChoice, func(off, n int64) bool)
		cards   int
		bad     bool   // the image differs from its map at chunk 15
		err     string // the error must say this (and name the map)
		skipped int64  // -1: any above 0
		// note: a note says the map beside the image is not used (and
		// no other row says it)
		note bool
	}{
		{name: "bmaptool's map beside the compressed image", format: "xz", cards: 1, skipped: -1,
			setup: func(t *testing.T, imagePath string) (BlockMapChoice, func(off, n int64) bool) {
				return BlockMapChoice{}, bmaptoolMap(t, filepath.Join(filepath.Dir(imagePath), "os.img.bmap"), img).Mapped
			}},
		{name: "our map given", cards: 1, skipped: mapSkips,
			setup: func(t *testing.T, imagePath string) (BlockMapChoice, func(off, n int64) bool) {
				p := filepath.Join(t.TempDir(), "explicit.bmap")
				return BlockMapChoice{Path: p}, testimage.WriteMap(t, p, img).Mapped
			}},
		{name: "sparse", format: "gzip", cards: 1, skipped: -1,
			setup: func(t *testing.T, imagePath string) (BlockMapChoice, func(off, n int64) bool) {
				return BlockMapChoice{Sparse: true}, sparse
			}},
		{name: "a map beside the image turned off", cards: 1,
			setup: func(t *testing.T, imagePath string) (BlockMapChoice, func(off, n int64) bool) {
				testimage.WriteMap(t, imagePath+".bmap", img)
				return BlockMapChoice{Off: true}, nil
			}},
		{name: "a map beside the image, two cards", cards: 2, note: true,
			setup: func(t *testing.T, imagePath string) (BlockMapChoice, func(off, n int64) bool) {
				testimage.WriteMap(t, imagePath+".bmap", img)
				return BlockMapChoice{}, nil
			}},
		{name: "garbage XML", cards: 1, err: "not a bmap XML file", setup: badMap(img, func(t *testing.T, good []byte) []byte {
			return []byte("<bmap version=\"2.0\"><ImageSize>12")
		})},
		{name: "unknown version", cards: 1, err: "newer than this usbflash", setup: badMap(img, func(t *testing.T, good []byte) []byte {
			return bytes.Replace(good, []byte(`version="2.0"`), []byte(`version="3.1"`), 1)
		})},
		{name: "map larger than the image", cards: 1, err: "the map is for an image of 2106344 bytes but the image has 2098152",
			setup: func(t *testing.T, imagePath string) (BlockMapChoice, func(off, n int64) bool) {
				testimage.WriteMap(t, imagePath+".bmap", append(bytes.Clone(img), make([]byte, 8192)...))
				return BlockMapChoice{}, nil
			}},
		{name: "overlapping ranges", cards: 1, err: "overlaps", setup: badMap(img, func(t *testing.T, good []byte) []byte {
			return regexp.MustCompile(`> 0-\d+ <`).ReplaceAll(good, []byte("> 0-200 <"))
		})},
		{name: "range checksum changed in the map", cards: 1, err: "altered or damaged", setup: badMap(img, func(t *testing.T, good []byte) []byte {
			return chksum.ReplaceAll(good, []byte(`chksum="`+strings.Repeat("1", 64)+`"`))
		})},
		{name: "the image differs from its map", format: "zstd", cards: 1, bad: true, err: "range ",
			setup: func(t *testing.T, imagePath string) (BlockMapChoice, func(off, n int64) bool) {
				return BlockMapChoice{}, testimage.WriteMap(t, filepath.Join(filepath.Dir(imagePath), "os.img.bmap"), img).Mapped
			}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			dir := t.TempDir()
			imagePath := filepath.Join(dir, "os.img")
			data := bytes.Clone(img)
			if tc.bad {
				data[15*mapTransfer+5000] ^= 1
			}
			if tc.format != "" {
				imagePath += map[string]string{"gzip": ".gz", "xz": ".xz", "zstd": ".zst"}[tc.format]
				data = testimage.Compress(t, tc.format, data)
			}
			if err := os.WriteFile(imagePath, data, 0o644); err != nil {
				t.Fatal(err)
			}
			choice, mapped := tc.setup(t, imagePath)
			cards := oldCards(t, dir, tc.cards)
			var specs []drive.Spec
			for _, c := range cards {
				specs = append(specs, simSpecs(t, "", c)...)
			}
			var (
				mu     sync.Mutex // the session's goroutines report
				chosen []BlockMapChosen
				notes  []string
			)
			obs := ObserverFunc(func(e Event) {
				mu.Lock()
				defer mu.Unlock()
				switch e := e.(type) {
				case BlockMapChosen:
					chosen = append(chosen, e)
				case Note:
					notes = append(notes, e.Message)
				}
			})
			res, err := Run(context.Background(), Config{Image: image.Ref{Path: imagePath}, Engine: Engine{TransferSize: mapTransfer, Buffers: 4, Verify: true, BlockMap: choice}, Output: Output{Observer: obs}}, specs)
			if tc.err != "" {
				checkMapRefusal(t, tc.bad, err, tc.err, cards[0], img)
				return
			}
			if err != nil || len(res.Cards) != tc.cards {
				t.Fatalf("Run: %v, %d cards", err, len(res.Cards))
			}
			mu.Lock()
			defer mu.Unlock()
			if usesMap := mapped != nil && !choice.Sparse; usesMap != (len(chosen) == 1) {
				t.Errorf("block map events %+v, want one: %v", chosen, usesMap)
			} else if usesMap && (chosen[0].Path == "" || !strings.HasSuffix(chosen[0].Path, ".bmap")) {
				t.Errorf("the block map event names %q", chosen[0].Path)
			}
			if said := strings.Contains(strings.Join(notes, "\n"), "os.img.bmap is not used: several cards"); said != tc.note {
				t.Errorf("the map beside the image said unused %v, want %v: %q", said, tc.note, notes)
			}
			if choice.Sparse && !strings.Contains(strings.Join(notes, "\n"), "keep the card's old bytes") {
				t.Errorf("a sparse write does not say the zeros keep the old bytes: %q", notes)
			}
			for i, o := range res.Cards {
				if !o.Verified() || o.Verify.Method != 0 || o.Write.SHA256 != ([32]byte{}) {
					t.Errorf("card %d: verified %v by %v", i, o.Verified(), o.Verify)
				}
				switch {
				case mapped == nil && (o.Skipped != 0 || !testimage.Holds(cards[i], img)):
					t.Errorf("card %d: %d bytes skipped, the whole image written %v", i, o.Skipped, testimage.Holds(cards[i], img))
				case mapped != nil && (tc.skipped == -1 && o.Skipped <= 0 || tc.skipped >= 0 && o.Skipped != tc.skipped || o.SkippedWhy == ""):
					t.Errorf("card %d: %d bytes skipped (%s), want %d", i, o.Skipped, o.SkippedWhy, tc.skipped)
				case mapped != nil:
					checkMapped(t, cards[i], img, mapped)
				}
			}
		})
	}
	// The choices that contradict each other, and a map or a sparse write
	// for several cards, are refused before any card is opened.
	dir := t.TempDir()
	imagePath, _ := testimage.File(t, dir, 1<<20)
	cards := oldCards(t, dir, 2)
	for _, tc := range []struct {
		choice BlockMapChoice
		cards  int
		want   error
	}{
		{BlockMapChoice{Path: imagePath + ".bmap", Off: true}, 1, ErrBlockMapConflict},
		{BlockMapChoice{Path: imagePath + ".bmap", Sparse: true}, 1, ErrBlockMapConflict},
		{BlockMapChoice{Path: imagePath + ".bmap"}, 2, ErrBlockMapOneCard},
		{BlockMapChoice{Sparse: true}, 2, ErrBlockMapOneCard},
	} {
		if _, err := Run(context.Background(), Config{Image: image.Ref{Path: imagePath}, Engine: Engine{TransferSize: mapTransfer, Buffers: 4, BlockMap: tc.choice}},
			simSpecs(t, "", cards[:tc.cards]...)); !errors.Is(err, tc.want) {
			t.Errorf("%+v to %d cards: %v, want %v", tc.choice, tc.cards, err, tc.want)
		}
	}
	for _, c := range cards {
		if b, _ := os.ReadFile(c); !bytes.Equal(b, bytes.Repeat([]byte{0xA5}, 4<<20)) {
			t.Errorf("%s was changed by a refused write", c)
		}
	}
}

// badMap writes beside the image a map of img that edit spoils.
func badMap(img []byte, edit func(t *testing.T, good []byte) []byte) func(t *testing.T, imagePath string) (BlockMapChoice, func(off, n int64) bool) {
	return func(t *testing.T, imagePath string) (BlockMapChoice, func(off, n int64) bool) {
		p := filepath.Join(t.TempDir(), "good.bmap")
		testimage.WriteMap(t, p, img)
		good, err := os.ReadFile(p)
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(imagePath+".bmap", edit(t, good), 0o644); err != nil {
			t.Fatal(err)
		}
		return BlockMapChoice{}, nil
	}
}

// checkMapRefusal: a map that does not fit refuses the write with a
// *image.BlockMapError naming the map, the card untouched; an image that does
// not match its map names the range, which is not written, nor is the
// first transfer.
func checkMapRefusal(t *testing.T, bad bool, err error, want, card string, img []byte) {
	t.Helper()
	if err == nil || !strings.Contains(err.Error(), want) {
		t.Fatalf("Run: %v, want an error saying %q", err, want)
	}
	got, rerr := os.ReadFile(card)
	if rerr != nil {
		t.Fatal(rerr)
	}
	if !bad {
		var be *image.BlockMapError
		if !errors.As(err, &be) || !strings.HasSuffix(be.Path, ".bmap") || !strings.Contains(err.Error(), be.Path) {
			t.Errorf("Run: %v, want a *image.BlockMapError naming the map", err)
		}
		if !bytes.Equal(got, bytes.Repeat([]byte{0xA5}, 4<<20)) {
			t.Error("the card was changed")
		}
		return
	}
	m, perr := bmap.Parse(mustRead(t, filepath.Join(filepath.Dir(card), "os.img.bmap")))
	if perr != nil {
		t.Fatal(perr)
	}
	for _, rg := range m.Ranges {
		if off, end := m.Bytes(rg); off <= 15*mapTransfer+5000 && 15*mapTransfer+5000 < end {
			if !strings.Contains(err.Error(), "range "+rg.String()) {
				t.Errorf("Run: %v, want the range %s named", err, rg)
			}
			if bytes.Count(got[off:end], []byte{0xA5}) != int(end-off) {
				t.Errorf("the bad range %s (bytes %d-%d) was written", rg, off, end)
			}
		}
	}
	if bytes.Count(got[:mapTransfer], []byte{0}) != mapTransfer {
		t.Error("the first transfer is not left zeroed")
	}
}

func mustRead(t *testing.T, path string) []byte {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return b
}
