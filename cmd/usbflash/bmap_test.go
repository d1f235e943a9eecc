package main

import (
	"bytes"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/usbflash/usbflash/bmap"
)

const mapTransfer = 64 << 10 // the transfer size of the block map tests

// holeyImage is testImage with whole transfers zeroed: chunks 3-6, 10 and
// 20-25 of 64 KiB, so a map or --sparse has something to skip.
func holeyImage() []byte {
	img := testImage(2<<20 + 1000)
	for _, c := range []int{3, 4, 5, 6, 10, 20, 21, 22, 23, 24, 25} {
		clear(img[c*mapTransfer : (c+1)*mapTransfer])
	}
	return img
}

// oldCard makes a card of size bytes of 0xA5, so untouched regions show.
func oldCard(t *testing.T, size int) string {
	t.Helper()
	return writeFile(t, "card.img", bytes.Repeat([]byte{0xA5}, size))
}

// makeMap writes our map of img, built the way `read` builds one.
func makeMap(t testing.TB, path string, img []byte) *bmap.Map {
	t.Helper()
	b := bmap.NewBuilder(0)
	b.Write(img)
	m := b.Map()
	data, err := bmap.Marshal(m)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, data, 0o644); err != nil {
		t.Fatal(err)
	}
	return m
}

// checkCard: the first transfer and every mapped block hold the image;
// blocks that are not mapped hold the image (a short gap, written through)
// or the old bytes, and transfers without a mapped byte the old bytes.
func checkCard(t *testing.T, card string, img []byte, mapped func(off, n int64) bool) {
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

// TestWriteWithBmaptoolMap: a map made by `bmaptool create` is found next
// to the compressed image, named in the first line, and only the mapped
// transfers are written and read back.
func TestWriteWithBmaptoolMap(t *testing.T) {
	t.Parallel()
	if _, err := exec.LookPath("bmaptool"); err != nil {
		t.Fatal("bmaptool is needed to prove compatibility with it: apt-get install bmap-tools")
	}
	img := holeyImage()
	dir := t.TempDir()
	raw := filepath.Join(dir, "os.img")
	if err := os.WriteFile(raw, img, 0o644); err != nil {
		t.Fatal(err)
	}
	// bmaptool maps what the file system allocated: make the zeros holes.
	sparse := filepath.Join(dir, "sparse.img")
	for _, args := range [][]string{
		{"cp", "--sparse=always", raw, sparse},
		{"bmaptool", "create", "-o", filepath.Join(dir, "os.img.bmap"), sparse},
	} {
		if out, err := exec.Command(args[0], args[1:]...).CombinedOutput(); err != nil {
			t.Fatalf("%s: %v\n%s", strings.Join(args, " "), err, out)
		}
	}
	data, err := os.ReadFile(filepath.Join(dir, "os.img.bmap"))
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
	image := filepath.Join(dir, "os.img.xz")
	if err := os.WriteFile(image, compress(t, "xz", img), 0o644); err != nil {
		t.Fatal(err)
	}
	card := oldCard(t, 4<<20)
	r := runCLI(t, "write", "--yes", "--transfer-size", "64KiB", image, "sim:"+card)
	if r.code != exitOK {
		t.Fatalf("exit %d\nstdout: %s\nstderr: %s", r.code, r.stdout, r.stderr)
	}
	first, _, _ := strings.Cut(r.stdout, "\n")
	if !strings.Contains(first, "Block map "+filepath.Join(dir, "os.img.bmap")) {
		t.Errorf("first line %q does not name the map", first)
	}
	for _, want := range []string{"Verified", "keep the card's old bytes"} {
		if !strings.Contains(r.stdout, want) {
			t.Errorf("output does not say %q:\n%s", want, r.stdout)
		}
	}
	checkCard(t, card, img, m.Mapped)
}

func TestWriteWithOurMapJSON(t *testing.T) {
	t.Parallel()
	img := holeyImage()
	image := writeFile(t, "os.img", img)
	mapPath := filepath.Join(t.TempDir(), "explicit.bmap")
	m := makeMap(t, mapPath, img)
	card := oldCard(t, 4<<20)
	r := runCLI(t, "write", "--yes", "--json", "--transfer-size", "64KiB", "--bmap", mapPath, image, "sim:"+card)
	if r.code != exitOK {
		t.Fatalf("exit %d\nstdout: %s\nstderr: %s", r.code, r.stdout, r.stderr)
	}
	events := jsonEvents(t, r.stdout)
	if events[0]["event"] != "block_map" || events[0]["bmap"] != mapPath {
		t.Errorf("first event %v does not name the map", events[0])
	}
	sum := lastEvent(t, r.stdout, "summary")
	// Written: the first transfer, and the 16 KiB of data in each of the
	// 20 other transfers that are not zero (pieces never reach across a
	// transfer's edge, so the zeros around them stay out).
	wantSkipped := len(img) - mapTransfer - 20*16<<10
	if sum["verified"] != true || sum["verify"] != "xxh3 per transfer" || sum["sha256"] != nil || sum["skipped_bytes"] != float64(wantSkipped) {
		t.Errorf("summary %v: want verified by the digests (no sha256) and %d bytes skipped", sum, wantSkipped)
	}
	checkCard(t, card, img, m.Mapped)
}

// TestWriteRefusesMapsThatDoNotFit: nothing is written, and the message
// names what is wrong.
func TestWriteRefusesMapsThatDoNotFit(t *testing.T) {
	t.Parallel()
	img := holeyImage()
	good := func(t *testing.T) []byte {
		p := filepath.Join(t.TempDir(), "m.bmap")
		makeMap(t, p, img)
		data, _ := os.ReadFile(p)
		return data
	}
	larger := func(t *testing.T) []byte {
		p := filepath.Join(t.TempDir(), "m.bmap")
		makeMap(t, p, append(bytes.Clone(img), make([]byte, 8192)...))
		data, _ := os.ReadFile(p)
		return data
	}
	chksum := regexp.MustCompile(`chksum="[0-9a-f]{64}"`)
	for _, tc := range []struct {
		name string
		data func(t *testing.T) []byte
		want string
	}{
		{"garbage XML", func(*testing.T) []byte { return []byte("<bmap version=\"2.0\"><ImageSize>12") }, "not a bmap XML file"},
		{"unknown version", func(t *testing.T) []byte {
			return bytes.Replace(good(t), []byte(`version="2.0"`), []byte(`version="3.1"`), 1)
		}, "newer than this usbflash"},
		{"map larger than the image", larger, "the map is for an image of 2106344 bytes but the image has 2098152"},
		{"overlapping ranges", func(t *testing.T) []byte {
			return regexp.MustCompile(`> 0-\d+ <`).ReplaceAll(good(t), []byte("> 0-200 <"))
		}, "overlaps"},
		{"range checksum changed in the map", func(t *testing.T) []byte {
			return chksum.ReplaceAll(good(t), []byte(`chksum="`+strings.Repeat("1", 64)+`"`))
		}, "altered or damaged"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			image := writeFile(t, "os.img", img)
			if err := os.WriteFile(image+".bmap", tc.data(t), 0o644); err != nil {
				t.Fatal(err)
			}
			card := oldCard(t, 4<<20)
			before := fileHash(t, card)
			r := runCLI(t, "write", "--yes", "--transfer-size", "64KiB", image, "sim:"+card)
			if r.code != exitRefused || !strings.Contains(r.stderr, tc.want) || !strings.Contains(r.stderr, image+".bmap") {
				t.Fatalf("exit %d, want %d and a message naming the map and %q\nstderr: %s", r.code, exitRefused, tc.want, r.stderr)
			}
			if fileHash(t, card) != before {
				t.Error("the card was changed")
			}
		})
	}
}

