package image

import (
	"context"
	"errors"
	"io"
	"os"
	"sync"

	"github.com/usbflash/usbflash/internal/image/catalog"
	"github.com/usbflash/usbflash/internal/image/httpsrc"
)

// Every command that reads an image (a write of one card or several, a
// station, verify, verify --repair) opens it with Open, which makes every
// decision of how it is found and trusted once, the same for all: the
// catalog entry that names it, the checksum settings against each other,
// the sum it is checked against (given, its catalog entry's, or a list
// beside it, signed by the keyring's keys when one is given: a keyring
// with no signed sum refuses the image), the cache a URL is read through,
// and the catalog entry's size. What it returns is the opened source and
// what it is to be trusted by; the session checks the source against that
// before a card may boot it (Opened.Check).

// Reads says how often a session reads its image.
type Reads int

const (
	// ReadOnce: one decode feeds every card (a write, a verify).
	ReadOnce Reads = iota
	// ReadPerCard: each card of a station decodes it again (OpenAgain);
	// an image at a URL is read once, into the cache, when the cache can
	// hold it (a temporary one when Ref names none), and streams to each
	// card otherwise.
	ReadPerCard
	// ReadAgain: a repair decodes it again from its start (Reopener): an
	// image at a URL must be kept, in the cache, as a file; standard input
	// or a pipe is refused (ErrReadOnce).
	ReadAgain
)

// OpenOptions are how a session opens its image.
type OpenOptions struct {
	Reads Reads
	// Note is told what opening finds as it finds it (the catalog's entry,
	// a cache used or not, a download's progress before its first bytes,
	// a retry); nil says nothing.
	Note func(string)
	// BeforeRead, when set, is called once the image is named (a catalog
	// entry resolved) and before anything of it is read or downloaded: the
	// caller's own checks that must refuse before then. Its error is
	// Open's.
	BeforeRead func(*Opened) error
}

// Opened is an image a session opened: its first Source, and what it is
// to be trusted by. A nil *Opened is a session's write of blocks that are
// no image (an erase's, a format's, made for each card): it is checked
// against nothing (Check, SumFrom), read again by no one (Reopener) and
// downloaded from nowhere (Download).
type Opened struct {
	// Source is the image's stream, for the session's one decode (or a
	// station's first look).
	Source *Source

	ref   Ref            // Path is the catalog entry's URL once resolved
	entry *catalog.Entry // the catalog entry Ref.OS named; nil: none
	reads Reads
	note  func(string)
	// sum is what the image is checked against before a card may boot it
	// (or a verify says it matches); nil: nothing.
	sum *checksum
	// found says what finding the sum found (lists passed over, the
	// signature checked), and untrusted why it cannot be trusted: both
	// are for the session to say once the image is announced.
	found     []string
	untrusted error
	// cleanup removes a temporary download, if one was made.
	cleanup func()
	stream  bool // the image is read once (a pipe, a FIFO)

	httpOnce sync.Once
	http     *httpsrc.Client
	bodies   sync.Map // *Source -> its *httpsrc.Body (fetch.go)

	// pinned is the cache entry a station's cards read (prefetch);
	// cached the cache entry the image is read from, checked against the
	// SHA-256 it is named by; dropped says it did not match and was
	// removed (fetch.go).
	cacheMu sync.Mutex // a station's cards open the image at once
	pinned  string
	cached  *cachedEntry
	dropped bool
}

