// Package dlcache keeps images read from URLs, so that the next write of
// the same image reads a local file: entries are named by the SHA-256 of
// the file as served (content-addressed: sha256-HEX), and an entry being
// filled is a URL's .part file, written while the cards are written and
// resumed by the next run (not only within one) when the server's
// validator (ETag, else Last-Modified) is still the one the .part was
// begun with. The cache is bounded by a size, oldest entries going first,
// and by the free space of its file system: it never takes the last
// Reserve bytes, and a .part that would is dropped while the write goes on
// from the network.
//
// A URL's files are claimed (Claim: an flock on its .part) before anything
// is asked of them, so that two processes sharing a cache never resume
// each other's .part: the second reads the network without the cache. An
// entry's name is its SHA-256 as the fill hashed it; a reader compares
// what it read with it (the session's download check), and Drop removes an
// entry that does not match. The URL record names the URL as shown.URL
// shows it (no password, no query) and the URL itself only by its SHA-256,
// in a file only its owner reads.
package dlcache

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"hash"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"time"

	"github.com/usbflash/usbflash/internal/failure"
	"github.com/usbflash/usbflash/internal/lib/flock"
	"github.com/usbflash/usbflash/internal/lib/shown"
)

// DefaultReserve is the free space a cache never takes: 1 GiB, or a
// tenth of a smaller file system.
const DefaultReserve = 1 << 30

// checkEvery is how many bytes a fill writes between looks at the free
// space.
const checkEvery = 64 << 20

// Cache is a directory of images.
type Cache struct {
	dir     string
	maxSize int64 // 0: no bound but the free space
	reserve int64
	// free is the file system's free bytes, -1 when unknown; a field so
	// that tests can make a disk fill up.
	free func(dir string) int64
	// every is how many bytes a fill writes between looks at the free
	// space (checkEvery; a field for tests).
	every int64
}

// Open uses dir (made if missing) as a cache of at most maxSize bytes (0:
// bounded by the free space alone), leaving reserve bytes free (0:
// DefaultReserve, or a tenth of a file system smaller than 10 GiB).
func Open(dir string, maxSize, reserve int64) (*Cache, error) {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, failure.Wrap(failure.Usage, fmt.Errorf("cache %s: %w", dir, err))
	}
	if reserve <= 0 {
		reserve = DefaultReserve
		if total := totalSpace(dir); total > 0 {
			reserve = min(reserve, total/10)
		}
	}
	return &Cache{dir: dir, maxSize: max(maxSize, 0), reserve: reserve, free: freeSpace, every: checkEvery}, nil
}

// Dir is the cache's directory.
func (c *Cache) Dir() string { return c.dir }

// Lookup is the path of the complete entry whose SHA-256 is sum (lower-case
// hex), "" when there is none.
func (c *Cache) Lookup(sum string) string {
	p := filepath.Join(c.dir, "sha256-"+sum)
	if st, err := os.Stat(p); err == nil && st.Mode().IsRegular() {
		now := time.Now()
		os.Chtimes(p, now, now) // used: the last to go
		return p
	}
	return ""
}

// Meta is what the cache keeps of a URL: the validators and size of the
// file it served, its name, and once complete its SHA-256. URL is the
// URL as given; the record on disk holds it as shown.URL shows it, with
// the SHA-256 of the URL as given to match it by.
type Meta struct {
	URL          string `json:"url"`
	URLSHA256    string `json:"url_sha256,omitempty"`
	ETag         string `json:"etag,omitempty"`
	LastModified string `json:"last_modified,omitempty"`
	Size         int64  `json:"size"`
	Name         string `json:"name,omitempty"`
	SHA256       string `json:"sha256,omitempty"`
}

// Validator is what a resume's If-Range sends.
func (m Meta) Validator() string {
	if m.ETag != "" {
		return m.ETag
	}
	return m.LastModified
}

// urlKey names a URL's files.
func urlKey(url string) string { return "url-" + urlSum(url)[:24] }

// urlSum is the SHA-256 of a URL as given, which its record is matched by.
func urlSum(url string) string {
	s := sha256.Sum256([]byte(url))
	return hex.EncodeToString(s[:])
}

// ForURL is what the cache knows of url: a complete entry (Meta.SHA256
// set, its path) or a .part (Meta.SHA256 "", the bytes it holds). A
// complete entry whose file is not its record's size is dropped.
func (c *Cache) ForURL(url string) (Meta, string, int64, bool) {
	data, err := os.ReadFile(filepath.Join(c.dir, urlKey(url)+".json"))
	var m Meta
	if err != nil || json.Unmarshal(data, &m) != nil || m.URLSHA256 != urlSum(url) {
		return Meta{}, "", 0, false
	}
	m.URL = url
	if m.SHA256 != "" {
		p := c.Lookup(m.SHA256)
		if p == "" {
			return m, p, m.Size, false
		}
		// An entry of another size than its record's is damaged: its
		// size would mislead the checks made before it is hashed.
		if st, err := os.Stat(p); err != nil || st.Size() != m.Size {
			c.Drop(m.SHA256)
			return Meta{}, "", 0, false
		}
		return m, p, m.Size, true
	}
	st, err := os.Stat(c.partPath(url))
	if err != nil || m.Validator() == "" || m.Size >= 0 && st.Size() > m.Size {
		return Meta{}, "", 0, false
	}
	return m, c.partPath(url), st.Size(), true
}

