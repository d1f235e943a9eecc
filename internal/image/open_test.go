package image

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"io"
	"net/http/httptest"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/usbflash/usbflash/internal/failure"
	"github.com/usbflash/usbflash/internal/testkit/flakyhttp"
	"github.com/usbflash/usbflash/internal/testkit/testpattern"
)

// notes keeps what Open and the opened image note, from any goroutine.
type notes struct {
	mu   sync.Mutex
	said []string
}

func (n *notes) note(msg string) {
	n.mu.Lock()
	defer n.mu.Unlock()
	n.said = append(n.said, msg)
}

func (n *notes) has(part string) bool {
	n.mu.Lock()
	defer n.mu.Unlock()
	return slices.ContainsFunc(n.said, func(s string) bool { return strings.Contains(s, part) })
}

func sha256Hex(b []byte) string {
	s := sha256.Sum256(b)
	return hex.EncodeToString(s[:])
}

// readAll reads the opened image whole and checks it against its sum.
func readAll(t *testing.T, o *Opened) ([]byte, string, error) {
	t.Helper()
	o.StartCheck(context.Background(), o.Source, "as it is read")
	got, err := io.ReadAll(o.Source)
	if err != nil {
		return got, "", err
	}
	matched, err := o.Check(context.Background(), o.Source)
	return got, matched, err
}

// TestOpen: one entry point opens a file, standard input, a URL, a cache
// entry and a catalog's entry, each with the sum it is checked against
// (given, beside it, the entry's), and reads and checks the same bytes.
func TestOpen(t *testing.T) {
	t.Parallel()
	img := testpattern.Bytes(1<<20+300, 7)
	sum := sha256Hex(img)
	dir := t.TempDir()
	file := filepath.Join(dir, "os.img")
	if err := os.WriteFile(file, img, 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "SHA256SUMS"), []byte(sum+"  os.img\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	srv := flakyhttp.New(flakyhttp.Version{Data: img, ETag: `"v1"`}, nil)
	srv.Path = "/os.img"
	srv.Files["/os.img.sha256"] = []byte(sum + "\n")
	ts := httptest.NewServer(srv)
	defer ts.Close()
	catalogFile := filepath.Join(dir, "os_list.json")
	if err := os.WriteFile(catalogFile, []byte(`{"os_list": [{"name": "Demo OS", "url": "`+ts.URL+`/os.img", "extract_size": `+
		"1048876"+`, "image_download_sha256": "`+sum+`"}]}`), 0o644); err != nil {
		t.Fatal(err)
	}
	cache := t.TempDir()
	stdin := func() *os.File {
		f, err := os.Open(file)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { f.Close() })
		return f
	}
	for _, tc := range []struct {
		name    string
		ref     Ref
		label   string
		matched string // the sum it matched, in Check's words
		said    string // a note Open or the read gives
	}{
		{"a file, its sum beside it", Ref{Path: file}, file, "The image file matches the SHA-256 in " + filepath.Join(dir, "SHA256SUMS"), ""},
		{"a file, its sum given", Ref{Path: file, SHA256: sum}, file, "The image file matches the SHA-256 given", ""},
		{"standard input, its sum given", Ref{Path: "-", Stdin: stdin(), SHA256: sum}, "standard input", "The image file matches the SHA-256 given", ""},
		{"a URL, its sum beside it", Ref{Path: ts.URL + "/os.img"}, ts.URL + "/os.img", "The image file matches the SHA-256 in " + ts.URL + "/os.img.sha256", ""},
		{"a URL through the cache", Ref{Path: ts.URL + "/os.img", Cache: cache}, ts.URL + "/os.img", "The image file matches", ""},
		{"the cache's entry", Ref{Path: ts.URL + "/os.img", Cache: cache}, ts.URL + "/os.img", "The image file matches", "from the cache"},
		{"a catalog's entry", Ref{Catalog: catalogFile, OS: "Demo"}, "Demo OS (" + ts.URL + "/os.img)",
			"The image file matches the SHA-256 in the catalog's entry Demo OS (image_download_sha256)", `"Demo" is Demo OS`},
	} {
		// In order: the cache's entry is the one the URL before it made.
		t.Run(tc.name, func(t *testing.T) {
			n := &notes{}
			o, err := Open(context.Background(), tc.ref, OpenOptions{Note: n.note})
			if err != nil {
				t.Fatal(err)
			}
			defer o.Close()
			got, matched, err := readAll(t, o)
			if err != nil || !bytes.Equal(got, img) || !strings.HasPrefix(matched, tc.matched) || o.Label() != tc.label || o.Untrusted() != nil {
				t.Errorf("read %d bytes (want %d alike), matched %q (want %q), label %q (want %q), untrusted %v: %v\nnotes: %q",
					len(got), len(img), matched, tc.matched, o.Label(), tc.label, o.Untrusted(), err, n.said)
			}
			if tc.said != "" && !n.has(tc.said) {
				t.Errorf("notes %q, want one saying %q", n.said, tc.said)
			}
		})
	}
}

// TestOpenRefuses: what cannot be opened as asked is refused before
// anything is read: checksum settings that contradict each other, a
// fingerprint without a keyring, an image and a catalog entry both, an
// entry without a catalog, a wrong sum given, standard input to be read
// again, and the caller's own check.
func TestOpenRefuses(t *testing.T) {
	t.Parallel()
	mine := errors.New("the caller's own check")
	for _, tc := range []struct {
		name    string
		ref     Ref
		opts    OpenOptions
		is      error
		setting failure.Setting
	}{
		{"keyring and no sum", Ref{Path: "os.img", SHA256Keyring: "k.gpg", NoSHA256: true}, OpenOptions{}, ErrChecksumConflict, SettingKeyringNoSHA256},
		{"keyring and a sum", Ref{Path: "os.img", SHA256Keyring: "k.gpg", SHA256: strings.Repeat("a", 64)}, OpenOptions{}, ErrChecksumConflict, SettingKeyringSHA256},
		{"image and entry", Ref{Path: "os.img", Catalog: "c.json", OS: "x"}, OpenOptions{}, ErrImageAndOS, SettingOS},
		{"entry, no catalog", Ref{OS: "x"}, OpenOptions{}, ErrNoCatalog, SettingCatalog},
		{"standard input read again", Ref{Path: "-"}, OpenOptions{Reads: ReadAgain}, ErrReadOnce, ""},
		{"the caller's check", Ref{Path: "-"}, OpenOptions{BeforeRead: func(*Opened) error { return mine }}, mine, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := Open(context.Background(), tc.ref, tc.opts)
			if !errors.Is(err, tc.is) || failure.SettingOf(err) != tc.setting {
				t.Errorf("Open = %v (setting %q), want %v about %q", err, failure.SettingOf(err), tc.is, tc.setting)
			}
		})
	}
}

// TestOpenedNil: no image (a session writing blocks made for each card)
// is checked against nothing and read again by no one, without a panic.
func TestOpenedNil(t *testing.T) {
	var o *Opened
	matched, err := o.Check(context.Background(), nil)
	from, by := o.SumFrom()
	_, downloaded := o.Download(nil)
	if matched != "" || err != nil || from != "" || by != "" || o.Sum() != "" || o.Reopener() != nil || downloaded {
		t.Errorf("a nil Opened: matched %q (%v), sum from %q by %q, reopener %v, downloaded %v", matched, err, from, by, o.Reopener() != nil, downloaded)
	}
}