// Open opens the image ref names (a path, "-", an http(s) URL, or the URL
// of the catalog entry Ref.OS names) with its checksum, signature, cache
// and size decisions. An image read more than once (opts.Reads) at a URL
// is first read whole into the cache (a temporary one when ref names
// none) and then read from there as a file, unless its sum cannot be
// trusted. Why it cannot be trusted is not Open's error: the session says
// it once the image is announced (Untrusted).
func Open(ctx context.Context, ref Ref, opts OpenOptions) (*Opened, error) {
	o := &Opened{ref: ref, reads: opts.Reads, note: opts.Note, cleanup: func() {}}
	if o.note == nil {
		o.note = func(string) {}
	}
	if err := o.resolveCatalog(ctx); err != nil {
		return nil, err
	}
	o.noteCacheUnused()
	if opts.BeforeRead != nil {
		if err := opts.BeforeRead(o); err != nil {
			return nil, err
		}
	}
	if err := ref.checkSettings(); err != nil {
		return nil, err
	}
	if o.reads == ReadAgain && o.ref.Path == "-" {
		return nil, ErrReadOnce
	}
	if o.reads != ReadOnce {
		o.cleanup = o.temporaryCache()
	}
	// The checksum is found before the image is opened (a stream is
	// hashed from its first byte) and its trouble said after.
	o.sum, o.found, o.untrusted = o.findSum(o.readBeside(ctx))
	if o.reads != ReadOnce && o.untrusted == nil {
		err := o.prefetch(ctx)
		if err == nil && o.reads == ReadAgain && IsURL(o.ref.Path) && o.Reopener() == nil {
			err = &NotKeptError{Image: o.Shown()}
		}
		if err != nil {
			o.cleanup()
			return nil, err
		}
	}
	src, err := o.open(ctx, o.sum)
	if err != nil {
		o.cleanup()
		return nil, err
	}
	o.sum = o.checkEntry(o.sum) // a cache entry read is checked as any file
	if o.reads == ReadAgain && o.untrusted == nil && src.Stream() {
		// A pipe or a FIFO named by its path: read once, as standard
		// input is. (An image not trusted is refused for that, said
		// once it is announced.)
		src.Close()
		o.cleanup()
		return nil, ErrReadOnce
	}
	o.stream = src.Stream()
	o.Source = src
	return o, nil
}

// Close closes the first Source and removes what was downloaded for this
// session alone. What Opened says stays (CheckAfter, Dropped).
func (o *Opened) Close() {
	o.Source.Close()
	o.cleanup()
}

// Path is the image's path or URL: the catalog entry's URL once the entry
// was resolved.
func (o *Opened) Path() string { return o.ref.Path }

// Shown is the image's path or URL as messages show it.
func (o *Opened) Shown() string { return Shown(o.ref.Path) }

// Named is the image as a message names it ("standard input" for "-").
func (o *Opened) Named() string { return Named(o.ref.Path) }

// Label is the image as a session's outcome names it: its path or URL,
// or its catalog entry's name and URL.
func (o *Opened) Label() string {
	if o.entry == nil {
		return o.Named()
	}
	return o.entry.Name + " (" + o.Shown() + ")"
}

// ReadAhead is what the image's download holds ahead of its decoder
// (httpsrc's read-ahead), in bytes: 0 for an image that is not at a URL.
func (o *Opened) ReadAhead() int64 {
	if IsURL(o.ref.Path) {
		return httpsrc.ReadAheadMemory
	}
	return 0
}

// Signed says a keyring was given: what finds a sum, or a block map,
// checks its signature.
func (o *Opened) Signed() bool { return o.ref.SHA256Keyring != "" }

// Found is what finding the sum found (lists passed over, the signature
// checked), for the session to say once the image was announced.
func (o *Opened) Found() []string { return o.found }

// Untrusted is why the image cannot be trusted (a keyring with no signed
// sum: *NoSignedSumError; a list that cannot be read), nil when it can:
// said once the image was announced, before any card is written.
func (o *Opened) Untrusted() error { return o.untrusted }

// OpenAgain opens the image again from its start for a station's next
// card: from the cache entry every card reads when the image was
// prefetched, hashed as it is read when it is a stream with a sum.
func (o *Opened) OpenAgain(ctx context.Context) (*Source, error) { return o.open(ctx, o.sum) }

