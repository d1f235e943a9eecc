package session

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"net/http/httptest"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/usbflash/usbflash/internal/drive"
	"github.com/usbflash/usbflash/internal/failure"
	"github.com/usbflash/usbflash/internal/image"
	"github.com/usbflash/usbflash/internal/image/bmap"
	"github.com/usbflash/usbflash/internal/image/httpsrc"
	"github.com/usbflash/usbflash/internal/lib/units"
	"github.com/usbflash/usbflash/internal/testkit/flakyhttp"
	"github.com/usbflash/usbflash/internal/testkit/testpattern"
)

// instantHTTP reads URLs with no waits between attempts.
func instantHTTP() httpsrc.Options {
	return httpsrc.Options{Sleep: func(ctx context.Context, _ time.Duration) error { return ctx.Err() }}
}

// eventLog keeps a session's notes and the block map it chose.
type eventLog struct {
	noteLog
	mu        sync.Mutex
	map_      string
	downloads []Download // with the write's progress
}

func (l *eventLog) Observe(e Event) {
	l.noteLog.Observe(e)
	if m, ok := e.(BlockMapChosen); ok {
		l.mu.Lock()
		l.map_ = m.Path
		l.mu.Unlock()
	}
	if p, ok := e.(Progress); ok && p.Download != nil {
		l.mu.Lock()
		l.downloads = append(l.downloads, *p.Download)
		l.mu.Unlock()
	}
}

// checkDownloads: the write's progress carried its download, counting up
// to the file's size (which the server gave), its resumes up to the
// run's, the URL without its query, and a side that sets the pace.
func checkDownloads(t *testing.T, ds []Download, size int64, resumes int) {
	t.Helper()
	if len(ds) == 0 {
		t.Fatal("no progress carried the download")
	}
	var last Download
	for _, d := range ds {
		if d.Bytes < last.Bytes || d.Bytes > size || d.Total != size || d.Resumes < last.Resumes || d.Resumes > resumes ||
			strings.Contains(d.URL, "secret") || (d.Bound != BoundDownload && d.Bound != BoundWrite) {
			t.Fatalf("download progress %+v after %+v: want bytes counting up to %d of %d, at most %d resumes", d, last, size, size, resumes)
		}
		last = d
	}
}

