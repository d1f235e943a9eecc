package session

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
	"github.com/usbflash/usbflash/internal/lib/shown"
	"github.com/usbflash/usbflash/internal/lib/units"
	"github.com/usbflash/usbflash/pipeline"

	"github.com/usbflash/usbflash/internal/image"
	"github.com/usbflash/usbflash/internal/image/httpsrc"
)

// An image at an http(s) URL is read as one stream straight into the
// decoders (httpsrc resumes a dropped connection or a stall without their
// noticing); its checksum list, the list's signature and its block map
// are looked for beside the URL as beside a file, with the same rules.

// isURL says the image is at an http(s) URL.
func isURL(imageRef string) bool { return httpsrc.IsURL(imageRef) }

// displayImage is the image as messages show it: a URL without its query
// (a signed URL's token) or password (shown.URL).
func displayImage(imageRef string) string {
	if isURL(imageRef) {
		return shown.URL(imageRef)
	}
	return imageRef
}

// httpClient is the session's, made on first use: its resumes are said
// on the progress line.
func (s *session) httpClient() *httpsrc.Client {
	s.httpOnce.Do(func() {
		o := s.cfg.HTTP
		if o.UserAgent == "" {
			o.UserAgent = "usbflash"
		}
		said := o.OnRetry
		o.OnRetry = func(r httpsrc.Retry) {
			s.emit(Note{Message: r.String()})
			if said != nil {
				said(r)
			}
		}
		s.http = httpsrc.New(o)
	})
	return s.http
}

// readBeside reads a file beside a URL image; nil for a file image. A
// file the server refuses (401, 403) is not there, said once each: a
// pre-signed URL's token is the image's alone (its signature covers its
// path, so the URL's query is not sent with the files beside it, which it
// would not open either).
func (s *session) readBeside(ctx context.Context) image.ReadFunc {
	if !isURL(s.cfg.Image) {
		return nil
	}
	return func(name string, limit int64) ([]byte, error) {
		data, err := s.httpClient().ReadFile(ctx, name, limit)
		var se *httpsrc.StatusError
		if errors.As(err, &se) && (se.Code == http.StatusUnauthorized || se.Code == http.StatusForbidden) {
			s.emit(Note{Message: fmt.Sprintf("%s: the server answered %s: taken as not there", displayImage(name), se.Status)})
			return nil, fmt.Errorf("%w: %w", fs.ErrNotExist, err)
		}
		return data, err
	}
}

// openImage opens the image; a stream is hashed as it is read when there
// is a download to check (it cannot be read again).
func (s *session) openImage(ctx context.Context, d *download) (*image.Source, error) {
	src, err := s.openImageAt(ctx, d)
	if err != nil {
		return nil, err
	}
	if err := s.expectCatalogSize(src); err != nil {
		src.Close()
		return nil, err
	}
	return src, nil
}

func (s *session) openImageAt(ctx context.Context, d *download) (*image.Source, error) {
	opts := image.Options{HashStream: d != nil, Stdin: s.cfg.Stdin}
	if !isURL(s.cfg.Image) {
		src, err := image.OpenWith(s.cfg.Image, opts)
		if err != nil {
			return nil, &ImageError{Err: err}
		}
		return src, nil
	}
	s.cacheMu.Lock()
	pinned := s.pinned
	s.cacheMu.Unlock()
	if pinned != "" {
		return s.openLocal(pinned, opts)
	}
	if s.cfg.Cache != "" {
		return s.openCached(ctx, d, opts)
	}
	b, err := s.httpClient().Open(ctx, s.cfg.Image)
	if err != nil {
		return nil, &ImageError{Err: err}
	}
	return s.openBody(b, b, b.Size(), b.Name(), opts)
}

// openBody decodes the stream r of the body b; closing the source closes
// r, which closes b. The session keeps b for the source's download note.
func (s *session) openBody(b *httpsrc.Body, r io.ReadCloser, size int64, name string, opts image.Options) (*image.Source, error) {
	// The download runs ahead of a decoder that reads on its caller's
	// goroutine, which decodes while the next bytes arrive (counted in
	// checkMemory's bound).
	opts.ReadAhead = b.ReadAhead
	stop := s.sayOpening(b)
	src, err := image.OpenStream(r, size, name, opts)
	stop()
	if err != nil {
		r.Close()
		return nil, &ImageError{Err: fmt.Errorf("image %s: %w", b.URL(), err)}
	}
	s.bodies.Store(src, b)
	return src, nil
}

