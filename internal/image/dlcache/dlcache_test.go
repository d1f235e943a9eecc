package dlcache

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

func sumOf(b []byte) string {
	s := sha256.Sum256(b)
	return hex.EncodeToString(s[:])
}

// begin claims m's URL and begins its fill.
func begin(c *Cache, m Meta, have int64) (*Fill, error) {
	cl, err := c.Claim(m.URL)
	if err != nil {
		return nil, err
	}
	return cl.Begin(m, have)
}

// fill reads data through a fill of c from have bytes and closes it.
func fill(t *testing.T, c *Cache, url string, data []byte, have int64) (string, []string, error) {
	t.Helper()
	fl, err := begin(c, Meta{URL: url, ETag: `"e"`, Size: int64(len(data))}, have)
	if err != nil {
		return "", nil, err
	}
	var notes []string
	fl.Note = func(s string) { notes = append(notes, s) }
	got, err := io.ReadAll(fl.Reader(bytes.NewReader(data[have:])))
	if err != nil || !bytes.Equal(got, data) {
		t.Fatalf("the fill's reader gave %d bytes (%v), not the file", len(got), err)
	}
	p, err := fl.Close()
	return p, notes, err
}

func TestFill(t *testing.T) {
	data := bytes.Repeat([]byte("usbflash cache "), 100000) // 1.5 MB
	tests := []struct {
		name    string
		maxSize int64
		free    int64 // the file system's free bytes, -1: unknown
		want    error // Begin's
		kept    bool  // an entry is made
		dropped bool  // given up mid-way, said in a note
	}{
		{name: "fits", free: -1, kept: true},
		{name: "larger than the cache", maxSize: 1 << 20, free: -1, want: ErrNoRoom},
		{name: "would take the reserve", free: 2 << 20, want: ErrNoRoom},
		{name: "plenty of room", free: 1 << 40, kept: true},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			c, err := Open(t.TempDir(), tc.maxSize, 1<<20)
			if err != nil {
				t.Fatal(err)
			}
			c.free = func(string) int64 { return tc.free }
			p, _, err := fill(t, c, "http://h/os.img", data, 0)
			if !errors.Is(err, tc.want) {
				t.Fatalf("fill: %v, want %v", err, tc.want)
			}
			if tc.kept != (p != "") || tc.kept && c.Lookup(sumOf(data)) != p {
				t.Fatalf("entry %q, kept %v", p, tc.kept)
			}
		})
	}
}

// TestFillDiskFills: a disk that fills up while the file is read drops
// the .part (said once) and the reader still gives the whole file.
func TestFillDiskFills(t *testing.T) {
	data := bytes.Repeat([]byte{7}, 3<<20)
	c, err := Open(t.TempDir(), 0, 1<<20)
	if err != nil {
		t.Fatal(err)
	}
	c.every = 1 << 20
	calls := 0
	c.free = func(string) int64 {
		calls++
		if calls == 1 {
			return 1 << 30 // the first look: room
		}
		return 1 << 19 // then the disk filled
	}
	fl, err := begin(c, Meta{URL: "http://h/os.img", ETag: `"e"`, Size: -1}, 0)
	if err != nil {
		t.Fatal(err)
	}
	var notes []string
	fl.Note = func(s string) { notes = append(notes, s) }
	got, err := io.ReadAll(fl.Reader(bytes.NewReader(data)))
	if err != nil || !bytes.Equal(got, data) {
		t.Fatalf("read %d bytes, %v", len(got), err)
	}
	if p, err := fl.Close(); p != "" || err != nil {
		t.Fatalf("Close = %q, %v: want no entry", p, err)
	}
	if len(notes) != 1 || !strings.Contains(notes[0], "no room in the cache") {
		t.Errorf("notes %q", notes)
	}
	if _, err := os.Stat(c.partPath("http://h/os.img")); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("the .part is still there: %v", err)
	}
}