// TestRunURL: an image at a URL streams into the decoders and onto the
// card byte-exact through dropped connections (each resume said once), is
// checked against the sum beside the URL as beside a file (the file's or
// the decoded image's, in a sidecar or SHA256SUMS), uses the block map
// beside it, and fails as an image error with the card's first transfer
// zeroed when the sum is wrong or the file changes mid-transfer.
func TestRunURL(t *testing.T) {
	t.Parallel()
	img := testpattern.Bytes(3<<20+700, 21)
	file := xzBytes(t, img)
	v := flakyhttp.Version{Data: file, ETag: `"a"`}
	other := flakyhttp.Version{Data: xzBytes(t, testpattern.Bytes(3<<20+700, 22)), ETag: `"b"`}
	m := bmapOf(t, img)
	for _, tc := range []struct {
		name    string
		path    string // the URL's path and query
		v       flakyhttp.Version
		files   map[string]string
		faults  map[int]flakyhttp.Fault
		sum     string
		matched string // a note saying what matched; "" when no sum is checked
		resumes int
		mapPath string // the block map the write used, "" for none
		want    error  // nil: the card holds the image
	}{
		{name: "sidecar, dropped twice", path: "/d/os.img.xz", v: v, files: map[string]string{"/d/os.img.xz.sha256": hexSum(file) + "  os.img.xz\n"},
			faults: map[int]flakyhttp.Fault{0: {DropAt: 100000}, 1: {DropAt: 200000}}, matched: "The image file matches the SHA-256 in http", resumes: 2},
		{name: "SHA256SUMS with the image's line, a query", path: "/d/os.img.xz?token=secret", v: v,
			files: map[string]string{"/d/SHA256SUMS": hexSum(img) + "  os.img\n"}, matched: "The decoded image matches the SHA-256 in http"},
		{name: "SHA256SUMS above", path: "/d/arm64/os.img.xz", v: v,
			files: map[string]string{"/d/SHA256SUMS": hexSum(file) + "  arm64/os.img.xz\n"}, matched: "The image file matches"},
		{name: "the sum given", path: "/os.img.xz", v: v, sum: hexSum(file), matched: "The image file matches the SHA-256 given"},
		{name: "Content-Disposition's name", path: "/get?id=7", v: flakyhttp.Version{Data: file, ETag: `"a"`, Name: "os.img.xz"}},
		{name: "a block map beside it", path: "/d/os.img.xz", v: v, files: map[string]string{"/d/os.img.bmap": string(m)}, mapPath: "/d/os.img.bmap"},
		{name: "a wrong sum", path: "/d/os.img.xz", v: v, files: map[string]string{"/d/os.img.xz.sha256": strings.Repeat("0", 64) + "\n"},
			want: &image.ChecksumMismatchError{}},
		{name: "the file changes mid-transfer", path: "/d/os.img.xz", v: v,
			faults: map[int]flakyhttp.Fault{0: {DropAt: 150000}, 1: {Replace: &other}}, want: httpsrc.ErrResumeWhole, resumes: 1},
		{name: "a web page named os.img.xz", path: "/d/os.img.xz", v: flakyhttp.Version{Data: []byte("<!doctype html><p>gone</p>" + strings.Repeat(" ", 600))},
			want: image.ErrNotNamedFormat},
		{name: "not found", path: "/d/os.img.xz", v: v, want: os.ErrNotExist},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			srv := flakyhttp.New(tc.v, tc.faults)
			srv.Path, _, _ = strings.Cut(tc.path, "?")
			if tc.name == "not found" {
				srv.Path = "/elsewhere"
			}
			for p, body := range tc.files {
				srv.Files[p] = []byte(body)
			}
			ts := httptest.NewServer(srv)
			defer ts.Close()
			card, spec := newSimCard(t)
			log := &eventLog{}
			_, err := Run(context.Background(), Config{Image: image.Ref{Path: ts.URL + tc.path, SHA256: tc.sum, HTTP: instantHTTP()}, Engine: Engine{TransferSize: 1 << 20, Buffers: 2}, Output: Output{Observer: log}}, []drive.Spec{spec})
			notes := strings.Join(log.all(), "\n")
			if strings.Contains(notes, "secret") || strings.Contains(errText(err), "secret") {
				t.Errorf("the URL's query was shown:\n%s\n%v", notes, err)
			}
			if n := strings.Count(notes, "resuming in"); n != tc.resumes {
				t.Errorf("%d resumes said, want %d:\n%s", n, tc.resumes, notes)
			}
			if tc.want == nil {
				want := "Downloaded " + units.FormatBytes(int64(len(tc.v.Data))) + " from "
				if tc.resumes > 0 {
					want = fmt.Sprintf("after %d resumes", tc.resumes)
				}
				if !strings.Contains(notes, want) {
					t.Errorf("notes:\n%s\nwant the download said (%q)", notes, want)
				}
				checkDownloads(t, log.downloads, int64(len(tc.v.Data)), tc.resumes)
			}
			got, _ := os.ReadFile(card)
			if tc.want != nil {
				checkURLFailure(t, err, tc.want, got, img)
				return
			}
			if err != nil {
				t.Fatalf("write: %v\nnotes:\n%s", err, notes)
			}
			if !bytes.Equal(got[:len(img)], img) {
				t.Error("the card does not hold the image")
			}
			if tc.matched != "" && !strings.Contains(notes, tc.matched) {
				t.Errorf("notes:\n%s\nwant one saying %q", notes, tc.matched)
			}
			if want := ""; tc.mapPath != "" {
				want = ts.URL + tc.mapPath
				if log.map_ != want {
					t.Errorf("block map %q, want %q", log.map_, want)
				}
			} else if log.map_ != "" {
				t.Errorf("block map %q, want none", log.map_)
			}
		})
	}
}