func (c *Cache) partPath(url string) string { return filepath.Join(c.dir, urlKey(url)+".part") }

// saveMeta writes m's record: the URL as shown.URL shows it and the SHA-256
// of the URL as given, readable by its owner only (a URL's path can be
// private too).
func (c *Cache) saveMeta(m Meta) error {
	rec := m
	rec.URL, rec.URLSHA256 = shown.URL(m.URL), urlSum(m.URL)
	data, err := json.Marshal(rec)
	if err != nil {
		return err
	}
	p := filepath.Join(c.dir, urlKey(m.URL)+".json")
	tmp := p + ".tmp"
	os.Remove(tmp) // WriteFile keeps the mode of a file that exists
	if err := os.WriteFile(tmp, data, 0o600); err != nil {
		return err
	}
	return os.Rename(tmp, p)
}

// Drop removes the entry whose SHA-256 is sum: its bytes are not the ones
// it is named by (a damaged disk, a file changed behind the cache's back).
// The URL records that name it then find nothing, and the next read of
// their URL asks the server.
func (c *Cache) Drop(sum string) error {
	err := os.Remove(filepath.Join(c.dir, "sha256-"+sum))
	if errors.Is(err, fs.ErrNotExist) {
		return nil
	}
	return err
}

// ErrNoRoom: the cache would take the free space it must leave, or pass its
// size bound.
var ErrNoRoom = errors.New("no room in the cache")

// ErrBusy: another run is filling the same URL's .part.
var ErrBusy = errors.New("another run is reading this URL into the cache")

// Claim is a URL's files held by this run: its .part, open and locked.
// Only the holder of the claim reads the URL's record to choose where to
// resume, and fills the .part; another run's Claim of the URL fails with
// ErrBusy until Begin's fill is closed or Release is called.
type Claim struct {
	c   *Cache
	url string
	f   *os.File
}

// Claim locks url's .part (made empty if missing) for this run, or fails
// with ErrBusy when another run holds it.
func (c *Cache) Claim(url string) (*Claim, error) {
	f, err := os.OpenFile(c.partPath(url), os.O_RDWR|os.O_CREATE, 0o644) // the image, no secret
	if err != nil {
		return nil, err
	}
	if err := flock.Lock(f, true); err != nil {
		f.Close()
		if errors.Is(err, flock.ErrLocked) {
			return nil, ErrBusy
		}
		return nil, err
	}
	return &Claim{c: c, url: url, f: f}, nil
}

// Release gives the claim up without a fill: an empty .part it made goes.
func (cl *Claim) Release() {
	if cl.f == nil {
		return
	}
	if st, err := cl.f.Stat(); err == nil && st.Size() == 0 {
		os.Remove(cl.f.Name())
	}
	cl.f.Close()
	cl.f = nil
}

// Fill is a URL's .part being written: Reader gives the bytes the .part
// already held (when the server resumed it) and then the network's,
// writing the latter to the .part. Once every byte was read, Close makes it
// an entry.
type Fill struct {
	c        *Cache
	m        Meta
	f        *os.File
	h        hash.Hash
	written  int64 // bytes in the .part
	sinceChk int64
	dropped  error // why the .part was given up mid-way; nil: still filling
	done     bool  // the source reached its end
	// Note is told of a .part given up mid-way and of an entry made.
	Note func(string)
}

// Begin starts filling the claimed URL's .part for the file m describes
// (its validators and size from the server's answer): from have bytes,
// which the .part holds and the server resumed after, or from the start
// (have 0). It refuses (ErrNoRoom) a file of known size that would not
// fit, releasing the claim; the fill holds the claim until Close.
func (cl *Claim) Begin(m Meta, have int64) (*Fill, error) {
	c, f := cl.c, cl.f
	if f == nil || m.URL != cl.url {
		return nil, errors.New("dlcache: Begin without the URL's claim")
	}
	fail := func(err error) (*Fill, error) {
		cl.Release()
		return nil, err
	}
	if m.Size >= 0 {
		if c.maxSize > 0 && m.Size > c.maxSize {
			return fail(fmt.Errorf("%w: the file is %d bytes, the cache at most %d", ErrNoRoom, m.Size, c.maxSize))
		}
		if free := c.free(c.dir); free >= 0 && free-(m.Size-have) < c.reserve {
			return fail(fmt.Errorf("%w: %d bytes free, %d needed and %d kept free", ErrNoRoom, free, m.Size-have, c.reserve))
		}
	}
	fl := &Fill{c: c, m: m, f: f, h: sha256.New()}
	if have > 0 {
		// The bytes kept are hashed now; the reader serves them first.
		if _, err := io.Copy(fl.h, io.NewSectionReader(f, 0, have)); err != nil {
			return fail(err)
		}
	}
	if err := f.Truncate(have); err != nil {
		return fail(err)
	}
	if _, err := f.Seek(have, io.SeekStart); err != nil {
		return fail(err)
	}
	fl.written = have
	m.SHA256 = ""
	if err := c.saveMeta(m); err != nil {
		return fail(err)
	}
	cl.f = nil // the fill's now
	return fl, nil
}

