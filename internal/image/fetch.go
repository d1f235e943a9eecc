package image

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"net/http"
	"os"
	"strings"
	"time"

	"github.com/usbflash/usbflash/internal/failure"
	"github.com/usbflash/usbflash/internal/image/dlcache"
	"github.com/usbflash/usbflash/internal/image/httpsrc"
	"github.com/usbflash/usbflash/internal/lib/units"
)

// An image at an http(s) URL is read as one stream straight into the
// decoders (httpsrc resumes a dropped connection or a stall without their
// noticing), through the cache when there is one; its checksum list, the
// list's signature and its block map are looked for beside the URL as
// beside a file, with the same rules.

// newClient is the HTTP client of an image's session, opts' with its
// retries told to note as well.
func newClient(opts httpsrc.Options, note func(string)) *httpsrc.Client {
	if opts.UserAgent == "" {
		opts.UserAgent = "usbflash"
	}
	said := opts.OnRetry
	opts.OnRetry = func(r httpsrc.Retry) {
		if note != nil {
			note(r.String())
		}
		if said != nil {
			said(r)
		}
	}
	return httpsrc.New(opts)
}

// httpClient is the image's, made on first use: its resumes are noted.
func (o *Opened) httpClient() *httpsrc.Client {
	o.httpOnce.Do(func() { o.http = newClient(o.ref.HTTP, o.note) })
	return o.http
}

// readBeside reads a file beside a URL image; nil for a file image. A
// file the server refuses (401, 403) is not there, said once each: a
// pre-signed URL's token is the image's alone (its signature covers its
// path, so the URL's query is not sent with the files beside it, which it
// would not open either).
func (o *Opened) readBeside(ctx context.Context) ReadFunc {
	if !IsURL(o.ref.Path) {
		return nil
	}
	return func(name string, limit int64) ([]byte, error) {
		data, err := o.httpClient().ReadFile(ctx, name, limit)
		var se *httpsrc.StatusError
		if errors.As(err, &se) && (se.Code == http.StatusUnauthorized || se.Code == http.StatusForbidden) {
			o.note(fmt.Sprintf("%s: the server answered %s: taken as not there", Shown(name), se.Status))
			return nil, fmt.Errorf("%w: %w", fs.ErrNotExist, err)
		}
		return data, err
	}
}

// openBody decodes the stream r of the body b; closing the source closes
// r, which closes b. b is kept for the source's Download.
func (o *Opened) openBody(b *httpsrc.Body, r io.ReadCloser, size int64, name string, opts Options) (*Source, error) {
	// The download runs ahead of a decoder that reads on its caller's
	// goroutine, which decodes while the next bytes arrive (counted in
	// the session's memory bound: ReadAhead).
	opts.ReadAhead = b.ReadAhead
	stop := o.sayOpening(b)
	src, err := OpenStream(r, size, name, opts)
	stop()
	if err != nil {
		r.Close()
		return nil, &ReadError{Err: fmt.Errorf("image %s: %w", b.URL(), err)}
	}
	o.bodies.Store(src, b)
	return src, nil
}

// openingNoteEvery is how often the download is said while the image is
// opened: a decoder that takes whole blocks (xz -T, tens of megabytes
// each) gives its first bytes only once the first block has arrived.
const openingNoteEvery = 2 * time.Second

// sayOpening says, every openingNoteEvery until the stop it returns is
// called, how much of b has arrived while the image's first bytes are
// awaited.
func (o *Opened) sayOpening(b *httpsrc.Body) (stop func()) {
	done := make(chan struct{})
	ended := make(chan struct{})
	go func() {
		defer close(ended)
		tick := time.NewTicker(openingNoteEvery)
		defer tick.Stop()
		var said int64
		for {
			select {
			case <-done:
				return
			case <-tick.C:
			}
			got, took, _ := b.Stats()
			if got == said {
				continue
			}
			said = got
			of := ""
			if b.Size() >= 0 {
				of = " of " + units.FormatBytes(b.Size())
			}
			o.note(fmt.Sprintf("Downloading %s: %s%s in %s (%s), before the image's first bytes: its decoder takes whole blocks",
				b.URL(), units.FormatBytes(got), of, took.Round(time.Second), units.FormatRate(float64(got)/max(took.Seconds(), 1e-3))))
		}
	}()
	return func() {
		close(done)
		<-ended
	}
}

// Download is how far the download of a source read from a URL got.
type Download struct {
	URL string
	// Bytes received of Total (-1 when neither the server nor the catalog
	// says), in Elapsed since it was asked for, after Resumes.
	Bytes, Total int64
	Elapsed      time.Duration
	Resumes      int
	// Waited is how long the reader waited for the network.
	Waited time.Duration
}

// Download is the download of src so far, ok false for a source not read
// from a URL: what its body counted, the catalog entry's
// image_download_size when the server gave no size.
func (o *Opened) Download(src *Source) (d Download, ok bool) {
	if o == nil {
		return Download{}, false
	}
	v, ok := o.bodies.Load(src)
	if !ok {
		return Download{}, false
	}
	b := v.(*httpsrc.Body)
	got, took, resumes := b.Stats()
	d = Download{URL: b.URL(), Bytes: got, Total: b.Size(), Elapsed: took, Resumes: resumes, Waited: b.Waited()}
	if d.Total < 0 && o.entry != nil && o.entry.DownloadSize > 0 {
		d.Total = o.entry.DownloadSize
	}
	return d, true
}