func errText(err error) string {
	if err == nil {
		return ""
	}
	return err.Error()
}

// checkURLFailure: an image error of the kind wanted, and a card whose
// first transfer is zeroed (or that was never written).
func checkURLFailure(t *testing.T, err, want error, card, img []byte) {
	t.Helper()
	var mismatch *image.ChecksumMismatchError
	if _, ok := want.(*image.ChecksumMismatchError); ok {
		if !errors.As(err, &mismatch) {
			t.Fatalf("write: %v, want a checksum mismatch", err)
		}
	} else if !errors.Is(err, want) {
		t.Fatalf("write: %v, want %v", err, want)
	}
	if failure.Of(err) != failure.Image {
		t.Errorf("class %v, want image", failure.Of(err))
	}
	if len(card) >= 512 && !bytes.Equal(card[:512], make([]byte, 512)) {
		t.Error("the card's first transfer was written")
	}
	if len(card) >= len(img) && bytes.Equal(card[:len(img)], img) {
		t.Error("the card holds the whole image though the write failed")
	}
}

// bmapOf is a block map of img in bmaptool's format.
func bmapOf(t *testing.T, img []byte) []byte {
	t.Helper()
	b := bmap.NewBuilder(4096)
	b.Write(img)
	data, err := bmap.Marshal(b.Map())
	if err != nil {
		t.Fatal(err)
	}
	return data
}

// TestRunURLSignature: a SHA256SUMS beside a URL with a detached
// signature beside it is checked with the publisher's keys, as beside a
// file (imagesrc's sumsig), and a list whose signature does not match is
// refused before any byte reaches the card.
func TestRunURLSignature(t *testing.T) {
	t.Parallel()
	home, keys := gpgKeys(t)
	img := testpattern.Bytes(2<<20+300, 6)
	dir := t.TempDir()
	list := hexSum(img) + "  os.img\n"
	if err := os.WriteFile(filepath.Join(dir, "SHA256SUMS"), []byte(list), 0o644); err != nil {
		t.Fatal(err)
	}
	gpgRun(t, home, dir, "--armor", "--output", "SHA256SUMS.asc", "--detach-sign", "SHA256SUMS")
	sig, err := os.ReadFile(filepath.Join(dir, "SHA256SUMS.asc"))
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name, list string
		matched    string
	}{
		{name: "good signature", list: list, matched: "SHA256SUMS.asc is a good signature of http"},
		{name: "list changed", list: list + strings.Repeat("1", 64) + "  other.img\n"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			srv := flakyhttp.New(flakyhttp.Version{Data: img, ETag: `"i"`}, nil)
			srv.Path = "/os.img"
			srv.Files["/SHA256SUMS"] = []byte(tc.list)
			srv.Files["/SHA256SUMS.asc"] = sig
			ts := httptest.NewServer(srv)
			defer ts.Close()
			card, spec := newSimCard(t)
			log := &noteLog{}
			_, err := Run(context.Background(), Config{Image: image.Ref{Path: ts.URL + "/os.img", SHA256Keyring: keys, HTTP: instantHTTP()}, Engine: Engine{TransferSize: 1 << 20, Buffers: 2}, Output: Output{Observer: log}}, []drive.Spec{spec})
			notes := strings.Join(log.all(), "\n")
			got, _ := os.ReadFile(card)
			if tc.matched != "" {
				if err != nil || !bytes.Equal(got[:len(img)], img) || !strings.Contains(notes, tc.matched) {
					t.Fatalf("write: %v\nnotes:\n%s\nwant the image written and a note saying %q", err, notes, tc.matched)
				}
				// The same, typed: checked against the list, signed by
				// the key, then matched before the card's first transfer.
				from := ts.URL + "/SHA256SUMS"
				signer := "Test <t@example.invalid> (key "
				if len(log.checksums) > 0 && strings.HasPrefix(log.checksums[0].SignedBy, signer) {
					signer = log.checksums[0].SignedBy // the key made for the test
				}
				want := []Checksum{{State: ChecksumChecking, From: from, SignedBy: signer}, {Card: "sim:" + card, State: ChecksumMatched, From: from, SignedBy: signer}}
				if !slices.Equal(log.checksums, want) {
					t.Errorf("checksum events %+v, want %+v", log.checksums, want)
				}
				return
			}
			if !errors.Is(err, image.ErrBadSignature) || failure.Of(err) != failure.Image {
				t.Fatalf("write: %v, want a bad signature", err)
			}
			if len(bytes.Trim(got, "\x00")) != 0 {
				t.Error("the card was written to")
			}
		})
	}
}

