package session

import (
	"bytes"
	"context"
	"errors"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/usbflash/usbflash/internal/drive"
	"github.com/usbflash/usbflash/internal/failure"
	"github.com/usbflash/usbflash/internal/image"
	"github.com/usbflash/usbflash/internal/testkit/flakyhttp"
	"github.com/usbflash/usbflash/internal/testkit/testimage"
	"github.com/usbflash/usbflash/internal/testkit/testpattern"
	"github.com/usbflash/usbflash/internal/testkit/testpgp"
)

// TestBlockMapSignature: a block map beside an image (a URL or a file)
// that is signed, detached or clear-signed, is checked with the keyring the
// checksum lists are, as bmaptool's --keyring does: a good signature by
// one of its keys is said and the map used; another key's or none refuses
// the write before anything is written. With no keyring a signed map is
// used and the signature said, once, not to be checked.
func TestBlockMapSignature(t *testing.T) {
	t.Parallel()
	img := testpattern.Bytes(3<<20+700, 51)
	file := xzBytes(t, img)
	pub := testpgp.New(t, "Publisher <pub@example.invalid>", "never")
	other := testpgp.New(t, "Someone else <else@example.invalid>", "never")
	// signed is the map, signed by s as how says ("" unsigned), and the
	// files beside it: name -> bytes.
	signed := func(s *testpgp.Signer, how string) map[string][]byte {
		dir := t.TempDir()
		if err := os.WriteFile(filepath.Join(dir, "os.img.bmap"), bmapOf(t, img), 0o644); err != nil {
			t.Fatal(err)
		}
		if how != "" {
			s.Sign(dir, "os.img.bmap", how)
		}
		files := map[string][]byte{}
		entries, _ := os.ReadDir(dir)
		for _, e := range entries {
			files[e.Name()], _ = os.ReadFile(filepath.Join(dir, e.Name()))
		}
		return files
	}
	keys := pub.Keyring(true)
	for _, tc := range []struct {
		name  string
		url   bool
		files map[string][]byte
		keys  string
		fpr   string        // the one key of keys that may sign
		note  string        // said when the write succeeds
		want  error         // nil: written with the map
		class failure.Class // of want
	}{
		{name: "URL, .asc, good", url: true, files: signed(pub, ".asc"), keys: keys, note: "os.img.bmap.asc is a good signature of block map"},
		{name: "URL, clear-signed, good", url: true, files: signed(pub, "clear"), keys: keys, note: "os.img.bmap's signature was checked: a good signature by Publisher"},
		{name: "URL, another key", url: true, files: signed(other, ".sig"), keys: keys, want: image.ErrUnknownSigner},
		{name: "URL, unsigned", url: true, files: signed(nil, ""), keys: keys, want: image.ErrListUnsigned},
		{name: "URL, .sig, no keyring", url: true, files: signed(pub, ".sig"), note: "has a signature beside it (http"},
		{name: "file, clear-signed, no keyring", files: signed(pub, "clear"), note: "is PGP clear-signed; its signature was not checked: no keyring was given"},
		{name: "file, .gpg, good", files: signed(pub, ".gpg"), keys: keys, note: "os.img.bmap.gpg is a good signature of block map"},
		{name: "file, .gpg, the fingerprint's key", files: signed(pub, ".gpg"), keys: keys, fpr: strings.ToLower(pub.Fingerprint),
			note: "os.img.bmap.gpg is a good signature of block map"},
		{name: "a fingerprint of no key in the keyring", files: signed(pub, ".gpg"), keys: keys, fpr: other.Fingerprint, class: failure.Usage},
		{name: "a fingerprint without a keyring", files: signed(pub, ".gpg"), fpr: pub.Fingerprint, class: failure.Usage},
		{name: "file, .gpg over a changed map", files: func() map[string][]byte {
			f := signed(pub, ".gpg")
			f["os.img.bmap"] = append(f["os.img.bmap"], "\n"...)
			return f
		}(), keys: keys, want: image.ErrBadSignature},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			var imageRef string
			if tc.url {
				srv := flakyhttp.New(flakyhttp.Version{Data: file, ETag: `"s"`}, nil)
				srv.Path = "/d/os.img.xz"
				for name, b := range tc.files {
					srv.Files["/d/"+name] = b
				}
				ts := httptest.NewServer(srv)
				defer ts.Close()
				imageRef = ts.URL + srv.Path
			} else {
				dir := t.TempDir()
				imageRef = filepath.Join(dir, "os.img.xz")
				tc.files["os.img.xz"] = file
				for name, b := range tc.files {
					if err := os.WriteFile(filepath.Join(dir, name), b, 0o644); err != nil {
						t.Fatal(err)
					}
				}
			}
			card, spec := newSimCard(t)
			log := &eventLog{}
			_, err := Run(context.Background(), Config{Image: image.Ref{Path: imageRef, SHA256Keyring: tc.keys, SHA256Fingerprint: tc.fpr, HTTP: instantHTTP()}, Engine: Engine{TransferSize: 1 << 20, Buffers: 2}, Output: Output{Observer: log}}, []drive.Spec{spec})
			notes := strings.Join(log.all(), "\n")
			got, _ := os.ReadFile(card)
			if tc.class == failure.Usage {
				if failure.Of(err) != failure.Usage || len(bytes.Trim(got, "\x00")) != 0 {
					t.Fatalf("write: %v (class %v), want a usage error, nothing written", err, failure.Of(err))
				}
				return
			}
			if tc.want != nil {
				if !errors.Is(err, tc.want) || failure.Of(err) != failure.Image || len(bytes.Trim(got, "\x00")) != 0 {
					t.Fatalf("write: %v (class %v), want %v, an image error, nothing written\n%s", err, failure.Of(err), tc.want, notes)
				}
				return
			}
			if err != nil || !testimage.Holds(card, img) || !strings.HasSuffix(log.map_, "os.img.bmap") {
				t.Fatalf("write: %v, holds %v, map %q\n%s", err, testimage.Holds(card, img), log.map_, notes)
			}
			if strings.Count(notes, tc.note) != 1 {
				t.Errorf("notes:\n%s\nwant once %q", notes, tc.note)
			}
		})
	}
}