// Reader is the whole file: the .part's bytes, then net's (which must
// start where they end), each of the latter written to the .part as it
// passes.
func (fl *Fill) Reader(net io.Reader) io.Reader {
	prefix := io.NewSectionReader(fl.f, 0, fl.written)
	return io.MultiReader(prefix, &tee{fl: fl, r: net})
}

type tee struct {
	fl *Fill
	r  io.Reader
}

func (t *tee) Read(p []byte) (int, error) {
	n, err := t.r.Read(p)
	t.fl.keep(p[:n])
	if err == io.EOF {
		t.fl.done = true
	}
	return n, err
}

// keep writes bytes to the .part, or gives the .part up when the disk
// would fill or the file grows past what was said.
func (fl *Fill) keep(p []byte) {
	if fl.dropped != nil || len(p) == 0 {
		return
	}
	fl.sinceChk += int64(len(p))
	if fl.sinceChk >= fl.c.every || fl.m.Size < 0 && fl.written == 0 {
		fl.sinceChk = 0
		if free := fl.c.free(fl.c.dir); free >= 0 && free-int64(len(p)) < fl.c.reserve {
			fl.drop(fmt.Errorf("%w: %d bytes free, %d kept free", ErrNoRoom, free, fl.c.reserve))
			return
		}
	}
	if fl.c.maxSize > 0 && fl.written+int64(len(p)) > fl.c.maxSize {
		fl.drop(fmt.Errorf("%w: the file passed the cache's %d bytes", ErrNoRoom, fl.c.maxSize))
		return
	}
	if _, err := fl.f.Write(p); err != nil {
		fl.drop(err)
		return
	}
	fl.h.Write(p)
	fl.written += int64(len(p))
}

// drop gives the .part up: the write goes on from the network.
func (fl *Fill) drop(err error) {
	fl.dropped = err
	fl.f.Truncate(0)
	os.Remove(fl.f.Name())
	os.Remove(filepath.Join(fl.c.dir, urlKey(fl.m.URL)+".json"))
	if fl.Note != nil {
		fl.Note(fmt.Sprintf("Not caching %s: %v", shown.URL(fl.m.URL), err))
	}
}

// Remaining is how many bytes of a file of known size the .part lacks, -1
// when the size is not known or the .part was given up.
func (fl *Fill) Remaining() int64 {
	if fl.m.Size < 0 || fl.dropped != nil {
		return -1
	}
	return fl.m.Size - fl.written
}

// Close ends the fill: a .part that holds the whole file (its size, or its
// end was read) becomes the entry sha256-HEX, and the cache is brought
// within its size by removing the entries used longest ago; an incomplete
// one stays for the next run to resume. It returns the entry's path, ""
// when there is none.
func (fl *Fill) Close() (string, error) {
	defer fl.f.Close()
	if fl.dropped != nil {
		return "", nil
	}
	complete := fl.m.Size >= 0 && fl.written == fl.m.Size || fl.m.Size < 0 && fl.done
	if !complete {
		return "", nil
	}
	sum := hex.EncodeToString(fl.h.Sum(nil))
	entry := filepath.Join(fl.c.dir, "sha256-"+sum)
	if err := os.Rename(fl.f.Name(), entry); err != nil {
		return "", err
	}
	fl.m.SHA256, fl.m.Size = sum, fl.written
	if err := fl.c.saveMeta(fl.m); err != nil {
		return "", err
	}
	fl.c.trim(entry)
	if fl.Note != nil {
		fl.Note(fmt.Sprintf("Cached %s as %s", shown.URL(fl.m.URL), entry))
	}
	return entry, nil
}

// trim removes the entries used longest ago (but keep) until the cache is
// within its size.
func (c *Cache) trim(keep string) {
	if c.maxSize <= 0 {
		return
	}
	entries, err := filepath.Glob(filepath.Join(c.dir, "sha256-*"))
	if err != nil {
		return
	}
	type entry struct {
		path string
		size int64
		used time.Time
	}
	var all []entry
	var total int64
	for _, p := range entries {
		st, err := os.Stat(p)
		if err != nil || !st.Mode().IsRegular() {
			continue
		}
		all = append(all, entry{p, st.Size(), st.ModTime()})
		total += st.Size()
	}
	slices.SortFunc(all, func(a, b entry) int { return a.used.Compare(b.used) })
	for _, e := range all {
		if total <= c.maxSize {
			return
		}
		if e.path == keep {
			continue
		}
		if err := os.Remove(e.path); err == nil || errors.Is(err, fs.ErrNotExist) {
			total -= e.size
		}
	}
}