// openingNoteEvery is how often the download is said while the image is
// opened: a decoder that takes whole blocks (xz -T, tens of megabytes
// each) gives its first bytes only once the first block has arrived.
const openingNoteEvery = 2 * time.Second

// sayOpening says, every openingNoteEvery until the stop it returns is
// called, how much of b has arrived while the image's first bytes are
// awaited.
func (s *session) sayOpening(b *httpsrc.Body) (stop func()) {
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
			s.emit(Note{Message: fmt.Sprintf("Downloading %s: %s%s in %s (%s), before the image's first bytes: its decoder takes whole blocks",
				b.URL(), units.FormatBytes(got), of, took.Round(time.Second), units.FormatRate(float64(got)/max(took.Seconds(), 1e-3)))})
		}
	}()
	return func() {
		close(done)
		<-ended
	}
}

// downloadProgress is the download of src so far (nil for an image not
// read from a URL): what its body counted, the catalog entry's
// image_download_size when the server gave no size.
func (s *session) downloadProgress(src *image.Source) *Download {
	v, ok := s.bodies.Load(src)
	if !ok {
		return nil
	}
	b := v.(*httpsrc.Body)
	got, took, resumes := b.Stats()
	d := &Download{URL: b.URL(), Bytes: got, Total: b.Size(), Elapsed: took, Resumes: resumes, Bound: BoundWrite}
	if d.Total < 0 && s.entry != nil && s.entry.DownloadSize > 0 {
		d.Total = s.entry.DownloadSize
	}
	if took > 0 {
		d.Rate = float64(got) / took.Seconds()
		if b.Waited() > took/2 {
			d.Bound = BoundDownload
		}
	}
	return d
}

// downloadNote says, once a write from a URL ended, what the download did
// beside the card: bytes, time, rate, resumes, and whether the writer
// waited for it (a download slower than the card sets the pace).
func (s *session) downloadNote(src *image.Source, res pipeline.WriteResult) {
	v, ok := s.bodies.Load(src)
	if !ok {
		return
	}
	b := v.(*httpsrc.Body)
	got, took, resumes := b.Stats()
	msg := fmt.Sprintf("Downloaded %s from %s in %s (%s) while the card was written", units.FormatBytes(got), b.URL(),
		took.Round(time.Millisecond), units.FormatRate(float64(got)/max(took.Seconds(), 1e-3)))
	if resumes > 0 {
		msg += fmt.Sprintf(", after %d resumes", resumes)
	}
	if res.Bound == pipeline.BoundDecoder {
		msg += fmt.Sprintf("; the writer waited %s for its data: the download (with the decoding) set the pace", res.DecoderWait.Round(time.Millisecond))
	} else if res.Bound == pipeline.BoundDevice {
		msg += "; the card set the pace"
	}
	s.emit(Note{Message: msg})
}

