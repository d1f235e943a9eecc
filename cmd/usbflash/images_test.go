package main

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"path"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// TestImagesAndOS: `images --catalog` lists an os_list (a table and
// --json), and `write --os NAME` and `verify --os NAME` pick an entry by its
// name or the start of only one entry's, with no IMAGE argument.
// osEntry is an os_list entry for the image img, downloaded as file.
func osEntry(name, url string, img, file []byte) string {
	sum := func(b []byte) string { h := sha256.Sum256(b); return hex.EncodeToString(h[:]) }
	return fmt.Sprintf(`{"name": %q, "url": %q, "release_date": "2026-11-19", "extract_size": %d, "extract_sha256": %q,
		"image_download_size": %d, "image_download_sha256": %q}`, name, url, len(img), sum(img), len(file), sum(file))
}

// serveFiles serves files by path (ranges too) until the test ends.
func serveFiles(t *testing.T, files map[string][]byte) *httptest.Server {
	mux := http.NewServeMux()
	for p, b := range files {
		mux.HandleFunc(p, func(w http.ResponseWriter, r *http.Request) {
			http.ServeContent(w, r, path.Base(p), time.Unix(1e9, 0), bytes.NewReader(b))
		})
	}
	ts := httptest.NewServer(mux)
	t.Cleanup(ts.Close)
	return ts
}

func TestImagesAndOS(t *testing.T) {
	img := testImage(300<<10 + 512)
	file := compress(t, "xz", img)
	list := `{"os_list": [` + osEntry("Good OS", "good.img.xz", img, file) + `, {"name": "Other", "url": "other.img.xz"}]}`
	ts := serveFiles(t, map[string][]byte{"/good.img.xz": file, "/os_list.json": []byte(list)})
	catalog := ts.URL + "/os_list.json"
	card := filepath.Join(t.TempDir(), "card.img")

	for _, tc := range []struct {
		name string
		args []string
		code int
		out  []string // in stdout, in order
	}{
		{"table", []string{"images", "--catalog", catalog}, 0, []string{"NAME", "RELEASED", "Good OS", "2026-11-19", "Other"}},
		{"json", []string{"images", "--json", "--catalog", catalog}, 0, []string{`"name":"Good OS"`, `"name":"Other"`}},
		{"no catalog", []string{"images", "--catalog", ""}, 2, nil},
		{"write by prefix", []string{"write", "--yes", "--quiet", "--transfer-size", "64KiB", "--catalog", catalog, "--os", "good", "sim:" + card + "?size=1MiB"}, 0, nil},
		{"verify by name", []string{"verify", "--quiet", "--catalog", catalog, "--os", "Good OS", "sim:" + card + "?size=1MiB"}, 0, nil},
		{"an image and --os", []string{"verify", "--catalog", catalog, "--os", "Good OS", ts.URL + "/good.img.xz", "sim:" + card}, 2, nil},
		{"no such entry", []string{"write", "--yes", "--catalog", catalog, "--os", "Nope", "sim:" + card}, 2, nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := runCLI(t, tc.args...)
			if r.code != tc.code {
				t.Fatalf("exit %d, want %d\nstdout: %s\nstderr: %s", r.code, tc.code, r.stdout, r.stderr)
			}
			rest := r.stdout
			for _, want := range tc.out {
				i := strings.Index(rest, want)
				if i < 0 {
					t.Fatalf("stdout lacks %q (in order):\n%s", want, r.stdout)
				}
				rest = rest[i+len(want):]
			}
			if tc.name == "json" {
				for line := range strings.Lines(r.stdout) {
					if !json.Valid([]byte(line)) {
						t.Errorf("not JSON: %q", line)
					}
				}
			}
		})
	}
	got, err := os.ReadFile(card)
	if err != nil || !bytes.Equal(got[:len(img)], img) {
		t.Fatalf("the card is not Good OS's image: %v", err)
	}
}
