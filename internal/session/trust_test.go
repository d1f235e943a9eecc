package session

import (
	"bytes"
	"cmp"
	"context"
	"errors"
	"fmt"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/usbflash/usbflash/internal/drive"
	"github.com/usbflash/usbflash/internal/failure"
	"github.com/usbflash/usbflash/internal/image"
	"github.com/usbflash/usbflash/internal/testkit/factsonly"
	"github.com/usbflash/usbflash/internal/testkit/flakyhttp"
	"github.com/usbflash/usbflash/internal/testkit/testfifo"
	"github.com/usbflash/usbflash/internal/testkit/testimage"
	"github.com/usbflash/usbflash/internal/testkit/testpattern"
	"github.com/usbflash/usbflash/internal/testkit/testpgp"
)

// Issue 41: a keyring means an authenticated image or a refusal, and
// verify and its repair trust an image exactly as write does, through the
// same code (image.Open). The cards are sim: cards whose bytes are
// compared before and after: a refusal leaves every byte as it was.

// trustCard is a new 8 MiB sim: card for cmd ("write", "verify",
// "repair"): for a write it holds other bytes, for a verify the image, for
// a repair the image with two bytes flipped (at its start and in its
// middle); before is what it holds.
func trustCard(t *testing.T, cmd string, img []byte) (path string, spec drive.Spec, before []byte) {
	t.Helper()
	before = testpattern.Bytes(8<<20, 62)
	if cmd != "write" {
		copy(before, img)
	}
	if cmd == "repair" {
		before[0] ^= 1
		before[600000] ^= 0x80
	}
	path = filepath.Join(t.TempDir(), "card.img")
	if err := os.WriteFile(path, before, 0o644); err != nil {
		t.Fatal(err)
	}
	spec, err := drive.Parse("sim:" + path + "?size=8MiB")
	if err != nil {
		t.Fatal(err)
	}
	return path, spec, before
}

// runTrust runs cmd with o on the card spec names.
func runTrust(t *testing.T, cmd string, o trustOpts, spec drive.Spec, obs Observer) (string, error) {
	t.Helper()
	if cmd == "write" {
		return "", runWrite(context.Background(), o, spec, obs)
	}
	return runVerify(context.Background(), o, spec, cmd == "repair", obs)
}

// listFiles is a SHA256SUMS holding body, signed by s as how says (nil:
// unsigned), and what lies beside it: name -> bytes.
func listFiles(t *testing.T, body string, s *testpgp.Signer, how string) map[string][]byte {
	t.Helper()
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "SHA256SUMS"), []byte(body), 0o644); err != nil {
		t.Fatal(err)
	}
	if s != nil {
		s.Sign(dir, "SHA256SUMS", how)
	}
	files := map[string][]byte{}
	entries, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range entries {
		if files[e.Name()], err = os.ReadFile(filepath.Join(dir, e.Name())); err != nil {
			t.Fatal(err)
		}
	}
	return files
}

// catalogOf is an os_list whose entries name os/os.img beside it.
func catalogOf(entries ...string) []byte {
	return []byte(`{"os_list": [` + strings.Join(entries, ",") + `]}`)
}

// catalogEntry is an os_list entry for os/os.img.
func catalogEntry(name, download, extract string, size int) string {
	return fmt.Sprintf(`{"name": %q, "url": "os/os.img", "image_download_sha256": %q, "extract_sha256": %q, "extract_size": %d}`,
		name, download, extract, size)
}

func is(target error) func(error) bool { return func(err error) bool { return errors.Is(err, target) } }