// openCached opens a URL image through the cache: an entry whose SHA-256
// is the one the download is checked against, or that the server still
// serves (its validator, asked for the last byte), is read as a local
// file (and checked against the SHA-256 it is named by as it is read:
// checkEntry); else the body is written to the URL's .part as it is read,
// resuming the .part an earlier run left when the server still serves its
// version. The URL is claimed before its .part is looked at: a URL another
// run is reading into the cache is read from the network, without the
// cache, as is one the cache cannot take (no room), which is said.
func (s *session) openCached(ctx context.Context, d *download, opts image.Options) (*image.Source, error) {
	cache, err := dlcache.Open(s.cfg.Cache, s.cfg.CacheMax, 0)
	if err != nil {
		return nil, &failure.SettingError{Setting: SettingCache, Err: err}
	}
	url := s.cfg.Image
	if d != nil && !d.decodedOnly {
		if p := cache.Lookup(d.want); p != "" {
			s.emit(Note{Message: "Reading " + displayImage(url) + " from the cache: " + p + " has " + d.the()})
			return s.openEntry(cache, p, d.want, opts)
		}
	}
	client := s.httpClient()
	claim, err := cache.Claim(url)
	if err != nil {
		s.emit(Note{Message: "Not caching " + displayImage(url) + ": " + err.Error()})
		b, err := client.Open(ctx, url)
		if err != nil {
			return nil, &ImageError{Err: err}
		}
		return s.openBody(b, b, b.Size(), b.Name(), opts)
	}
	m, path, have, known := cache.ForURL(url)
	var b *httpsrc.Body
	switch {
	case known && m.SHA256 != "" && m.Validator() != "" && m.Size > 0:
		var same bool
		b, same, err = client.OpenFrom(ctx, url, m.Size-1, m.Validator(), m.Size)
		if err != nil {
			claim.Release()
			return nil, &ImageError{Err: err}
		}
		if same {
			b.Close()
			claim.Release()
			s.emit(Note{Message: "Reading " + displayImage(url) + " from the cache: the server still serves " + path + "'s version (" + m.Validator() + ")"})
			return s.openEntry(cache, path, m.SHA256, opts)
		}
		have = 0
	case known && m.SHA256 == "" && have > 0:
		var resumed bool
		b, resumed, err = client.OpenFrom(ctx, url, have, m.Validator(), m.Size)
		if err != nil {
			claim.Release()
			return nil, &ImageError{Err: err}
		}
		if resumed {
			s.emit(Note{Message: fmt.Sprintf("Resuming %s from the cache's %s at %s", displayImage(url), path, units.FormatBytes(have))})
		} else {
			have = 0
		}
	default:
		if b, err = client.Open(ctx, url); err != nil {
			claim.Release()
			return nil, &ImageError{Err: err}
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
		s.emit(Note{Message: "Not caching " + displayImage(url) + ": " + err.Error()})
		if have > 0 {
			// The body starts where the .part ends, and the .part is
			// not read: ask for the whole file.
			b.Close()
			if b, err = client.Open(ctx, url); err != nil {
				return nil, &ImageError{Err: err}
			}
			size, name = b.Size(), b.Name()
		}
		return s.openBody(b, b, size, name, opts)
	}
	fill.Note = func(msg string) { s.emit(Note{Message: msg}) }
	return s.openBody(b, &filling{Reader: fill.Reader(b), b: b, fill: fill}, size, name, opts)
}

// cachedEntry is a cache entry an image is read from, and the SHA-256 its
// name says its bytes have.
type cachedEntry struct {
	cache     *dlcache.Cache
	path, sum string
}

// openEntry opens a cache entry as the image, to be checked against the
// SHA-256 it is named by.
func (s *session) openEntry(cache *dlcache.Cache, path, sum string, opts image.Options) (*image.Source, error) {
	src, err := s.openLocal(path, opts)
	if err == nil {
		s.cacheMu.Lock()
		s.cached = &cachedEntry{cache: cache, path: path, sum: sum}
		s.cacheMu.Unlock()
	}
	return src, err
}

// checkEntry is the download check of an image read from a cache entry:
// d's, with the entry's own SHA-256 for its file when d checks no file
// (none, or a list's line for the decoded image). The entry is hashed as
// the write reads it, as any image file with a sum is, and compared before
// the first transfer is written; a mismatch removes it
// (dropDamagedEntry).
func (s *session) checkEntry(d *download) *download {
	s.cacheMu.Lock()
	e := s.cached
	s.cacheMu.Unlock()
	if e == nil {
		return d
	}
	from := "the name of the cache's entry " + e.path
	switch {
	case d == nil:
		return &download{want: e.sum, from: from, fileOnly: true}
	case d.decodedOnly:
		return &download{want: e.sum, from: from, fileOnly: true, also: append([]sumCheck{{want: d.want, from: d.from, decoded: true}}, d.also...)}
	}
	return d
}

// dropDamagedEntry removes the cache entry the image was read from when
// err says its file does not match a SHA-256 (its own name's, or the one
// the download is checked against): the next read of the URL, a second
// pass of Run or a station's next card, asks the server. err comes back
// as a *CacheEntryError.
func (s *session) dropDamagedEntry(err error) error {
	var mismatch *image.ChecksumMismatchError
	if err == nil || !errors.As(err, &mismatch) || mismatch.Got == "" {
		return err
	}
	s.cacheMu.Lock()
	defer s.cacheMu.Unlock()
	e := s.cached
	if e == nil || e.cache.Drop(e.sum) != nil {
		return err
	}
	s.cached, s.pinned = nil, ""
	if mismatch.Got == e.sum {
		// The entry is the file it is named by, and the file is not
		// the one the sum describes: the server's (asked again by the
		// next run, which the advice says) may be another.
		return &CacheEntryError{Path: e.path, Intact: true, Err: err}
	}
	s.dropped = true
	return &CacheEntryError{Path: e.path, Err: err}
}

// checkEntryAfter hashes the cache entry an image was read from when its
// reading failed as an image (a decoder that found damage before the sum
// could be compared): an entry that is not the SHA-256 it is named by is
// removed, as dropDamagedEntry removes it.
func (s *session) checkEntryAfter(err error) {
	var ce *CacheEntryError
	if err == nil || failure.Of(err) != failure.Image || errors.As(err, &ce) {
		return
	}
	s.cacheMu.Lock()
	defer s.cacheMu.Unlock()
	e := s.cached
	if e == nil {
		return
	}
	if sum, herr := fileSHA256(e.path); herr == nil && sum != e.sum && e.cache.Drop(e.sum) == nil {
		s.cached, s.pinned, s.dropped = nil, "", true
	}
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
	// the download is checked against is another's); removed all the
	// same, so that the next run asks the server.
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

// openLocal opens a cache entry as the image file it is.
func (s *session) openLocal(path string, opts image.Options) (*image.Source, error) {
	src, err := image.OpenWith(path, opts)
	if err != nil {
		return nil, &ImageError{Err: err}
	}
	return src, nil
}

// noteCacheUnused says that a cache given does nothing for an image that
// is not at a URL (a file, standard input): it keeps downloads only.
func (s *session) noteCacheUnused() {
	if s.cfg.Cache == "" || isURL(s.cfg.Image) {
		return
	}
	s.emit(Note{Message: "The download cache " + s.cfg.Cache + " is not used: " + imageName(s.cfg.Image) + " is read where it is, not downloaded"})
}

// stationCache gives a session that reads a URL image more than once (a
// station's cards, a repair) and has no cache a temporary one under the
// system's temporary directory, so that every read is of the one download
// (bounded by the free space, as any cache: an image that does not fit
// streams to each card of a station, said, and is refused by a repair);
// the returned function removes it.
func (s *session) stationCache() func() {
	if s.cfg.Cache != "" || !isURL(s.cfg.Image) {
		return func() {}
	}
	dir, err := os.MkdirTemp("", "usbflash-download-")
	if err != nil {
		s.emit(Note{Message: "Each card reads " + displayImage(s.cfg.Image) + " from the server: no temporary directory to download it to once: " + err.Error()})
		return func() {}
	}
	s.cfg.Cache = dir
	s.emit(Note{Message: "Downloading " + displayImage(s.cfg.Image) + " once into " + dir + " (removed when this run ends)"})
	return func() { os.RemoveAll(dir) }
}

// prefetch reads a URL image into the cache before a station's first
// card, so that every card reads the same local file (pinned: not asked
// of the server again, nor replaced by a newer version mid-station): a
// station downloads once. Without a cache it does nothing.
func (s *session) prefetch(ctx context.Context, d *download) error {
	if s.cfg.Cache == "" || !isURL(s.cfg.Image) {
		return nil
	}
	src, err := s.openCached(ctx, d, image.Options{})
	if err != nil {
		return err
	}
	if src.Stream() {
		s.emit(Note{Message: "Reading " + displayImage(s.cfg.Image) + " into the cache before the first card"})
		_, err = io.Copy(io.Discard, src)
	}
	if cerr := src.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return &ImageError{Err: err}
	}
	if cache, err := dlcache.Open(s.cfg.Cache, s.cfg.CacheMax, 0); err == nil {
		if m, path, _, known := cache.ForURL(s.cfg.Image); known && m.SHA256 != "" {
			s.cacheMu.Lock()
			s.pinned, s.cached = path, &cachedEntry{cache: cache, path: path, sum: m.SHA256}
			s.cacheMu.Unlock()
		}
	}
	return nil
}