// TestRunURLCache: with a cache, a write from a URL leaves the file in it
// (named by its SHA-256) while the card is written; the next write reads it
// from there (no request for the image when the sum beside the URL names
// it, one for its last byte when only the server's ETag does); a write cut
// short leaves a .part that the next run resumes from where it ended.
func TestRunURLCache(t *testing.T) {
	t.Parallel()
	img := testpattern.Bytes(3<<20+700, 31)
	file := xzBytes(t, img)
	for _, tc := range []struct {
		name   string
		sum    bool // a sidecar beside the URL gives the file's SHA-256
		faults map[int]flakyhttp.Fault
		// What the second write asks for the image (Range headers).
		second []string
		// The first write fails (a server that fails hard mid-body).
		firstFails bool
		note       string // the second write says
	}{
		{name: "reused by its SHA-256", sum: true, second: nil, note: "from the cache: "},
		{name: "reused by the server's ETag", second: []string{fmt.Sprintf("bytes=%d-", len(file)-1)},
			note: `the server still serves`},
		{name: "a .part resumed across runs", faults: map[int]flakyhttp.Fault{0: {DropAt: 200000}, 1: {Status: 404}},
			firstFails: true, second: []string{"bytes=200000-"}, note: "from the cache's "},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			srv := flakyhttp.New(flakyhttp.Version{Data: file, ETag: `"c1"`}, tc.faults)
			srv.Path = "/os.img.xz"
			if tc.sum {
				srv.Files["/os.img.xz.sha256"] = []byte(hexSum(file) + "\n")
			}
			ts := httptest.NewServer(srv)
			defer ts.Close()
			cache := t.TempDir()
			notes, got, err := writeCached(t, ts.URL+"/os.img.xz", cache)
			if tc.firstFails != (err != nil) {
				t.Fatalf("first write: %v\n%s", err, strings.Join(notes, "\n"))
			}
			if !tc.firstFails && !bytes.Equal(got[:len(img)], img) {
				t.Fatal("the first write's card does not hold the image")
			}
			before := len(srv.Ranges)
			notes, got, err = writeCached(t, ts.URL+"/os.img.xz", cache)
			if err != nil || !bytes.Equal(got[:len(img)], img) {
				t.Fatalf("second write: %v\n%s", err, strings.Join(notes, "\n"))
			}
			if asked := srv.Ranges[before:]; !slices.Equal(asked, tc.second) {
				t.Errorf("the second write asked for %q, want %q\n%s", asked, tc.second, strings.Join(notes, "\n"))
			}
			if !strings.Contains(strings.Join(notes, "\n"), tc.note) {
				t.Errorf("the second write's notes do not say %q:\n%s", tc.note, strings.Join(notes, "\n"))
			}
			if _, err := os.Stat(filepath.Join(cache, "sha256-"+hexSum(file))); err != nil {
				t.Errorf("no entry for the file's SHA-256: %v", err)
			}
		})
	}
}