// TestKeyringRefusesUnsigned (issue 41): with a keyring, an image for
// which no list beside it gives a SHA-256 its keys signed (no list; a
// signed list with no line for it; a list unsigned or signed by another
// key) is refused as an image error before the first byte, for a file, a
// URL and a catalog entry, by write, verify and verify --repair alike; a
// catalog entry's own sums still hold beside the signed list's; standard
// input has no list beside it. A good signature writes, matches and
// repairs.
func TestKeyringRefusesUnsigned(t *testing.T) {
	t.Parallel()
	pub := testpgp.New(t, "Publisher <pub@example.invalid>", "never")
	other := testpgp.New(t, "Someone else <else@example.invalid>", "never")
	keys := pub.Keyring(true)
	img := testpattern.Bytes(2<<20+300, 61)
	line := hexSum(img) + "  os.img\n"
	good := listFiles(t, line, pub, ".gpg")
	variants := []struct {
		name  string
		files map[string][]byte
		want  func(error) bool // the refusal; nil: trusted
	}{
		{"no list", nil, noSignedSum},
		{"a signed list without its line", listFiles(t, strings.Repeat("1", 64)+"  other.iso\n", pub, "clear"), noSignedSum},
		{"an unsigned list", listFiles(t, line, nil, ""), is(image.ErrListUnsigned)},
		{"a list signed by another key", listFiles(t, line, other, "clear"), is(image.ErrUnknownSigner)},
		{"a good detached signature", good, nil},
	}
	type row struct {
		name, cmd, ref string // ref: "file", "URL", "catalog", "stdin"
		files          map[string][]byte
		os             string // the catalog entry; "": Test OS
		noSHA256       bool
		want           func(error) bool // nil: succeeds
		class          failure.Class
		zeroed         bool   // the write went to its end: the first transfer is zeroed, the rest written
		note           string // said on success
	}
	var rows []row
	for _, cmd := range []string{"write", "verify", "repair"} {
		for _, ref := range []string{"file", "URL", "catalog"} {
			for _, v := range variants {
				r := row{name: cmd + ", " + ref + ", " + v.name, cmd: cmd, ref: ref, files: v.files, want: v.want, class: failure.Image}
				if v.want == nil && ref == "catalog" {
					r.note = "by Publisher <pub@example.invalid>"
				}
				rows = append(rows, r)
			}
		}
		rows = append(rows,
			row{name: cmd + ", a catalog entry whose own sum is wrong", cmd: cmd, ref: "catalog", files: good, os: "Bad OS",
				want: func(err error) bool { return errors.As(err, new(*image.ChecksumMismatchError)) }, class: failure.Image, zeroed: cmd == "write"},
			row{name: cmd + ", no checksum looked for", cmd: cmd, ref: "file", files: good, noSHA256: true,
				want: is(image.ErrChecksumConflict), class: failure.Usage},
			row{name: cmd + ", standard input", cmd: cmd, ref: "stdin", want: noSignedSum, class: failure.Image})
	}
	rows[len(rows)-1].want, rows[len(rows)-1].class = repairStdin, failure.Usage // a repair of standard input is refused first
	for _, tc := range rows {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			srv := flakyhttp.New(flakyhttp.Version{Data: img, ETag: `"i"`}, nil)
			srv.Path = "/os/os.img"
			srv.Files["/os_list.json"] = catalogOf(catalogEntry("Test OS", hexSum(img), hexSum(img), len(img)),
				catalogEntry("Bad OS", hexSum(img), strings.Repeat("0", 64), len(img)))
			dir := t.TempDir()
			for name, data := range tc.files {
				srv.Files["/os/"+name] = data
				if err := os.WriteFile(filepath.Join(dir, name), data, 0o644); err != nil {
					t.Fatal(err)
				}
			}
			ts := httptest.NewServer(srv)
			defer ts.Close()
			o := trustOpts{keyring: keys, noSHA256: tc.noSHA256}
			switch tc.ref {
			case "file":
				o.image = filepath.Join(dir, "os.img")
				if err := os.WriteFile(o.image, img, 0o644); err != nil {
					t.Fatal(err)
				}
			case "URL":
				o.image = ts.URL + "/os/os.img"
			case "catalog":
				o.os, o.catalog = cmp.Or(tc.os, "Test OS"), ts.URL+"/os_list.json"
			case "stdin":
				o.image, o.stdin = "-", pipeOf(t, img)
			}
			card, spec, before := trustCard(t, tc.cmd, img)
			log := &noteLog{}
			_, err := runTrust(t, tc.cmd, o, spec, log)
			notes := strings.Join(log.all(), "\n")
			got, rerr := os.ReadFile(card)
			if rerr != nil {
				t.Fatal(rerr)
			}
			if tc.want == nil {
				if err != nil || !bytes.Equal(got[:len(img)], img) {
					t.Fatalf("%s: %v (the card holds the image: %v)\nnotes:\n%s", tc.cmd, err, bytes.Equal(got[:len(img)], img), notes)
				}
				if !strings.Contains(notes, tc.note) {
					t.Errorf("notes:\n%s\nwant one saying %q", notes, tc.note)
				}
				return
			}
			if !tc.want(err) || failure.Of(err) != tc.class {
				t.Fatalf("%s: %v (class %v), want a refusal of class %v\nnotes:\n%s", tc.cmd, err, failure.Of(err), tc.class, notes)
			}
			factsonly.Check(t, err.Error())
			switch {
			case tc.zeroed:
				if !bytes.Equal(got[:1<<20], make([]byte, 1<<20)) || !bytes.Equal(got[1<<20:len(img)], img[1<<20:]) {
					t.Error("the card is not the image with its first transfer zeroed")
				}
			case !bytes.Equal(got, before):
				t.Error("the card was written to")
			}
		})
	}
}

