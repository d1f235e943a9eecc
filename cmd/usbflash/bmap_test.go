package main

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/usbflash/usbflash/internal/image/bmap"
	"github.com/usbflash/usbflash/internal/testkit/testimage"
)

const mapTransfer = testimage.Transfer // the transfer size of the block map tests

// holeyImage has whole transfers zeroed, so a map or --sparse has
// something to skip.
func holeyImage() []byte { return testimage.Holey() }

// oldCard makes a card of size bytes of 0xA5, so untouched regions show.
func oldCard(t *testing.T, size int) string {
	t.Helper()
	return writeFile(t, "card.img", bytes.Repeat([]byte{0xA5}, size))
}

// makeMap writes our map of img, built the way `read` builds one.
func makeMap(t testing.TB, path string, img []byte) *bmap.Map {
	t.Helper()
	return testimage.WriteMap(t, path, img)
}

// TestBlockMapCommand: what write and verify say about block maps and
// sparse writes, and their exit codes; what reaches the card is flash's
// (flash.TestRunBlockMap). The map is named first, a write that skips
// says the skipped regions keep the card's old bytes, a map that does not
// fit is a refusal naming it, an image that does not match its map an
// image error naming the range, the choices that contradict each other
// (or a map for several cards) usage errors; verify finds the map as write
// does, and without it reports another image's data, not a fake card.
func TestBlockMapCommand(t *testing.T) {
	t.Parallel()
	img := holeyImage()
	dir := t.TempDir()
	image := filepath.Join(dir, "os.img")
	if err := os.WriteFile(image, img, 0o644); err != nil {
		t.Fatal(err)
	}
	beside := image + ".bmap"
	makeMap(t, beside, img)
	given := filepath.Join(dir, "given.bmap")
	makeMap(t, given, img)
	garbled := filepath.Join(dir, "garbled.bmap")
	if err := os.WriteFile(garbled, []byte("<bmap version=\"2.0\"><ImageSize>12"), 0o644); err != nil {
		t.Fatal(err)
	}
	// An image that differs from its map in chunk 15.
	bad := bytes.Clone(img)
	bad[15*mapTransfer+5000] ^= 1
	badImage := filepath.Join(t.TempDir(), "os.img.zst")
	if err := os.WriteFile(badImage, compress(t, "zstd", bad), 0o644); err != nil {
		t.Fatal(err)
	}
	makeMap(t, strings.TrimSuffix(badImage, ".zst")+".bmap", img)
	for _, tc := range []struct {
		name   string
		args   []string // before the image; IMAGE stands for it
		cards  int
		code   int
		first  string   // the first line of stdout
		stdout []string // each in stdout
		stderr string
	}{
		{name: "a map beside the image", cards: 1, code: exitOK, first: "Block map " + beside,
			stdout: []string{"Verified", "keep the card's old bytes"}},
		{name: "a map given, JSON", args: []string{"--json", "--bmap", given}, cards: 1, code: exitOK,
			first: `"event":"block_map"`, stdout: []string{`"bmap":"` + given + `"`, `"verify":"xxh3 per transfer"`, `"skipped_bytes":`}},
		{name: "sparse", args: []string{"--no-bmap", "--sparse"}, cards: 1, code: exitOK, first: "keep the card's old bytes"},
		{name: "no map", args: []string{"--no-bmap"}, cards: 1, code: exitOK, stdout: []string{"Verified"}},
		{name: "a map that does not fit", args: []string{"--bmap", garbled}, cards: 1, code: exitRefused, stderr: garbled},
		{name: "an image that does not match its map", args: []string{"IMAGE", badImage}, cards: 1, code: exitSource, stderr: "range "},
		{name: "bmap and no-bmap", args: []string{"--bmap", beside, "--no-bmap"}, cards: 1, code: exitUsage},
		{name: "bmap and sparse", args: []string{"--bmap", beside, "--sparse"}, cards: 1, code: exitUsage},
		{name: "bmap, two targets", args: []string{"--bmap", beside}, cards: 2, code: exitUsage},
		{name: "sparse, two targets", args: []string{"--sparse"}, cards: 2, code: exitUsage},
		{name: "sparse, one target with --report", args: []string{"--sparse", "--report", filepath.Join(dir, "r.json")}, cards: 1, code: exitUsage},
		{name: "a map beside the image, two targets", cards: 2, code: exitOK,
			stdout: []string{"TARGET", "Block map " + beside + " is not used: several cards"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			args, img := []string{"write", "--yes", "--transfer-size", "64KiB"}, image
			if len(tc.args) == 2 && tc.args[0] == "IMAGE" {
				img = tc.args[1]
			} else {
				args = append(args, tc.args...)
			}
			args = append(args, img)
			for range tc.cards {
				args = append(args, "sim:"+oldCard(t, 4<<20))
			}
			r := runCLI(t, args...)
			if r.code != tc.code || !strings.Contains(r.stderr, tc.stderr) {
				t.Fatalf("exit %d, want %d saying %q\nstdout: %s\nstderr: %s", r.code, tc.code, tc.stderr, r.stdout, r.stderr)
			}
			if first, _, _ := strings.Cut(r.stdout, "\n"); !strings.Contains(first, tc.first) {
				t.Errorf("the first line %q does not say %q", first, tc.first)
			}
			for _, s := range tc.stdout {
				if !strings.Contains(r.stdout, s) {
					t.Errorf("stdout does not say %q:\n%s", s, r.stdout)
				}
			}
			if tc.code == exitOK && (tc.name == "no map" && strings.Contains(r.stdout, "Block map") || tc.cards > 1 && strings.Contains(r.stdout, "only those are written")) {
				t.Errorf("a write without a map says it uses one:\n%s", r.stdout)
			}
		})
	}
	card := oldCard(t, 4<<20)
	if r := runCLI(t, "write", "--yes", "--transfer-size", "64KiB", image, "sim:"+card); r.code != exitOK {
		t.Fatalf("write: exit %d\n%s", r.code, r.stderr)
	}
	r := runCLI(t, "verify", image, "sim:"+card)
	if r.code != exitOK || !strings.Contains(r.stdout, "Block map "+beside) {
		t.Errorf("verify: exit %d\nstdout: %s\nstderr: %s", r.code, r.stdout, r.stderr)
	}
	r = runCLI(t, "verify", "--no-bmap", image, "sim:"+card)
	if r.code != exitVerify || strings.Contains(r.stderr, "fake") || !strings.Contains(r.stderr, "something other than this image") {
		t.Errorf("verify --no-bmap: exit %d, stderr %s", r.code, r.stderr)
	}
}