// openCached opens a URL image through the cache: an entry whose SHA-256
// is the one the image is checked against, or that the server still
// serves (its validator, asked for the last byte), is read as a local
// file (and checked against the SHA-256 it is named by as it is read:
// checkEntry); else the body is written to the URL's .part as it is read,
// resuming the .part an earlier run left when the server still serves its
// version. The URL is claimed before its .part is looked at: a URL another
// run is reading into the cache is read from the network, without the
// cache, as is one the cache cannot take (no room), which is said.
func (o *Opened) openCached(ctx context.Context, sum *checksum, opts Options) (*Source, error) {
	cache, err := dlcache.Open(o.ref.Cache, o.ref.CacheMax, 0)
	if err != nil {
		return nil, &failure.SettingError{Setting: SettingCache, Err: err}
	}
	url := o.ref.Path
	if sum != nil && !sum.decodedOnly {
		if p := cache.Lookup(sum.want); p != "" {
			o.note("Reading " + Shown(url) + " from the cache: " + p + " has " + sum.the())
			return o.openEntry(cache, p, sum.want, opts)
		}
	}
	client := o.httpClient()
	claim, err := cache.Claim(url)
	if err != nil {
		o.note("Not caching " + Shown(url) + ": " + err.Error())
		b, err := client.Open(ctx, url)
		if err != nil {
			return nil, &ReadError{Err: err}
		}
		return o.openBody(b, b, b.Size(), b.Name(), opts)
	}
	m, path, have, known := cache.ForURL(url)
	var b *httpsrc.Body
	switch {
	case known && m.SHA256 != "" && m.Validator() != "" && m.Size > 0:
		var same bool
		b, same, err = client.OpenFrom(ctx, url, m.Size-1, m.Validator(), m.Size)
		if err != nil {
			claim.Release()
			return nil, &ReadError{Err: err}
		}
		if same {
			b.Close()
			claim.Release()
			o.note("Reading " + Shown(url) + " from the cache: the server still serves " + path + "'s version (" + m.Validator() + ")")
			return o.openEntry(cache, path, m.SHA256, opts)
		}
		have = 0
	case known && m.SHA256 == "" && have > 0:
		var resumed bool
		b, resumed, err = client.OpenFrom(ctx, url, have, m.Validator(), m.Size)
		if err != nil {
			claim.Release()
			return nil, &ReadError{Err: err}
		}
		if resumed {
			o.note(fmt.Sprintf("Resuming %s from the cache's %s at %s", Shown(url), path, units.FormatBytes(have)))
		} else {
			have = 0
		}
	default:
		if b, err = client.Open(ctx, url); err != nil {
			claim.Release()
			return nil, &ReadError{Err: err}
		}
		have = 0
	}
	size := b.Size()
	if have > 0 {
		size = m.Size
	}
	name := b.Name()
	if have > 0 && m.Name != "" {
		name = m.Name
	}
	fill, err := claim.Begin(dlcache.Meta{URL: url, ETag: etagOf(b.Validator()), LastModified: lastModifiedOf(b.Validator()),
		Size: size, Name: name}, have)
	if err != nil {
		o.note("Not caching " + Shown(url) + ": " + err.Error())
		if have > 0 {
			// The body starts where the .part ends, and the .part is
			// not read: ask for the whole file.
			b.Close()
			if b, err = client.Open(ctx, url); err != nil {
				return nil, &ReadError{Err: err}
			}
			size, name = b.Size(), b.Name()
		}
		return o.openBody(b, b, size, name, opts)
	}
	fill.Note = o.note
	return o.openBody(b, &filling{Reader: fill.Reader(b), b: b, fill: fill}, size, name, opts)
}

// cachedEntry is a cache entry an image is read from, and the SHA-256 its
// name says its bytes have.
type cachedEntry struct {
	cache     *dlcache.Cache
	path, sum string
}

// openEntry opens a cache entry as the image, to be checked against the
// SHA-256 it is named by.
func (o *Opened) openEntry(cache *dlcache.Cache, path, sum string, opts Options) (*Source, error) {
	src, err := openLocal(path, opts)
	if err == nil {
		o.cacheMu.Lock()
		o.cached = &cachedEntry{cache: cache, path: path, sum: sum}
		o.cacheMu.Unlock()
	}
	return src, err
}

// pin makes the cache's whole entry of the URL the file every later read
// opens (a station's cards, a repair).
func (o *Opened) pin() {
	cache, err := dlcache.Open(o.ref.Cache, o.ref.CacheMax, 0)
	if err != nil {
		return
	}
	if m, path, _, known := cache.ForURL(o.ref.Path); known && m.SHA256 != "" {
		o.cacheMu.Lock()
		o.pinned, o.cached = path, &cachedEntry{cache: cache, path: path, sum: m.SHA256}
		o.cacheMu.Unlock()
	}
}