// TestVerifyTrustsAsWrite (issue 41): verify takes the image options
// write takes and trusts the image as write does: a catalog entry's
// SHA-256s and its size (a size the image decodes whole to another is the
// entry's fault, named, not damage), a sum given or beside the image, the
// cache; the outcome names a catalog entry; a card that matches an image
// that is not its publisher's does not match it, and --repair refuses
// such an image before it writes anything.
func TestVerifyTrustsAsWrite(t *testing.T) {
	t.Parallel()
	img := testpattern.Bytes(2<<20+300, 63)
	gz := testimage.Compress(t, "gzip", img)
	zeros := strings.Repeat("0", 64)
	entry := func(name, download, extract string, size int) string {
		return fmt.Sprintf(`{"name": %q, "url": "os/os.img.gz", "image_download_sha256": %q, "extract_sha256": %q, "extract_size": %d}`,
			name, download, extract, size)
	}
	list := catalogOf(entry("Good OS", hexSum(gz), hexSum(img), len(img)), entry("Wrong Download", zeros, hexSum(img), len(img)),
		entry("Wrong Extract", hexSum(gz), zeros, len(img)), entry("Larger OS", hexSum(gz), hexSum(img), len(img)+512),
		entry("Smaller OS", hexSum(gz), hexSum(img), len(img)-512))
	for _, tc := range []struct {
		name, cmd string
		os        string            // a catalog entry, else the image is a file beside files
		url       bool              // the image is the server's, not a file
		files     map[string]string // beside the image
		sha256    string
		want      func(error) bool // nil: the card matches
		says      string           // the error or the notes say
		named     string           // the outcome names the image so
		written   bool             // the write went to its end: its first transfer is zeroed
	}{
		{name: "an entry's two sums", cmd: "verify", os: "Good OS", named: "Good OS (http",
			says: "The image file matches the SHA-256 in the catalog's entry Good OS (image_download_sha256), and the decoded image the SHA-256 in the catalog's entry Good OS (extract_sha256)"},
		{name: "an entry's download sum differs", cmd: "verify", os: "Wrong Download", want: mismatch, says: "the catalog's entry Wrong Download (image_download_sha256) says " + zeros},
		{name: "an entry's image sum differs", cmd: "verify", os: "Wrong Extract", want: mismatch, says: "the catalog's entry Wrong Extract (extract_sha256) says " + zeros},
		{name: "an entry's image sum differs, repair", cmd: "repair", os: "Wrong Extract", want: mismatch, says: "Wrong Extract (extract_sha256)"},
		{name: "an entry states a larger size", cmd: "verify", os: "Larger OS", want: statedSize,
			says: fmt.Sprintf("the image decodes to %d bytes, and the catalog's entry Larger OS (extract_size) says %d", len(img), len(img)+512)},
		{name: "an entry states a smaller size", cmd: "verify", os: "Smaller OS", want: statedSize,
			says: fmt.Sprintf("the image decodes to more than %d bytes, and the catalog's entry Smaller OS (extract_size) says %d", len(img)-512, len(img)-512)},
		{name: "an entry states a larger size, write", cmd: "write", os: "Larger OS", want: statedSize, written: true, says: "Larger OS (extract_size)"},
		{name: "an entry states a smaller size, write", cmd: "write", os: "Smaller OS", want: statedSize, written: true, says: "Smaller OS (extract_size)"},
		{name: "the sum given", cmd: "verify", sha256: hexSum(gz), says: "The image file matches the SHA-256 given", named: "os.img.gz"},
		{name: "the sum given differs", cmd: "verify", sha256: zeros, want: mismatch, says: "the SHA-256 given says " + zeros},
		{name: "a list beside it differs", cmd: "verify", files: map[string]string{"SHA256SUMS": zeros + "  os.img.gz\n"}, want: mismatch, says: "SHA256SUMS says " + zeros},
		{name: "a list beside it differs, repair", cmd: "repair", files: map[string]string{"SHA256SUMS": zeros + "  os.img.gz\n"}, want: mismatch},
		{name: "a list beside a URL differs", cmd: "verify", url: true, files: map[string]string{"SHA256SUMS": zeros + "  os.img.gz\n"}, want: mismatch},
		{name: "a list beside a URL differs, repair", cmd: "repair", url: true, files: map[string]string{"SHA256SUMS": zeros + "  os.img.gz\n"}, want: mismatch},
		{name: "a list beside it gives the image's sum", cmd: "verify", files: map[string]string{"SHA256SUMS": hexSum(img) + "  os.img\n"},
			says: "The decoded image matches the SHA-256 in "},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			srv := flakyhttp.New(flakyhttp.Version{Data: gz, ETag: `"g"`}, nil)
			srv.Path = "/os/os.img.gz"
			srv.Files["/os_list.json"] = list
			dir := t.TempDir()
			for name, data := range tc.files {
				srv.Files["/os/"+name] = []byte(data)
				if err := os.WriteFile(filepath.Join(dir, name), []byte(data), 0o644); err != nil {
					t.Fatal(err)
				}
			}
			ts := httptest.NewServer(srv)
			defer ts.Close()
			o := trustOpts{sha256: tc.sha256}
			switch {
			case tc.os != "":
				o.os, o.catalog = tc.os, ts.URL+"/os_list.json"
			case tc.url:
				o.image = ts.URL + "/os/os.img.gz"
			default:
				o.image = filepath.Join(dir, "os.img.gz")
				if err := os.WriteFile(o.image, gz, 0o644); err != nil {
					t.Fatal(err)
				}
			}
			card, spec, before := trustCard(t, tc.cmd, img)
			log := &noteLog{}
			named, err := runTrust(t, tc.cmd, o, spec, log)
			said := strings.Join(append(log.all(), errText(err)), "\n")
			got, rerr := os.ReadFile(card)
			if rerr != nil {
				t.Fatal(rerr)
			}
			if !strings.Contains(said, tc.says) {
				t.Errorf("said:\n%s\nwant %q", said, tc.says)
			}
			if tc.want == nil {
				if err != nil || !strings.Contains(named, tc.named) {
					t.Fatalf("%s: %v, named %q; want a match naming %q", tc.cmd, err, named, tc.named)
				}
				return
			}
			if !tc.want(err) || failure.Of(err) != failure.Image {
				t.Fatalf("%s: %v (class %v), want an image error", tc.cmd, err, failure.Of(err))
			}
			// The catalog's field names and an entry's are its words, as is
			// the temporary cache's directory.
			factsonly.Check(t, strings.NewReplacer("image_download_sha256", "F", "extract_sha256", "F", "extract_size", "F",
				"Wrong Download", "E", "Wrong Extract", "E", "usbflash-download-", "D").Replace(err.Error()))
			switch {
			case tc.written:
				if !bytes.Equal(got[:1<<20], make([]byte, 1<<20)) {
					t.Error("the card's first transfer was written")
				}
			case !bytes.Equal(got, before):
				t.Error("the card was written to")
			}
		})
	}
}