// TestWriteStopsAtABadRange: an image that does not match its (intact)
// map stops with exit 4 naming the range; the transfer holding the end of
// the bad range is never written, nor is the first transfer.
func TestWriteStopsAtABadRange(t *testing.T) {
	t.Parallel()
	img := holeyImage()
	image := writeFile(t, "os.img.zst", compress(t, "zstd", img))
	m := makeMap(t, strings.TrimSuffix(image, ".zst")+".bmap", holeyImage())
	// The image on disk differs from the one the map was made from in the
	// range holding chunk 15.
	bad := bytes.Clone(img)
	bad[15*mapTransfer+5000] ^= 1
	if err := os.WriteFile(image, compress(t, "zstd", bad), 0o644); err != nil {
		t.Fatal(err)
	}
	var badRange bmap.Range
	for _, rg := range m.Ranges {
		if off, end := m.Bytes(rg); off <= 15*mapTransfer+5000 && 15*mapTransfer+5000 < end {
			badRange = rg
		}
	}
	card := oldCard(t, 4<<20)
	r := runCLI(t, "write", "--yes", "--transfer-size", "64KiB", image, "sim:"+card)
	if r.code != exitSource || !strings.Contains(r.stderr, "range "+badRange.String()) {
		t.Fatalf("exit %d, want %d and the range %s named\nstderr: %s", r.code, exitSource, badRange, r.stderr)
	}
	got, _ := os.ReadFile(card)
	off, end := m.Bytes(badRange)
	if bytes.Count(got[off:end], []byte{0xA5}) != int(end-off) {
		t.Errorf("the bad range %s (bytes %d-%d) was written", badRange, off, end)
	}
	if bytes.Count(got[:mapTransfer], []byte{0}) != mapTransfer {
		t.Error("the first transfer is not left zeroed")
	}
}

