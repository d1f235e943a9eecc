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

// fill reads data through a fill of c from have bytes and closes it.
func fill(t *testing.T, c *Cache, url string, data []byte, have int64) (string, []string, error) {
	t.Helper()
	fl, err := c.Begin(Meta{URL: url, ETag: `"e"`, Size: int64(len(data))}, have)
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
	fl, err := c.Begin(Meta{URL: "http://h/os.img", ETag: `"e"`, Size: -1}, 0)
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
	fl, err := c.Begin(Meta{URL: url, ETag: `"e"`, Size: int64(len(data))}, 0)
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

// TestBusy: a .part another fill holds is not filled twice.
func TestBusy(t *testing.T) {
	c, err := Open(t.TempDir(), 0, 1)
	if err != nil {
		t.Fatal(err)
	}
	c.free = func(string) int64 { return -1 }
	fl, err := c.Begin(Meta{URL: "http://h/x", ETag: `"e"`, Size: 10}, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer fl.Close()
	if _, err := c.Begin(Meta{URL: "http://h/x", ETag: `"e"`, Size: 10}, 0); !errors.Is(err, ErrBusy) {
		t.Errorf("second Begin: %v, want ErrBusy", err)
	}
}
