package session

import (
	"bytes"
	"context"
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
)

// TestRunArchiveFormats (issue 46): lz4, 7z and tar images (plain and
// compressed) are written byte-exact from a file, standard input and a
// URL, checked against the download's SHA-256 before the first transfer;
// their damaged variants (cut short, a byte changed) fail before the first
// transfer is written, so the card never boots a broken image.
func TestRunArchiveFormats(t *testing.T) {
	t.Parallel()
	img := testpattern.Bytes(3<<20+700, 46)
	img[510], img[511] = 0x55, 0xaa
	for _, format := range []string{"lz4", "7z", "tar", "tar.gzip", "tar.xz", "tar.lz4", "tar.zstd"} {
		file := testimage.Compress(t, format, img)
		name := "os.img." + format
		cut := file[:len(file)*3/4]
		flipped := bytes.Clone(file)
		flipped[len(file)/2] ^= 0x10
		for _, input := range []string{"file", "stdin", "url"} {
			for _, tc := range []struct {
				what    string
				data    []byte
				damaged bool
			}{{"whole", file, false}, {"cut short", cut, true}, {"a byte changed", flipped, true}} {
				if format == "tar" && tc.what == "a byte changed" {
					continue // a plain tar has no checksum of its data: only the publisher's sum tells
				}
				t.Run(format+"/"+input+"/"+tc.what, func(t *testing.T) {
					t.Parallel()
					dir := t.TempDir()
					card, spec := newSimCard(t)
					old := bytes.Repeat([]byte{0xa5}, 8<<20)
					if err := os.WriteFile(card, old, 0o644); err != nil {
						t.Fatal(err)
					}
					path := filepath.Join(dir, name)
					if err := os.WriteFile(path, tc.data, 0o644); err != nil {
						t.Fatal(err)
					}
					cfg := Config{Image: image.Ref{Path: path, HTTP: instantHTTP()}, Engine: Engine{TransferSize: 1 << 20, Buffers: 2, Verify: true}}
					if !tc.damaged {
						cfg.Image.SHA256 = hexSum(file) // the publisher's: of the file as downloaded
					}
					switch input {
					case "stdin":
						cfg.Image.Path, cfg.Image.Stdin = "-", pipeOf(t, tc.data)
					case "url":
						srv := flakyhttp.New(flakyhttp.Version{Data: tc.data, ETag: `"a"`}, nil)
						srv.Path = "/d/" + name
						ts := httptest.NewServer(srv)
						t.Cleanup(ts.Close)
						cfg.Image.Path = ts.URL + srv.Path
					}
					log := &noteLog{}
					cfg.Output.Observer = log
					_, err := Run(context.Background(), cfg, []drive.Spec{spec})
					got, rerr := os.ReadFile(card)
					if rerr != nil {
						t.Fatal(rerr)
					}
					if !tc.damaged {
						if err != nil {
							t.Fatalf("write: %v\nnotes:\n%s", err, strings.Join(log.all(), "\n"))
						}
						if !bytes.Equal(got[:len(img)], img) {
							t.Fatal("the card does not hold the image")
						}
						if notes := strings.Join(log.all(), "\n"); !strings.Contains(notes, "The image file matches the SHA-256 given") {
							t.Errorf("notes:\n%s\nwant the download's sum said matched", notes)
						}
						return
					}
					if failure.Of(err) != failure.Image {
						t.Fatalf("write: %v (class %v); want an image error", err, failure.Of(err))
					}
					if bytes.Equal(got[:512], img[:512]) {
						t.Fatal("the card's first transfer was written: it boots a damaged image")
					}
				})
			}
		}
	}
}