func mismatch(err error) bool { return errors.As(err, new(*image.ChecksumMismatchError)) }

// TestVerifyCache (issue 41): verify reads an image at a URL through
// --cache as write does: the first run leaves it there, the next reads it
// from there without asking the server for it.
func TestVerifyCache(t *testing.T) {
	t.Parallel()
	img := testpattern.Bytes(2<<20+300, 64)
	file := xzBytes(t, img)
	srv := flakyhttp.New(flakyhttp.Version{Data: file, ETag: `"c"`}, nil)
	srv.Path = "/os.img.xz"
	srv.Files["/os.img.xz.sha256"] = []byte(hexSum(file) + "\n")
	ts := httptest.NewServer(srv)
	defer ts.Close()
	cache := t.TempDir()
	for i, want := range []string{"Downloaded ", "from the cache: "} {
		_, spec, _ := trustCard(t, "verify", img)
		log := &noteLog{}
		before := len(srv.Ranges)
		_, err := runTrust(t, "verify", trustOpts{image: ts.URL + "/os.img.xz", cache: cache}, spec, log)
		notes := strings.Join(log.all(), "\n")
		if err != nil {
			t.Fatalf("verify %d: %v\n%s", i+1, err, notes)
		}
		if i == 1 && len(srv.Ranges) != before {
			t.Errorf("the second verify asked the server for the image: %q", srv.Ranges[before:])
		}
		if i == 1 && !strings.Contains(notes, want) {
			t.Errorf("verify %d's notes do not say %q:\n%s", i+1, want, notes)
		}
	}
	if _, err := os.Stat(filepath.Join(cache, "sha256-"+hexSum(file))); err != nil {
		t.Errorf("no entry for the file's SHA-256: %v", err)
	}
}