// Reopener opens the image again from its start, for a read-back that
// locates a difference or for a repair; nil for an image read once
// (standard input, a pipe or FIFO, a URL not kept in the cache).
func (o *Opened) Reopener() func() (io.ReadCloser, error) {
	if o == nil {
		return nil
	}
	o.cacheMu.Lock()
	pinned := o.pinned
	o.cacheMu.Unlock()
	path := o.ref.Path
	switch {
	case pinned != "":
		path = pinned
	case path == "-" || IsURL(path) || o.stream:
		return nil
	}
	return func() (io.ReadCloser, error) {
		src, err := OpenFile(path)
		if err != nil {
			return nil, err
		}
		return src, nil
	}
}

// open opens the image; a stream is hashed as it is read when there is a
// sum to check (it cannot be read again), and given the size its catalog
// entry states.
func (o *Opened) open(ctx context.Context, sum *checksum) (*Source, error) {
	src, err := o.openAt(ctx, sum)
	if err != nil {
		return nil, err
	}
	if err := o.expectCatalogSize(src); err != nil {
		src.Close()
		return nil, err
	}
	return src, nil
}

func (o *Opened) openAt(ctx context.Context, sum *checksum) (*Source, error) {
	opts := Options{HashStream: sum != nil, Stdin: o.ref.Stdin}
	if !IsURL(o.ref.Path) {
		return openLocal(o.ref.Path, opts)
	}
	o.cacheMu.Lock()
	pinned := o.pinned
	o.cacheMu.Unlock()
	if pinned != "" {
		return openLocal(pinned, opts)
	}
	if o.ref.Cache != "" {
		return o.openCached(ctx, sum, opts)
	}
	b, err := o.httpClient().Open(ctx, o.ref.Path)
	if err != nil {
		return nil, &ReadError{Err: err}
	}
	return o.openBody(b, b, b.Size(), b.Name(), opts)
}

// openLocal opens an image file (or a cache entry as the image file it
// is).
func openLocal(path string, opts Options) (*Source, error) {
	src, err := OpenWith(path, opts)
	if err != nil {
		return nil, &ReadError{Err: err}
	}
	return src, nil
}

// noteCacheUnused says that a cache given does nothing for an image that
// is not at a URL (a file, standard input): it keeps downloads only.
func (o *Opened) noteCacheUnused() {
	if o.ref.Cache == "" || IsURL(o.ref.Path) {
		return
	}
	o.note("The download cache " + o.ref.Cache + " is not used: " + o.Named() + " is read where it is, not downloaded")
}

// temporaryCache gives an image at a URL read more than once (a station's
// cards, a repair) with no cache a temporary one under the system's
// temporary directory, so that every read is of the one download (bounded
// by the free space, as any cache: an image that does not fit streams to
// each card of a station, said, and is refused by a repair); the returned
// function removes it.
func (o *Opened) temporaryCache() func() {
	if o.ref.Cache != "" || !IsURL(o.ref.Path) {
		return func() {}
	}
	dir, err := os.MkdirTemp("", "usbflash-download-")
	if err != nil {
		o.note("Each card reads " + o.Shown() + " from the server: no temporary directory to download it to once: " + err.Error())
		return func() {}
	}
	o.ref.Cache = dir
	o.note("Downloading " + o.Shown() + " once into " + dir + " (removed when this run ends)")
	return func() { os.RemoveAll(dir) }
}

// prefetch reads a URL image into the cache before a station's first
// card, so that every card reads the same local file (pinned: not asked
// of the server again, nor replaced by a newer version mid-station): a
// station downloads once. Without a cache it does nothing.
func (o *Opened) prefetch(ctx context.Context) error {
	if o.ref.Cache == "" || !IsURL(o.ref.Path) {
		return nil
	}
	src, err := o.openCached(ctx, o.sum, Options{})
	if err != nil {
		return err
	}
	if src.Stream() {
		o.note("Reading " + o.Shown() + " into the cache before the first card")
		_, err = io.Copy(io.Discard, src)
	}
	if cerr := src.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return &ReadError{Err: err}
	}
	o.pin()
	return nil
}

// errNoSignedSum says whether err is a keyring's refusal for want of a
// signed sum (which a signed block map may lift).
func errNoSignedSum(err error) bool { return errors.As(err, new(*NoSignedSumError)) }