func TestWriteSparse(t *testing.T) {
	t.Parallel()
	img := holeyImage()
	image := writeFile(t, "os.img.gz", compress(t, "gzip", img))
	card := oldCard(t, 4<<20)
	r := runCLI(t, "write", "--yes", "--sparse", "--transfer-size", "64KiB", image, "sim:"+card)
	if r.code != exitOK {
		t.Fatalf("exit %d\nstdout: %s\nstderr: %s", r.code, r.stdout, r.stderr)
	}
	if first, _, _ := strings.Cut(r.stdout, "\n"); !strings.Contains(first, "keep the card's old bytes") {
		t.Errorf("first line %q does not warn about old bytes", first)
	}
	checkCard(t, card, img, func(off, n int64) bool { return !bytes.Equal(img[off:off+n], make([]byte, n)) })
}

// TestWriteNoBmap: a map next to the image is ignored with --no-bmap, and
// the flags that contradict each other are usage errors.
func TestWriteNoBmap(t *testing.T) {
	t.Parallel()
	img := holeyImage()
	image := writeFile(t, "os.img", img)
	makeMap(t, image+".bmap", img)
	card := oldCard(t, 4<<20)
	r := runCLI(t, "write", "--yes", "--no-bmap", image, "sim:"+card)
	if r.code != exitOK || strings.Contains(r.stdout, "Block map") {
		t.Fatalf("exit %d, stdout %s\nstderr: %s", r.code, r.stdout, r.stderr)
	}
	got, _ := os.ReadFile(card)
	if !bytes.Equal(got[:len(img)], img) {
		t.Error("--no-bmap did not write every byte")
	}
	for _, args := range [][]string{{"--bmap", image + ".bmap", "--no-bmap"}, {"--bmap", image + ".bmap", "--sparse"}} {
		if r := runCLI(t, append(append([]string{"write", "--yes"}, args...), image, "sim:"+card)...); r.code != exitUsage {
			t.Errorf("%v: exit %d, want %d", args, r.code, exitUsage)
		}
	}
}

// TestBlockMapOneCardOnly: a many-card write sends every byte to every
// card, so --bmap and --sparse there are usage errors, refused before any
// card is touched; a map found next to the image is not asked for and is
// left unused, every card getting the whole image.
func TestBlockMapOneCardOnly(t *testing.T) {
	t.Parallel()
	img := holeyImage()
	image := writeFile(t, "os.img", img)
	makeMap(t, image+".bmap", img)
	dir := t.TempDir()
	for _, tc := range []struct {
		name    string
		args    []string
		targets int
		code    int
	}{
		{"bmap, two targets", []string{"--bmap", image + ".bmap"}, 2, exitUsage},
		{"sparse, two targets", []string{"--sparse"}, 2, exitUsage},
		{"sparse, one target with --report", []string{"--sparse", "--report", filepath.Join(dir, "r.json")}, 1, exitUsage},
		{"map found next to the image", nil, 2, exitOK},
	} {
		t.Run(tc.name, func(t *testing.T) {
			args := append(append([]string{"write", "--yes"}, tc.args...), image)
			var cards []string
			for range tc.targets {
				cards = append(cards, oldCard(t, 4<<20))
				args = append(args, "sim:"+cards[len(cards)-1])
			}
			r := runCLI(t, args...)
			if r.code != tc.code {
				t.Fatalf("exit %d, want %d\nstdout: %s\nstderr: %s", r.code, tc.code, r.stdout, r.stderr)
			}
			for _, card := range cards {
				got, _ := os.ReadFile(card)
				wrote := bytes.Equal(got[:len(img)], img)
				if untouched := bytes.Equal(got, bytes.Repeat([]byte{0xA5}, 4<<20)); tc.code == exitOK && !wrote || tc.code != exitOK && !untouched {
					t.Errorf("%s: whole image written %v, untouched %v", card, wrote, untouched)
				}
			}
		})
	}
}

// TestVerifyAfterABlockMapWrite: verify finds the map beside the image as
// write does and compares only what the map wrote; without it the card's
// old bytes differ, which is another image's data, not a failing card.
func TestVerifyAfterABlockMapWrite(t *testing.T) {
	t.Parallel()
	img := holeyImage()
	dir := t.TempDir()
	image := filepath.Join(dir, "os.img")
	if err := os.WriteFile(image, img, 0o644); err != nil {
		t.Fatal(err)
	}
	makeMap(t, image+".bmap", img)
	card := oldCard(t, 4<<20)
	if r := runCLI(t, "write", "--yes", "--transfer-size", "64KiB", image, "sim:"+card); r.code != exitOK {
		t.Fatalf("write: exit %d\n%s", r.code, r.stderr)
	}
	r := runCLI(t, "verify", image, "sim:"+card)
	if r.code != exitOK || !strings.Contains(r.stdout, "Block map "+image+".bmap") {
		t.Errorf("verify: exit %d\nstdout: %s\nstderr: %s", r.code, r.stdout, r.stderr)
	}
	r = runCLI(t, "verify", "--no-bmap", image, "sim:"+card)
	if r.code != exitVerify || strings.Contains(r.stderr, "fake") || !strings.Contains(r.stderr, "something other than this image") {
		t.Errorf("verify --no-bmap: exit %d, stderr %s", r.code, r.stderr)
	}
}