// TestPartResumes: a .part left by a run is what ForURL reports, a fill
// from it yields the whole file, and the entry's sum is the whole file's.
func TestPartResumes(t *testing.T) {
	data := bytes.Repeat([]byte("abcdefgh"), 50000)
	c, err := Open(t.TempDir(), 0, 1)
	if err != nil {
		t.Fatal(err)
	}
	c.free = func(string) int64 { return -1 }
	url := "http://h/os.img"
	fl, err := begin(c, Meta{URL: url, ETag: `"e"`, Size: int64(len(data))}, 0)
	if err != nil {
		t.Fatal(err)
	}
	io.ReadAll(io.LimitReader(fl.Reader(bytes.NewReader(data)), 12345))
	if p, _ := fl.Close(); p != "" {
		t.Fatal("an incomplete .part became an entry")
	}
	m, _, have, ok := c.ForURL(url)
	if !ok || m.SHA256 != "" || have != 12345 || m.Validator() != `"e"` {
		t.Fatalf("ForURL = %+v, %d, %v", m, have, ok)
	}
	p, _, err := fill(t, c, url, data, have)
	if err != nil || p != filepath.Join(c.Dir(), "sha256-"+sumOf(data)) {
		t.Fatalf("entry %q, %v", p, err)
	}
	if m, _, _, ok := c.ForURL(url); !ok || m.SHA256 != sumOf(data) {
		t.Errorf("ForURL after = %+v, %v", m, ok)
	}
}

// TestTrim: past its size the cache removes the entries used longest ago.
func TestTrim(t *testing.T) {
	c, err := Open(t.TempDir(), 2500, 1)
	if err != nil {
		t.Fatal(err)
	}
	c.free = func(string) int64 { return -1 }
	var sums []string
	for i := range 3 {
		data := bytes.Repeat([]byte{byte(i)}, 1000)
		if _, _, err := fill(t, c, "http://h/"+string(rune('a'+i)), data, 0); err != nil {
			t.Fatal(err)
		}
		sums = append(sums, sumOf(data))
		// Used in order: the first longest ago.
		old := time.Now().Add(time.Duration(i-10) * time.Minute)
		os.Chtimes(filepath.Join(c.Dir(), "sha256-"+sumOf(data)), old, old)
	}
	if c.Lookup(sums[0]) != "" || c.Lookup(sums[1]) == "" || c.Lookup(sums[2]) == "" {
		t.Errorf("after trim: %v %v %v, want the first gone", c.Lookup(sums[0]), c.Lookup(sums[1]), c.Lookup(sums[2]))
	}
}

// TestClaim: a URL another run holds (filling its .part, or choosing
// where to resume) cannot be claimed, so that its .part is never resumed
// or written by a run that does not own it; it can once the fill closed,
// and a claim given up leaves no empty .part behind.
func TestClaim(t *testing.T) {
	c, err := Open(t.TempDir(), 0, 1)
	if err != nil {
		t.Fatal(err)
	}
	c.free = func(string) int64 { return -1 }
	const url = "http://h/x"
	first, err := c.Claim(url)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := c.Claim(url); !errors.Is(err, ErrBusy) {
		t.Fatalf("a second claim while the first chooses: %v, want ErrBusy", err)
	}
	fl, err := first.Begin(Meta{URL: url, ETag: `"e"`, Size: 10}, 0)
	if err != nil {
		t.Fatal(err)
	}
	io.ReadAll(io.LimitReader(fl.Reader(strings.NewReader("0123456789")), 4))
	if _, err := c.Claim(url); !errors.Is(err, ErrBusy) {
		t.Fatalf("a second claim while the first fills: %v, want ErrBusy", err)
	}
	fl.Close()
	second, err := c.Claim(url)
	if err != nil {
		t.Fatalf("a claim once the fill closed: %v", err)
	}
	if _, _, have, ok := c.ForURL(url); !ok || have != 4 {
		t.Errorf("the .part the first run left: %d bytes, %v; want 4 to resume", have, ok)
	}
	second.Release()
	other, err := c.Claim("http://h/y")
	if err != nil {
		t.Fatal(err)
	}
	other.Release()
	if _, err := os.Stat(c.partPath("http://h/y")); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("a claim given up left its empty .part: %v", err)
	}
}

