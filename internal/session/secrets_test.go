package session

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io/fs"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/usbflash/usbflash/internal/drive"
	"github.com/usbflash/usbflash/internal/image"
	"github.com/usbflash/usbflash/internal/testkit/flakyhttp"
	"github.com/usbflash/usbflash/internal/testkit/testpattern"
	"github.com/usbflash/usbflash/internal/testkit/testpgp"
)

// everyEvent keeps each event of a session as text, every field shown.
type everyEvent struct {
	mu  sync.Mutex
	all []string
}

func (l *everyEvent) Observe(e Event) {
	b, err := json.Marshal(e)
	l.mu.Lock()
	defer l.mu.Unlock()
	l.all = append(l.all, fmt.Sprintf("%T %+v %s %v", e, e, b, err))
}

func (l *everyEvent) text() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return strings.Join(l.all, "\n")
}

// TestRunURLSecrets: a URL's password and query token appear in no event,
// error, report or cache file, whether the write succeeds or fails (a
// list beside it that says another sum, the image missing), and the
// cache's URL record is its owner's alone.
func TestRunURLSecrets(t *testing.T) {
	t.Parallel()
	img := testpattern.Bytes(2<<20+300, 61)
	file := xzBytes(t, img)
	pub := testpgp.New(t, "Publisher <pub@example.invalid>", "never")
	signedList := func() map[string]string {
		dir := t.TempDir()
		if err := os.WriteFile(filepath.Join(dir, "SHA256SUMS"), []byte(hexSum(file)+"  os.img.xz\n"), 0o644); err != nil {
			t.Fatal(err)
		}
		pub.Sign(dir, "SHA256SUMS", ".gpg")
		files := map[string]string{}
		entries, _ := os.ReadDir(dir)
		for _, e := range entries {
			b, _ := os.ReadFile(filepath.Join(dir, e.Name()))
			files["/d/"+e.Name()] = string(b)
		}
		return files
	}()
	for _, tc := range []struct {
		name  string
		path  string
		files map[string]string
		keys  string // --sha256-keyring
		says  string // a note that shows the list or map was read
		fails bool
	}{
		{name: "written, a list beside it", path: "/d/os.img.xz", files: map[string]string{"/d/os.img.xz.sha256": hexSum(file) + "\n"}},
		{name: "a list beside it without its line", path: "/d/os.img.xz", files: map[string]string{"/d/SHA256SUMS": hexSum(file) + "  other.img.xz\n"}},
		{name: "a signed list, a keyring", path: "/d/os.img.xz", files: signedList, keys: pub.Keyring(true), says: "is a good signature of"},
		{name: "a block map beside it", path: "/d/os.img.xz", files: map[string]string{"/d/os.img.bmap": string(bmapOf(t, img))}, says: "/d/os.img.bmap"},
		{name: "a keyring, no signed sum", path: "/d/os.img.xz", files: map[string]string{"/d/SHA256SUMS": hexSum(file) + "  other.img.xz\n"}, keys: pub.Keyring(true), fails: true},
		{name: "the list says another sum", path: "/d/os.img.xz", files: map[string]string{"/d/os.img.xz.sha256": strings.Repeat("2", 64) + "\n"}, fails: true},
		{name: "not found", path: "/d/gone.img.xz", fails: true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			srv := flakyhttp.New(flakyhttp.Version{Data: file, ETag: `"p1"`}, nil)
			srv.Path = "/d/os.img.xz"
			for p, body := range tc.files {
				srv.Files[p] = []byte(body)
			}
			ts := httptest.NewServer(srv)
			defer ts.Close()
			url := strings.Replace(ts.URL, "http://", "http://bob:hunter2@", 1) + tc.path + "?X-Amz-Signature=s3cr3t&X-Amz-Credential=AKIAKEY"
			dir := t.TempDir()
			report := &MemReport{}
			cache := filepath.Join(dir, "cache")
			_, spec := newSimCard(t)
			log := &everyEvent{}
			res, err := Run(context.Background(), Config{Image: image.Ref{Path: url, HTTP: instantHTTP(), Cache: cache, SHA256Keyring: tc.keys}, Engine: Engine{TransferSize: 1 << 20, Buffers: 2}, Output: Output{Observer: log, Report: report}}, []drive.Spec{spec})
			if tc.fails != (err != nil) {
				t.Fatalf("write: %v\n%s", err, log.text())
			}
			shown := []string{log.text(), errText(err), fmt.Sprintf("%+v", res)}
			shown = append(shown, report.Text())
			filepath.WalkDir(cache, func(p string, d fs.DirEntry, err error) error {
				if err != nil || d.IsDir() || strings.HasPrefix(d.Name(), "sha256-") || strings.HasSuffix(d.Name(), ".part") {
					return nil
				}
				if st, err := os.Stat(p); err == nil && st.Mode().Perm()&0o077 != 0 {
					t.Errorf("%s is mode %v: others may read it", d.Name(), st.Mode().Perm())
				}
				b, _ := os.ReadFile(p)
				shown = append(shown, string(b))
				return nil
			})
			for _, s := range shown {
				for _, secret := range []string{"hunter2", "s3cr3t", "AKIAKEY"} {
					if strings.Contains(s, secret) {
						t.Errorf("%q is shown:\n%s", secret, s)
					}
				}
			}
			if !strings.Contains(log.text(), tc.says) {
				t.Errorf("no event says %q:\n%s", tc.says, log.text())
			}
			if !strings.Contains(log.text()+errText(err), "bob:***@") {
				t.Errorf("the URL is not shown with its password replaced:\n%s", log.text())
			}
		})
	}
}

// TestRunURLPresigned: beside a pre-signed URL (its token valid for its
// own path alone) the checksum list, its signature and the block map
// answer 403: they are not there, said, and the write goes on.
func TestRunURLPresigned(t *testing.T) {
	t.Parallel()
	img := testpattern.Bytes(2<<20+300, 62)
	file := xzBytes(t, img)
	srv := flakyhttp.New(flakyhttp.Version{Data: file, ETag: `"p2"`}, nil)
	srv.Path = "/bucket/os.img.xz"
	srv.Query = "X-Amz-Signature=abc"
	srv.Files["/bucket/os.img.xz.sha256"] = []byte(hexSum(file) + "\n")
	ts := httptest.NewServer(srv)
	defer ts.Close()
	card, spec := newSimCard(t)
	log := &noteLog{}
	_, err := Run(context.Background(), Config{Image: image.Ref{Path: ts.URL + "/bucket/os.img.xz?" + srv.Query, HTTP: instantHTTP()}, Engine: Engine{TransferSize: 1 << 20, Buffers: 2}, Output: Output{Observer: log}}, []drive.Spec{spec})
	notes := strings.Join(log.all(), "\n")
	got, _ := os.ReadFile(card)
	if err != nil || !bytes.Equal(got[:len(img)], img) {
		t.Fatalf("write: %v\n%s", err, notes)
	}
	if !strings.Contains(notes, ts.URL+"/bucket/os.img.xz.sha256: the server answered 403 Forbidden: taken as not there") {
		t.Errorf("notes do not say the list was refused:\n%s", notes)
	}
}