// TestRunCatalog: Config.OS names and picks an entry of an os_list (exactly or by
// an unambiguous prefix) and writes its URL, checked against both of the
// entry's SHA-256s (the download's, then the decoded image's) before the
// first transfer is written; the entry's size refuses a card too small
// before anything is written.
func TestRunCatalog(t *testing.T) {
	t.Parallel()
	img := testpattern.Bytes(3<<20+512, 41)
	file := xzBytes(t, img)
	srv := flakyhttp.New(flakyhttp.Version{Data: file, ETag: `"k"`}, nil)
	srv.Path = "/os/os.img.xz"
	ts := httptest.NewServer(srv)
	t.Cleanup(ts.Close) // after the parallel subtests
	entry := func(name, dl, ex string, size int) string {
		return fmt.Sprintf(`{"name": %q, "url": "os/os.img.xz", "image_download_sha256": %q, "extract_sha256": %q,
			"extract_size": %d, "image_download_size": %d, "release_date": "2026-11-19", "devices": ["pi5-64bit"]}`,
			name, dl, ex, size, len(file))
	}
	bad := strings.Repeat("0", 64)
	srv.Files["/os_list.json"] = []byte(`{"os_list": [` + strings.Join([]string{
		entry("Good OS", hexSum(file), hexSum(img), len(img)),
		`{"name": "Others", "subitems": [` + entry("Bad Extract", hexSum(file), bad, len(img)) + `,` +
			entry("Bad Download", bad, hexSum(img), len(img)) + `]}`,
		entry("Huge OS", hexSum(file), hexSum(img), 64<<20),
	}, ",") + `]}`)
	for _, tc := range []struct {
		name, image, os string
		sha256          string // --sha256 beside the entry
		matched         string // the note that the write matched; "" for a failure
		class           failure.Class
		written         bool // the card was written to (its first transfer zeroed)
	}{
		{name: "both sums", os: "good", matched: "and the decoded image the SHA-256 in the catalog's entry Good OS (extract_sha256)"},
		{name: "the decoded image's sum differs", os: "Bad Extract", class: failure.Image, written: true},
		{name: "the download's sum differs", os: "others / bad d", class: failure.Image, written: true},
		{name: "a sum given and the entry's", os: "good", sha256: hexSum(img), matched: "The decoded image matches the SHA-256 given"},
		{name: "a sum given that differs", os: "good", sha256: bad, class: failure.Image, written: true},
		{name: "larger than the card", os: "Huge OS", class: failure.Refused},
		{name: "ambiguous", os: "Bad", class: failure.Usage},
		{name: "no such entry", os: "Fedora", class: failure.Usage},
		{name: "an image and an entry", image: ts.URL + "/os/os.img.xz", os: "Good OS", class: failure.Usage},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			card, spec := newSimCard(t)
			log := &noteLog{}
			_, err := Run(context.Background(), Config{Image: image.Ref{Path: tc.image, OS: tc.os, SHA256: tc.sha256, Catalog: ts.URL + "/os_list.json", HTTP: instantHTTP()}, Engine: Engine{TransferSize: 1 << 20, Buffers: 2}, Output: Output{Observer: log}}, []drive.Spec{spec})
			notes := strings.Join(log.all(), "\n")
			got, _ := os.ReadFile(card)
			if tc.matched != "" {
				if err != nil || !bytes.Equal(got[:len(img)], img) || !strings.Contains(notes, tc.matched) {
					t.Fatalf("write: %v\nnotes:\n%s\nwant the image and a note saying %q", err, notes, tc.matched)
				}
				return
			}
			if failure.Of(err) != tc.class {
				t.Fatalf("write: %v (class %v), want class %v\n%s", err, failure.Of(err), tc.class, notes)
			}
			switch {
			case tc.written && (len(got) < len(img) || !bytes.Equal(got[:512], make([]byte, 512)) || !bytes.Equal(got[1<<20:len(img)], img[1<<20:])):
				t.Error("the card is not the image with its first transfer zeroed")
			case !tc.written && len(bytes.Trim(got, "\x00")) != 0:
				t.Error("the card was written to")
			}
		})
	}
}
