package session

import (
	"bytes"
	"context"
	"errors"
	"net/http/httptest"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/usbflash/usbflash/internal/drive"
	"github.com/usbflash/usbflash/internal/image"
	"github.com/usbflash/usbflash/internal/image/dlcache"
	"github.com/usbflash/usbflash/internal/testkit/flakyhttp"
	"github.com/usbflash/usbflash/internal/testkit/testpattern"
)

// writeCached writes url to a new sim: card through the cache and returns
// the notes, the card and the error.
func writeCached(t *testing.T, url, cache string) ([]string, []byte, error) {
	t.Helper()
	card, spec := newSimCard(t)
	log := &noteLog{}
	_, err := Run(context.Background(), Config{Image: image.Ref{Path: url, HTTP: instantHTTP(), Cache: cache}, Engine: Engine{TransferSize: 1 << 20, Buffers: 2}, Output: Output{Observer: log}}, []drive.Spec{spec})
	got, _ := os.ReadFile(card)
	return log.all(), got, err
}

// TestRunCacheDamaged: a cache entry whose bytes are not the SHA-256 it is
// named by never reaches the card as the image: it is found before the
// first transfer is written (or where the decoder trips), removed, and the
// cards are written again from the server, which makes a sound entry; an
// entry that is sound but not the file a checksum list describes is
// removed too, so that the advice to download again reads the server.
func TestRunCacheDamaged(t *testing.T) {
	t.Parallel()
	img := testpattern.Bytes(3<<20+700, 51)
	xz := xzBytes(t, img)
	for _, tc := range []struct {
		name    string
		file    []byte
		sidecar bool // a checksum list beside the URL
		damage  func([]byte)
	}{
		{name: "raw, no list", file: img, damage: func(b []byte) { b[2<<20] ^= 0xff }},
		{name: "raw, first transfer, no list", file: img, damage: func(b []byte) { b[100] ^= 0xff }},
		{name: "raw, a checksum list", file: img, sidecar: true, damage: func(b []byte) { b[2<<20] ^= 0xff }},
		{name: "xz, no list: the decoder trips", file: xz, damage: func(b []byte) { b[len(b)/2] ^= 0xff }},
		{name: "xz, a checksum list", file: xz, sidecar: true, damage: func(b []byte) { b[len(b)/2] ^= 0xff }},
		{name: "xz, its index", file: xz, damage: func(b []byte) { b[len(b)-20] ^= 0xff }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			srv := flakyhttp.New(flakyhttp.Version{Data: tc.file, ETag: `"d1"`}, nil)
			srv.Path = "/os.img"
			if tc.sidecar {
				srv.Files["/os.img.sha256"] = []byte(hexSum(tc.file) + "\n")
			}
			ts := httptest.NewServer(srv)
			defer ts.Close()
			cache := t.TempDir()
			write := func() ([]string, []byte, error) { return writeCached(t, ts.URL+"/os.img", cache) }
			if notes, got, err := write(); err != nil || !bytes.Equal(got[:len(img)], img) {
				t.Fatalf("first write: %v\n%s", err, strings.Join(notes, "\n"))
			}
			entry := filepath.Join(cache, "sha256-"+hexSum(tc.file))
			b, err := os.ReadFile(entry)
			if err != nil {
				t.Fatal(err)
			}
			tc.damage(b)
			if err := os.WriteFile(entry, b, 0o644); err != nil {
				t.Fatal(err)
			}
			notes, got, err := write()
			said := strings.Join(notes, "\n")
			if err != nil || !bytes.Equal(got[:len(img)], img) {
				t.Fatalf("second write: %v, card holds the image: %v\n%s", err, bytes.Equal(got[:len(img)], img), said)
			}
			if !strings.Contains(said, "Writing again from "+ts.URL+"/os.img: the cache's copy was damaged and is removed") {
				t.Errorf("the second write does not say it wrote again from the server:\n%s", said)
			}
			if b, err := os.ReadFile(entry); err != nil || !bytes.Equal(b, tc.file) {
				t.Errorf("the entry after: %v, sound: %v", err, bytes.Equal(b, tc.file))
			}
		})
	}
}