// TestRecordShowsNoSecret: the URL record names the URL without its
// password and query, is its owner's alone, and still finds the URL's
// entry and .part; another URL (another token) finds nothing.
func TestRecordShowsNoSecret(t *testing.T) {
	tests := []struct{ url, shown string }{
		{"https://bob:hunter2@h/os.img.xz?X-Amz-Signature=s3cr3t", "https://bob:***@h/os.img.xz?***"},
		{"https://h/os.img.xz?token=s3cr3t", "https://h/os.img.xz?***"},
	}
	for _, tc := range tests {
		c, err := Open(t.TempDir(), 0, 1)
		if err != nil {
			t.Fatal(err)
		}
		c.free = func(string) int64 { return -1 }
		data := []byte("the image")
		p, notes, err := fill(t, c, tc.url, data, 0)
		if err != nil || p == "" {
			t.Fatalf("fill: %q, %v", p, err)
		}
		rec := filepath.Join(c.Dir(), urlKey(tc.url)+".json")
		raw, err := os.ReadFile(rec)
		if err != nil {
			t.Fatal(err)
		}
		if st, _ := os.Stat(rec); st.Mode().Perm() != 0o600 {
			t.Errorf("record mode %v, want 0600", st.Mode().Perm())
		}
		for _, leak := range append([]string{string(raw)}, notes...) {
			if strings.Contains(leak, "hunter2") || strings.Contains(leak, "s3cr3t") {
				t.Errorf("a secret is shown: %s", leak)
			}
		}
		if !strings.Contains(string(raw), `"url":"`+tc.shown+`"`) {
			t.Errorf("record %s, want the URL shown as %s", raw, tc.shown)
		}
		if m, path, _, ok := c.ForURL(tc.url); !ok || path != p || m.URL != tc.url {
			t.Errorf("ForURL = %+v, %q, %v; want the entry %s", m, path, ok, p)
		}
		if _, _, _, ok := c.ForURL(tc.url + "x"); ok {
			t.Error("another URL found this URL's entry")
		}
	}
}

// TestDrop: an entry dropped is gone, and its URL finds nothing.
func TestDrop(t *testing.T) {
	c, err := Open(t.TempDir(), 0, 1)
	if err != nil {
		t.Fatal(err)
	}
	c.free = func(string) int64 { return -1 }
	data := []byte("the image")
	if _, _, err := fill(t, c, "http://h/os.img", data, 0); err != nil {
		t.Fatal(err)
	}
	if err := c.Drop(sumOf(data)); err != nil {
		t.Fatal(err)
	}
	if c.Lookup(sumOf(data)) != "" {
		t.Error("the entry is still there")
	}
	if _, _, _, ok := c.ForURL("http://h/os.img"); ok {
		t.Error("the URL still finds its dropped entry")
	}
	if err := c.Drop(sumOf(data)); err != nil {
		t.Errorf("dropping it again: %v", err)
	}
}

// TestEntryOfAnotherSize: a URL's complete entry whose file is not the
// size its record says (cut short or grown on a damaged disk) is not
// reported, and goes: its bytes are not the ones it is named by, and read
// as the image its size alone misleads the checks made before any byte
// is hashed (a 1 MB entry of a 48 MB image was refused as too small to
// be an OS image).
func TestEntryOfAnotherSize(t *testing.T) {
	data := bytes.Repeat([]byte("usbflash cache "), 10000)
	for _, tc := range []struct {
		name   string
		change func(path string) error
		kept   bool
	}{
		{"as written", func(string) error { return nil }, true},
		{"cut short", func(p string) error { return os.Truncate(p, 1000) }, false},
		{"empty", func(p string) error { return os.Truncate(p, 0) }, false},
		{"grown", func(p string) error { return os.Truncate(p, int64(len(data))+1) }, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c, err := Open(t.TempDir(), 0, 0)
			if err != nil {
				t.Fatal(err)
			}
			c.free = func(string) int64 { return -1 }
			const url = "http://h/os.img"
			p, _, err := fill(t, c, url, data, 0)
			if err != nil || p == "" {
				t.Fatalf("fill: %q, %v", p, err)
			}
			if err := tc.change(p); err != nil {
				t.Fatal(err)
			}
			m, path, size, ok := c.ForURL(url)
			if ok != tc.kept || tc.kept && (path != p || size != int64(len(data)) || m.SHA256 != sumOf(data)) {
				t.Fatalf("ForURL = %+v, %q, %d, %v; want the entry reported %v", m, path, size, ok, tc.kept)
			}
			if _, err := os.Stat(p); (err == nil) != tc.kept {
				t.Errorf("the entry's file: %v, want it kept %v", err, tc.kept)
			}
		})
	}
}