// TestVerifyRepairReadsAgain (issue 41): verify --repair decodes the
// image again, as a file: an image at a URL is downloaded into the cache
// first (a temporary one without --cache) and the card repaired from it,
// as is a gzip file whose size its container does not state; standard
// input, read once, is refused before it is read, as is a FIFO once it is
// found to be one, and the card is not touched.
func TestVerifyRepairReadsAgain(t *testing.T) {
	t.Parallel()
	img := testpattern.Bytes(2<<20+300, 65)
	for _, tc := range []struct {
		name   string
		file   []byte // the image, as served or as the file
		url    bool
		cache  bool
		stdin  bool
		fifo   bool
		refuse func(error) bool
	}{
		{name: "a raw URL", file: img, url: true},
		{name: "an xz URL", file: xzBytes(t, img), url: true},
		{name: "an xz URL with a cache", file: xzBytes(t, img), url: true, cache: true},
		{name: "a gzip file", file: testimage.Compress(t, "gzip", img)},
		{name: "standard input", file: img, stdin: true, refuse: repairStdin},
		{name: "a FIFO", file: img, fifo: true, refuse: repairStdin},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			srv := flakyhttp.New(flakyhttp.Version{Data: tc.file, ETag: `"r"`}, nil)
			srv.Path = "/os.img"
			ts := httptest.NewServer(srv)
			defer ts.Close()
			var o trustOpts
			switch {
			case tc.url:
				o.image = ts.URL + "/os.img"
			case tc.stdin:
				o.image, o.stdin = "-", pipeOf(t, tc.file)
			case tc.fifo:
				o.image = filepath.Join(t.TempDir(), "os.img")
				testfifo.Make(t, o.image, tc.file)
			default:
				o.image = filepath.Join(t.TempDir(), "os.img.gz")
				if err := os.WriteFile(o.image, tc.file, 0o644); err != nil {
					t.Fatal(err)
				}
			}
			if tc.cache {
				o.cache = t.TempDir()
			}
			card, spec, before := trustCard(t, "repair", img)
			log := &noteLog{}
			_, err := runTrust(t, "repair", o, spec, log)
			notes := strings.Join(log.all(), "\n")
			got, rerr := os.ReadFile(card)
			if rerr != nil {
				t.Fatal(rerr)
			}
			if tc.refuse != nil {
				if !tc.refuse(err) || failure.Of(err) != failure.Usage {
					t.Fatalf("repair: %v (class %v), want a usage error", err, failure.Of(err))
				}
				if !bytes.Equal(got, before) {
					t.Error("the card was written to")
				}
				return
			}
			if err != nil || !bytes.Equal(got[:len(img)], img) {
				t.Fatalf("repair: %v, the card holds the image: %v\nnotes:\n%s", err, bytes.Equal(got[:len(img)], img), notes)
			}
			if !strings.Contains(notes, "read back different; written again") {
				t.Errorf("no note says the card was repaired:\n%s", notes)
			}
		})
	}
}