// TestRunCacheWrongList: a sound entry that a checksum list beside the URL
// does not describe fails the write (exit 4's class) and is removed, so
// that the advice to download again does not read it again.
func TestRunCacheWrongList(t *testing.T) {
	t.Parallel()
	img := testpattern.Bytes(2<<20+300, 52)
	srv := flakyhttp.New(flakyhttp.Version{Data: img, ETag: `"w1"`}, nil)
	srv.Path = "/os.img"
	ts := httptest.NewServer(srv)
	defer ts.Close()
	cache := t.TempDir()
	write := func() error {
		_, _, err := writeCached(t, ts.URL+"/os.img", cache)
		return err
	}
	if err := write(); err != nil {
		t.Fatal(err)
	}
	srv.Files["/os.img.sha256"] = []byte(strings.Repeat("1", 64) + "\n")
	err := write()
	var ce *image.CacheEntryError
	if !errors.As(err, &ce) || !ce.Intact {
		t.Fatalf("second write: %v, want the entry removed as intact but not the list's", err)
	}
	if _, err := os.Stat(filepath.Join(cache, "sha256-"+hexSum(img))); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("the entry is still there: %v", err)
	}
}

// TestRunCacheShared: a URL another run is reading into the same cache
// (its .part claimed) is read from the server from its first byte, without
// the cache: the other run's .part is neither resumed nor written.
func TestRunCacheShared(t *testing.T) {
	t.Parallel()
	img := testpattern.Bytes(3<<20+700, 53)
	file := xzBytes(t, img)
	srv := flakyhttp.New(flakyhttp.Version{Data: file, ETag: `"s1"`}, nil)
	srv.Path = "/os.img.xz"
	ts := httptest.NewServer(srv)
	defer ts.Close()
	url := ts.URL + "/os.img.xz"
	dir := t.TempDir()
	cache, err := dlcache.Open(dir, 0, 1)
	if err != nil {
		t.Fatal(err)
	}
	// The other run: it claimed the URL and holds 200000 bytes of it.
	claim, err := cache.Claim(url)
	if err != nil {
		t.Fatal(err)
	}
	fill, err := claim.Begin(dlcache.Meta{URL: url, ETag: `"s1"`, Size: int64(len(file))}, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer fill.Close()
	if _, err := fill.Reader(bytes.NewReader(file)).Read(make([]byte, 200000)); err != nil {
		t.Fatal(err)
	}
	card, spec := newSimCard(t)
	log := &noteLog{}
	_, err = Run(context.Background(), Config{Image: image.Ref{Path: url, HTTP: instantHTTP(), Cache: dir}, Engine: Engine{TransferSize: 1 << 20, Buffers: 2}, Output: Output{Observer: log}}, []drive.Spec{spec})
	got, _ := os.ReadFile(card)
	if err != nil || !bytes.Equal(got[:len(img)], img) {
		t.Fatalf("write beside another run: %v\n%s", err, strings.Join(log.all(), "\n"))
	}
	if !slices.Equal(srv.Ranges, []string{""}) {
		t.Errorf("asked %q of the server, want the whole file once", srv.Ranges)
	}
	if !strings.Contains(strings.Join(log.all(), "\n"), "Not caching "+url+": another run is reading this URL into the cache") {
		t.Errorf("notes do not say the cache was left to the other run:\n%s", strings.Join(log.all(), "\n"))
	}
}

// TestRunCacheFile: a cache given for an image that is a file is said to
// do nothing, and is not made.
func TestRunCacheFile(t *testing.T) {
	t.Parallel()
	img := testpattern.Bytes(1<<20, 54)
	path := filepath.Join(t.TempDir(), "os.img")
	if err := os.WriteFile(path, img, 0o644); err != nil {
		t.Fatal(err)
	}
	cache := filepath.Join(t.TempDir(), "cache")
	_, spec := newSimCard(t)
	log := &noteLog{}
	if _, err := Run(context.Background(), Config{Image: image.Ref{Path: path, Cache: cache}, Engine: Engine{TransferSize: 1 << 20, Buffers: 2}, Output: Output{Observer: log}},
		[]drive.Spec{spec}); err != nil {
		t.Fatal(err)
	}
	if want := "The download cache " + cache + " is not used: " + path + " is read where it is, not downloaded"; !slices.Contains(log.all(), want) {
		t.Errorf("notes:\n%s\nwant %q", strings.Join(log.all(), "\n"), want)
	}
	if _, err := os.Stat(cache); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("the cache was made: %v", err)
	}
}