// checkEntry is the check of an image read from a cache entry: sum's,
// with the entry's own SHA-256 for its file when sum checks no file
// (none, or a list's line for the decoded image). The entry is hashed as
// the write reads it, as any image file with a sum is, and compared before
// the first transfer is written; a mismatch removes it (dropDamagedEntry).
func (o *Opened) checkEntry(sum *checksum) *checksum {
	o.cacheMu.Lock()
	e := o.cached
	o.cacheMu.Unlock()
	if e == nil {
		return sum
	}
	from := "the name of the cache's entry " + e.path
	switch {
	case sum == nil:
		return &checksum{want: e.sum, from: from, fileOnly: true}
	case sum.decodedOnly:
		return &checksum{want: e.sum, from: from, fileOnly: true, also: append([]alsoSum{{want: sum.want, from: sum.from, decoded: true}}, sum.also...)}
	}
	return sum
}

// dropDamagedEntry removes the cache entry the image was read from when
// err says its file does not match a SHA-256 (its own name's, or the one
// the image is checked against): the next read of the URL, a second pass
// of a write or a station's next card, asks the server. err comes back as
// a *CacheEntryError.
func (o *Opened) dropDamagedEntry(err error) error {
	var mismatch *ChecksumMismatchError
	if err == nil || !errors.As(err, &mismatch) || mismatch.Got == "" {
		return err
	}
	o.cacheMu.Lock()
	defer o.cacheMu.Unlock()
	e := o.cached
	if e == nil || e.cache.Drop(e.sum) != nil {
		return err
	}
	o.cached, o.pinned = nil, ""
	if mismatch.Got == e.sum {
		// The entry is the file it is named by, and the file is not
		// the one the sum describes: the server's (asked again by the
		// next run, which the advice says) may be another.
		return &CacheEntryError{Path: e.path, Intact: true, Err: err}
	}
	o.dropped = true
	return &CacheEntryError{Path: e.path, Err: err}
}

// CheckAfter hashes the cache entry the image was read from when reading
// it failed as an image (err: a decoder that found damage before the sum
// could be compared): an entry that is not the SHA-256 it is named by is
// removed, as a mismatch found by Check removes it (Dropped).
func (o *Opened) CheckAfter(err error) {
	var ce *CacheEntryError
	if err == nil || failure.Of(err) != failure.Image || errors.As(err, &ce) {
		return
	}
	o.cacheMu.Lock()
	defer o.cacheMu.Unlock()
	e := o.cached
	if e == nil {
		return
	}
	if sum, herr := fileSHA256(e.path); herr == nil && sum != e.sum && e.cache.Drop(e.sum) == nil {
		o.cached, o.pinned, o.dropped = nil, "", true
	}
}

// Dropped says the cache entry the image was read from did not match the
// SHA-256 it is named by and is gone, before anything was written from
// it: a second pass reads the server.
func (o *Opened) Dropped() bool {
	o.cacheMu.Lock()
	defer o.cacheMu.Unlock()
	return o.dropped
}

// fileSHA256 is the SHA-256 of the file at path, in hex.
func fileSHA256(path string) (string, error) {
	f, err := os.Open(path)
	if err != nil {
		return "", err
	}
	defer f.Close()
	h := sha256.New()
	if _, err := io.Copy(h, f); err != nil {
		return "", err
	}
	return hex.EncodeToString(h.Sum(nil)), nil
}

// CacheEntryError is a cache entry whose bytes are not the ones it is
// named by, removed from the cache.
type CacheEntryError struct {
	Path string
	// Intact: the entry's bytes are the ones it is named by (the sum
	// the image is checked against is another's); removed all the same,
	// so that the next run asks the server.
	Intact bool
	Err    error
}

func (e *CacheEntryError) Error() string {
	if e.Intact {
		return fmt.Sprintf("the cache's copy %s was removed: %v", e.Path, e.Err)
	}
	return fmt.Sprintf("the cache's copy %s is damaged (its bytes are not the SHA-256 it is named by) and was removed: %v", e.Path, e.Err)
}
func (e *CacheEntryError) Unwrap() error { return e.Err }

// Class is Image: the image read was not the one meant.
func (e *CacheEntryError) Class() failure.Class { return failure.Image }

// maxDrain bounds what Close reads of a body the decoder left, to make
// the .part whole.
const maxDrain = 4 << 20

// filling is a body read through a cache fill; Close ends both.
type filling struct {
	io.Reader
	b    *httpsrc.Body
	fill *dlcache.Fill
}

func (f *filling) Close() error {
	if n := f.fill.Remaining(); n > 0 && n <= maxDrain {
		// A decoder stops at its container's end and leaves what
		// follows (xz's index and padding): the file's bytes all the
		// same, which the entry needs.
		io.Copy(io.Discard, io.LimitReader(f.Reader, n))
	}
	f.b.Close()
	_, err := f.fill.Close()
	return err
}

func etagOf(v string) string {
	if strings.HasPrefix(v, `"`) {
		return v
	}
	return ""
}

func lastModifiedOf(v string) string {
	if strings.HasPrefix(v, `"`) {
		return ""
	}
	return v
}