// TestFailedCardBootsNothing (issue 41): a card written with an image
// that then reads back different, or that a repair cannot make match,
// has its first transfer zeroed so that it boots nothing, and its error
// says so; of several cards only the one that failed; a verify that only
// compares writes nothing to a card that differs (it may hold another
// image).
func TestFailedCardBootsNothing(t *testing.T) {
	t.Parallel()
	const bad = "fault=corrupt:lba=3000,persistent" // a block always stored inverted
	for _, tc := range []struct {
		name   string
		cmd    string
		cards  []string
		repair bool
		zeroed []bool // per card
	}{
		{name: "write, a block stored wrong", cmd: "write", cards: []string{"a.img?size=8MiB&" + bad}, zeroed: []bool{true}},
		{name: "write --repair, a block stored wrong", cmd: "write", cards: []string{"a.img?size=8MiB&" + bad}, repair: true, zeroed: []bool{true}},
		{name: "write, two cards, one stores a block wrong", cmd: "write", cards: []string{"a.img?size=8MiB", "b.img?size=8MiB&" + bad}, zeroed: []bool{false, true}},
		{name: "verify --repair, a block stored wrong", cmd: "repair", cards: []string{"a.img?" + bad}, zeroed: []bool{true}},
		{name: "verify, a card that differs", cmd: "verify", cards: []string{"a.img"}, zeroed: []bool{false}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			dir := t.TempDir()
			imagePath, img := testimage.File(t, dir, 3<<20+777)
			var res *Result
			var err error
			var before []byte
			if tc.cmd == "write" {
				res, err = Run(context.Background(), Config{Image: image.Ref{Path: imagePath}, Engine: Engine{Verify: true, Repair: tc.repair}, Output: Output{Observer: &events{}}},
					simSpecs(t, dir, tc.cards...))
			} else {
				// A card written with the image, a block of which reads
				// back different.
				before = append(bytes.Clone(img), make([]byte, 8<<20-len(img))...)
				before[3000*512] ^= 0xff
				name, _, _ := strings.Cut(tc.cards[0], "?")
				if err := os.WriteFile(filepath.Join(dir, name), before, 0o644); err != nil {
					t.Fatal(err)
				}
				_, err = runVerify(context.Background(), trustOpts{image: imagePath}, simSpecs(t, dir, tc.cards...)[0], tc.cmd == "repair", &events{})
			}
			errs := []error{err}
			if res != nil && len(tc.cards) > 1 {
				errs = make([]error, len(tc.cards))
				for _, o := range res.Cards {
					errs[cardIndex(t, tc.cards, o.Target)] = o.Err
				}
			}
			for i, c := range tc.cards {
				name, _, _ := strings.Cut(c, "?")
				got, rerr := os.ReadFile(filepath.Join(dir, name))
				if rerr != nil {
					t.Fatal(rerr)
				}
				switch {
				case tc.zeroed[i]:
					if failure.Of(errs[i]) != failure.Verify || !firstZeroed(errs[i]) || !strings.Contains(errs[i].Error(), "it boots nothing") {
						t.Errorf("%s: %v (class %v), want a verify failure saying its first transfer was zeroed", name, errs[i], failure.Of(errs[i]))
					} else {
						factsonly.Check(t, errs[i].Error())
					}
					if !bytes.Equal(got[:1<<20], make([]byte, 1<<20)) || !bytes.Equal(got[2<<20:3<<20], img[2<<20:3<<20]) {
						t.Errorf("%s: the first transfer is not zeroed, or more than it was", name)
					}
				case before != nil:
					if failure.Of(errs[i]) != failure.Verify || firstZeroed(errs[i]) || !bytes.Equal(got, before) {
						t.Errorf("%s: %v: want a difference and the card as it was", name, errs[i])
					}
				case errs[i] != nil || !bytes.Equal(got[:len(img)], img):
					t.Errorf("%s: %v, want the image written", name, errs[i])
				}
			}
		})
	}
}
