// Package httpsrc reads an image over HTTP(S) as one stream of bytes that
// outlives dropped connections and stalls: the decoders read it like a
// pipe and never notice a resume.
//
// A dropped connection, a body that ends short, or a stall (fewer than
// Options.StallFloor bytes per second over Options.StallWindow) is
// resumed with `Range: bytes=N-` and `If-Range` carrying the first
// answer's strong ETag, else its Last-Modified. Only a 206 whose
// Content-Range starts at N (and whose total and validator are the first
// answer's) is read on; a 200, another validator, another offset or a
// server that gives no validator ends the stream with an error, so the
// bytes delivered are always those of one version of the file. Resumes
// without progress are bounded (Options.Retries) and wait longer each
// time (or as long as a 503's or 429's Retry-After asks); each is said once
// through Options.OnRetry.
//
// The transport is net/http's: redirects, proxies from the environment
// (HTTPS_PROXY, NO_PROXY), the system's CA roots, HTTP/2 where the server
// offers it, and HTTP/1.1 for the rest of the stream after a failure on
// an HTTP/2 connection (a proxy or server whose HTTP/2 is broken). There is
// a timeout for connecting, and none for the whole transfer: a slow link
// that moves is never cut.
package httpsrc

import (
	"cmp"
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"mime"
	"net"
	"net/http"
	"net/url"
	"os"
	"path"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/usbflash/usbflash/internal/failure"
	"github.com/usbflash/usbflash/internal/lib/shown"
	"github.com/usbflash/usbflash/internal/lib/units"
)

// Defaults of Options.
const (
	DefaultConnectTimeout = 30 * time.Second
	// DefaultStallWindow and DefaultStallFloor are rpi-imager's: less than
	// 100 bytes/s over a minute is a stall.
	DefaultStallWindow = 60 * time.Second
	DefaultStallFloor  = 100
	DefaultRetries     = 5
	// maxWait bounds a backoff and a Retry-After.
	maxWait = 2 * time.Minute
	// maxRedirects is how many redirects are followed: 10, as curl's
	// and the docs' (net/http's default follows 9).
	maxRedirects = 10
	// stallSlices is how many ticks a stall window is watched in: a
	// stall is found within a slice of the window after it is one
	// window long, not up to two windows as a check once a window
	// would find it.
	stallSlices = 12
)

// Options are how a Client connects and resumes. The zero value is the
// defaults.
type Options struct {
	// ConnectTimeout bounds a connection's dial and TLS handshake.
	ConnectTimeout time.Duration
	// StallWindow and StallFloor (bytes per second): a response that moves
	// fewer than StallFloor x StallWindow bytes in a window, headers
	// included, is a stall and is resumed. A negative StallFloor turns the
	// check off.
	StallWindow time.Duration
	StallFloor  int64
	// Retries is how many attempts in a row may fail without a byte
	// between them before the stream fails; a negative value allows none.
	Retries int
	// RootCAs are the CAs trusted for HTTPS; nil: the system's.
	RootCAs *x509.CertPool
	// UserAgent is sent with every request; "" sends net/http's.
	UserAgent string
	// OnRetry is told of each resume before its wait; nil: nobody.
	OnRetry func(Retry)

	// Backoff is the wait before the n-th attempt in a row (n from 1);
	// nil: 1 s doubling to 2 min. A Retry-After longer than it wins.
	Backoff func(n int) time.Duration
	// Sleep waits d or until ctx is done; nil: a timer. Tests make waits
	// instant with it.
	Sleep func(ctx context.Context, d time.Duration) error
	// Ticker ticks every d for the stall check and stop releases it; nil:
	// time.NewTicker. Tests tick by hand with it.
	Ticker func(d time.Duration) (ticks <-chan time.Time, stop func())
}

func (o Options) withDefaults() Options {
	if o.ConnectTimeout <= 0 {
		o.ConnectTimeout = DefaultConnectTimeout
	}
	if o.StallWindow <= 0 {
		o.StallWindow = DefaultStallWindow
	}
	if o.StallFloor == 0 {
		o.StallFloor = DefaultStallFloor
	}
	switch {
	case o.Retries == 0:
		o.Retries = DefaultRetries
	case o.Retries < 0:
		o.Retries = 0
	}
	if o.Backoff == nil {
		o.Backoff = func(n int) time.Duration { return min(time.Second<<min(n-1, 8), maxWait) }
	}
	if o.Sleep == nil {
		o.Sleep = sleep
	}
	if o.Ticker == nil {
		o.Ticker = func(d time.Duration) (<-chan time.Time, func()) {
			t := time.NewTicker(d)
			return t.C, t.Stop
		}
	}
	return o
}

func sleep(ctx context.Context, d time.Duration) error {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

// Retry is one resume, as Options.OnRetry is told of it.
type Retry struct {
	URL     string // as shown.URL shows it
	Attempt int    // in a row without progress, from 1
	Of      int    // the most there may be
	Offset  int64  // the byte it resumes at
	Wait    time.Duration
	Err     error // what ended the previous attempt
}

func (r Retry) String() string {
	what := "resuming"
	if r.Offset == 0 {
		what = "asking again"
	}
	at := ""
	if r.Offset > 0 {
		at = " at " + units.FormatBytes(r.Offset)
	}
	return fmt.Sprintf("%s: %v%s; %s in %s (attempt %d of %d)",
		r.URL, r.Err, at, what, r.Wait.Round(time.Millisecond), r.Attempt, r.Of)
}

// Client opens URLs. It is safe for use by several goroutines.
type Client struct {
	opts Options
	// h2 negotiates HTTP/2 where the server offers it; h1 speaks
	// HTTP/1.1 only, for the rest of a stream whose HTTP/2 failed.
	h2, h1 *http.Client
}

// New is a Client with opts.
func New(opts Options) *Client {
	opts = opts.withDefaults()
	c := &Client{opts: opts}
	c.h2 = &http.Client{Transport: transport(opts, true), CheckRedirect: checkRedirect}
	c.h1 = &http.Client{Transport: transport(opts, false), CheckRedirect: checkRedirect}
	return c
}

func transport(opts Options, h2 bool) *http.Transport {
	d := &net.Dialer{Timeout: opts.ConnectTimeout, KeepAlive: 30 * time.Second}
	t := &http.Transport{
		Proxy:                 http.ProxyFromEnvironment,
		DialContext:           d.DialContext,
		TLSHandshakeTimeout:   opts.ConnectTimeout,
		ExpectContinueTimeout: time.Second,
		IdleConnTimeout:       90 * time.Second,
		MaxIdleConns:          4,
		TLSClientConfig:       &tls.Config{RootCAs: opts.RootCAs, MinVersion: tls.VersionTLS12},
		// The body is the image as served: a compressed file must be
		// hashed as the publisher's checksum says it, not as decoded on
		// the way by a Content-Encoding.
		DisableCompression: true,
		// Large reads from the socket: an image is hundreds of megabytes,
		// and net/http's 4 KiB buffer costs a syscall per 4 KiB.
		ReadBufferSize: 256 << 10,
	}
	t.Protocols = new(http.Protocols)
	t.Protocols.SetHTTP1(true)
	t.Protocols.SetHTTP2(h2)
	return t
}

// ErrRedirects: the server redirects in a loop (or too far).
var ErrRedirects = failure.New(failure.Image, fmt.Sprintf("stopped after %d redirects", maxRedirects))

// checkRedirect allows maxRedirects redirects: via holds the requests
// made, the first and one per redirect followed so far.
func checkRedirect(_ *http.Request, via []*http.Request) error {
	if len(via) > maxRedirects {
		return ErrRedirects
	}
	return nil
}

// The reasons a stream ends with an error (Error wraps one).
var (
	// ErrNotResumable: the connection failed and the server gives no
	// strong ETag or Last-Modified, or refuses ranges: a resume could mix
	// two versions of the file.
	ErrNotResumable = failure.New(failure.Image, "the connection failed and the server gives nothing (no strong ETag or Last-Modified, or no ranges) that a resume could be checked against")
	// ErrResumeWhole: the server answered a resume with the whole file
	// (200): it ignores ranges or the file changed.
	ErrResumeWhole = failure.New(failure.Image, "the server answered the resume with the whole file (200), not the rest of it (206): it ignores ranges or the file changed")
	// ErrChanged: the resumed answer is of another version of the file.
	ErrChanged = failure.New(failure.Image, "the file changed on the server during the transfer")
	// ErrBadRange: the resumed answer's Content-Range is not the rest.
	ErrBadRange = failure.New(failure.Image, "the server's Content-Range is not the rest of the file")
	// ErrStalled: fewer bytes than the floor moved in a window.
	ErrStalled = failure.New(failure.Image, "stalled")
	// ErrLong: the body is longer than its Content-Length said.
	ErrLong = failure.New(failure.Image, "the body is longer than its Content-Length")
	// ErrGaveUp wraps the last failure when the attempts ran out.
	ErrGaveUp = failure.New(failure.Image, "the attempts ran out")
)

// Error is a URL that could not be read (to its end).
type Error struct {
	URL    string // as shown.URL shows it
	Offset int64  // the byte the failure is at
	Err    error
}

func (e *Error) Error() string {
	if e.Offset > 0 {
		return fmt.Sprintf("%s at byte %d: %v", e.URL, e.Offset, e.Err)
	}
	return fmt.Sprintf("%s: %v", e.URL, e.Err)
}
func (e *Error) Unwrap() error { return e.Err }

// Class is the cause's, else Image: the image could not be read.
func (e *Error) Class() failure.Class { return failure.Within(failure.Image, e.Err) }

// StatusError is an HTTP answer that is not the file.
type StatusError struct {
	Code       int
	Status     string
	RetryAfter time.Duration // 0: none given
}

func (e *StatusError) Error() string { return "the server answered " + e.Status }

// Is makes errors.Is(err, fs.ErrNotExist) true of a 404 and a 410.
func (e *StatusError) Is(target error) bool {
	return target == fs.ErrNotExist && (e.Code == http.StatusNotFound || e.Code == http.StatusGone)
}

// Class is Image.
func (e *StatusError) Class() failure.Class { return failure.Image }

// transient says an answer may be different a little later.
func (e *StatusError) transient() bool {
	switch e.Code {
	case http.StatusRequestTimeout, http.StatusTooManyRequests, http.StatusInternalServerError,
		http.StatusBadGateway, http.StatusServiceUnavailable, http.StatusGatewayTimeout:
		return true
	}
	return false
}

// RootCAsWith is the system's CA certificates and those of the PEM file at
// path (a private CA's), for Options.RootCAs. A file without one
// certificate is an error.
func RootCAsWith(path string) (*x509.CertPool, error) {
	pem, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	roots, err := x509.SystemCertPool()
	if err != nil || roots == nil {
		roots = x509.NewCertPool()
	}
	if !roots.AppendCertsFromPEM(pem) {
		return nil, fmt.Errorf("%s: %w", path, ErrNoCertificate)
	}
	return roots, nil
}

// ErrNoCertificate: a CA file holds no PEM certificate.
var ErrNoCertificate = failure.New(failure.Usage, "holds no PEM certificate")

// IsURL says s names an image over HTTP or HTTPS.
func IsURL(s string) bool {
	u, err := url.Parse(s)
	return err == nil && (u.Scheme == "http" || u.Scheme == "https") && u.Host != ""
}

// Body is a URL's content as one stream. Read is for one goroutine;
// Offset and Size may be asked from any.
type Body struct {
	c       *Client
	ctx     context.Context
	url     string // as given
	display string
	name    string
	size    int64 // -1: unknown
	// The first answer's validators, sent with If-Range and compared with
	// a resume's.
	etag, lastModified string
	ranges             bool // the server did not say Accept-Ranges: none
	opened             bool // the first answer was read
	html               bool // its Content-Type is text/html
	h1                 bool // HTTP/2 failed: HTTP/1.1 from now on

	resp   *http.Response // nil between attempts
	cancel context.CancelFunc
	stop   func() // the stall watch's
	stall  atomic.Bool
	moved  atomic.Int64 // bytes received, for the stall watch
	off    atomic.Int64
	fails  int // attempts in a row without a byte
	// For Stats: when the body was asked for, from which byte, and how
	// many attempts followed a failure.
	start   time.Time
	from    int64
	resumes atomic.Int64 // read by Stats while Read runs
	waited  atomic.Int64 // nanoseconds Read spent waiting for the network
	given   atomic.Int64 // bytes Read returned
	// stopCtx cancels ctx (Close: an attempt in flight ends).
	stopCtx context.CancelFunc
	// ahead, after ReadAhead, holds what its goroutine read; the attempt's
	// state (resp, cancel, stop, fails, failed, err, h1) is then that
	// goroutine's until Close waited for it.
	ahead  *ring
	failed error // what ended the attempt in flight; nil: none
	err    error // sticky
}

// Open asks for rawURL and returns its body once the server answered
// with it (200); failures before that are retried as a resume is.
func (c *Client) Open(ctx context.Context, rawURL string) (*Body, error) {
	b := &Body{c: c, url: rawURL, display: shown.URL(rawURL), size: -1, start: time.Now()}
	b.ctx, b.stopCtx = context.WithCancel(ctx)
	if err := b.attempt(); err != nil {
		b.stopCtx()
		return nil, err
	}
	return b, nil
}

// OpenFrom asks for rawURL from byte off of the version whose validator
// (an ETag or a Last-Modified, as a .part kept from an earlier run
// recorded it) and total size are given, and returns its body from off
// when the server answers with the rest of that version (resumed true);
// when it answers with the whole file (it changed, or ignores ranges), the
// body is the whole file from its first byte (resumed false) and the
// caller starts over.
func (c *Client) OpenFrom(ctx context.Context, rawURL string, off int64, validator string, size int64) (b *Body, resumed bool, err error) {
	if off <= 0 || validator == "" {
		b, err := c.Open(ctx, rawURL)
		return b, false, err
	}
	b = &Body{c: c, url: rawURL, display: shown.URL(rawURL), size: size, ranges: true, opened: true,
		name: fileName(rawURL, ""), start: time.Now(), from: off}
	b.ctx, b.stopCtx = context.WithCancel(ctx)
	if strings.HasPrefix(validator, `"`) {
		b.etag = validator
	} else {
		b.lastModified = validator
	}
	b.off.Store(off)
	b.given.Store(off)
	if err := b.attempt(); err != nil {
		b.stopCtx()
		var se *StatusError
		if !errors.Is(err, ErrResumeWhole) && !errors.Is(err, ErrChanged) && !errors.Is(err, ErrBadRange) &&
			!(errors.As(err, &se) && se.Code == http.StatusRequestedRangeNotSatisfiable) {
			return nil, false, err
		}
		b, err := c.Open(ctx, rawURL)
		return b, false, err
	}
	return b, true, nil
}

// Validator is what a resume of the body sends as If-Range: its strong
// ETag, else its Last-Modified; "" when it has neither and cannot be
// resumed.
func (b *Body) Validator() string { return cmp.Or(b.etag, b.lastModified) }

// Name is the file's name: the Content-Disposition's filename, else the
// last segment of the URL's path as given (a CDN's redirect target is
// often an opaque name), for telling the format by its name.
func (b *Body) Name() string { return b.name }

// Size is the body's length (Content-Length), -1 when the server did not
// say it.
func (b *Body) Size() int64 { return b.size }

// Stats is what the body moved so far: the bytes received over the
// network (a body opened from an offset counts from there), the time since
// it was asked for, and the attempts that followed a failure.
func (b *Body) Stats() (received int64, elapsed time.Duration, resumes int) {
	return b.off.Load() - b.from, time.Since(b.start), int(b.resumes.Load())
}

// Waited is how long Read waited for the network so far: beside Stats'
// elapsed, whether the download sets a write's pace (a reader that waits
// most of the time) or its reader does (it reads what had arrived).
func (b *Body) Waited() time.Duration { return time.Duration(b.waited.Load()) }

// Offset is the file's offset of the next byte Read returns.
func (b *Body) Offset() int64 { return b.given.Load() }

// URL is the URL as messages show it (shown.URL).
func (b *Body) URL() string { return b.display }

// Read reads the body; a failure is resumed before Read returns, so that
// it returns an error only when the stream cannot go on. After ReadAhead
// it copies from the read-ahead ring.
func (b *Body) Read(p []byte) (int, error) {
	if b.ahead != nil {
		n, err := b.ahead.read(p, &b.waited)
		b.given.Add(int64(n))
		return n, err
	}
	n, err := b.read(p)
	b.given.Add(int64(n))
	return n, err
}

// read reads the network, resuming a failed attempt: Read's, or the
// read-ahead goroutine's once it runs.
func (b *Body) read(p []byte) (int, error) {
	for {
		if b.err != nil {
			return 0, b.err
		}
		if b.resp == nil {
			if err := b.attempt(); err != nil {
				return 0, err
			}
		}
		t := time.Now()
		n, err := b.resp.Body.Read(p)
		if b.ahead == nil {
			// With a read-ahead, Read's own wait for the ring counts.
			b.waited.Add(int64(time.Since(t)))
		}
		off := b.off.Add(int64(n))
		b.moved.Add(int64(n))
		if n > 0 {
			b.fails = 0
		}
		switch {
		case b.size >= 0 && off > b.size:
			b.end()
			b.err = &Error{URL: b.display, Offset: b.size, Err: ErrLong}
			return n - int(off-b.size), nil
		case err == nil:
			return n, nil
		case err == io.EOF && (b.size < 0 || off == b.size):
			b.end()
			b.err = io.EOF
			return n, io.EOF
		case err == io.EOF:
			err = io.ErrUnexpectedEOF // shorter than Content-Length
		}
		if b.stall.Load() {
			err = ErrStalled
		} else if b.resp.ProtoMajor == 2 {
			// A connection's HTTP/2 that fails mid-body (a proxy or
			// server that breaks it) is not asked again: HTTP/1.1 from
			// here on.
			b.h1 = true
		}
		b.failed = err
		b.end()
		if n > 0 {
			return n, nil // the resume comes with the next Read
		}
	}
}

// Close ends the stream; a Read waiting for the read-ahead returns, and
// the read-ahead's goroutine has ended when Close returns.
func (b *Body) Close() error {
	b.stopCtx()
	if b.ahead != nil {
		b.ahead.stop()
	}
	b.end()
	if b.err == nil {
		b.err = errClosed
	}
	return nil
}

var errClosed = errors.New("read after Close")

// errHTML: a small file answered with a web page.
var errHTML = fmt.Errorf("is a web page (text/html), taken as no such file: %w", fs.ErrNotExist)

// end closes the attempt in flight.
func (b *Body) end() {
	if b.resp == nil {
		return
	}
	b.stop()
	b.cancel()
	b.resp.Body.Close()
	b.resp = nil
}

// attempt asks for the rest of the body, as often as the failures allow,
// and sets b.resp; its error is sticky.
func (b *Body) attempt() error {
	o := b.c.opts
	for {
		if err := b.ctx.Err(); err != nil {
			b.err = err
			return err
		}
		off := b.off.Load()
		if b.failed != nil {
			if errors.Is(b.failed, context.Canceled) && b.ctx.Err() != nil {
				b.err = b.ctx.Err()
				return b.err
			}
			if !b.resumable() {
				b.err = &Error{URL: b.display, Offset: off, Err: fmt.Errorf("%w (%v)", ErrNotResumable, b.failed)}
				return b.err
			}
			b.fails++
			if b.fails > o.Retries {
				b.err = &Error{URL: b.display, Offset: off, Err: fmt.Errorf("%w: %d in a row, the last: %w", ErrGaveUp, b.fails, b.failed)}
				return b.err
			}
			wait := o.Backoff(b.fails)
			var se *StatusError
			if errors.As(b.failed, &se) && se.RetryAfter > wait {
				wait = min(se.RetryAfter, maxWait)
			}
			b.resumes.Add(1)
			if o.OnRetry != nil {
				o.OnRetry(Retry{URL: b.display, Attempt: b.fails, Of: o.Retries, Offset: off, Wait: wait, Err: b.failed})
			}
			if err := o.Sleep(b.ctx, wait); err != nil {
				b.err = err
				return err
			}
		}
		err := b.request(off)
		if err == nil {
			b.failed = nil
			return nil
		}
		if !retriable(err) {
			b.err = &Error{URL: b.display, Offset: off, Err: err}
			return b.err
		}
		b.failed = err
	}
}

// resumable says a failed stream may be asked for again: before the first
// byte always, after it only with a validator for If-Range.
func (b *Body) resumable() bool {
	return b.off.Load() == 0 || b.ranges && (b.etag != "" || b.lastModified != "")
}

// retriable says an attempt's failure may pass: a network failure, a
// stall, a transient answer; not a certificate, a redirect loop, a
// missing file or a resume that is not the rest of this version.
func retriable(err error) bool {
	var se *StatusError
	var cert *tls.CertificateVerificationError
	var unknown x509.UnknownAuthorityError
	var host x509.HostnameError
	var invalid x509.CertificateInvalidError
	switch {
	case errors.As(err, &se):
		return se.transient()
	case errors.Is(err, ErrRedirects), errors.Is(err, ErrResumeWhole), errors.Is(err, ErrChanged), errors.Is(err, ErrBadRange),
		errors.As(err, &cert), errors.As(err, &unknown), errors.As(err, &host), errors.As(err, &invalid):
		return false
	}
	// A redirect to a URL net/http cannot follow (ftp:) or parse.
	var ue *url.Error
	return !errors.As(err, &ue) && !strings.Contains(err.Error(), "unsupported protocol scheme")
}

// request sends one GET for the body from off and checks the answer.
func (b *Body) request(off int64) error {
	ctx, cancel := context.WithCancel(b.ctx)
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, b.url, nil)
	if err != nil {
		cancel()
		return err
	}
	if b.c.opts.UserAgent != "" {
		req.Header.Set("User-Agent", b.c.opts.UserAgent)
	}
	if off > 0 {
		req.Header.Set("Range", fmt.Sprintf("bytes=%d-", off))
		req.Header.Set("If-Range", cmp.Or(b.etag, b.lastModified))
	}
	b.stall.Store(false)
	stop := b.watch(cancel)
	client := b.c.h2
	if b.h1 {
		client = b.c.h1
	}
	resp, err := client.Do(req)
	if err != nil {
		stop()
		cancel()
		if b.stall.Load() {
			return ErrStalled
		}
		var ue *url.Error
		if errors.As(err, &ue) && ue.Op != "parse" {
			err = ue.Err // the URL is said once, by Error
		}
		return err
	}
	if err := b.check(resp, off); err != nil {
		stop()
		drain(resp, cancel)
		cancel()
		resp.Body.Close()
		return err
	}
	b.resp, b.cancel, b.stop = resp, cancel, stop
	return nil
}

// maxDrain bounds the answer drain reads, and drainTime its wait.
const (
	maxDrain  = 16 << 10
	drainTime = time.Second
)

// drain reads the rest of a small answer that is not taken (a 404's page,
// a 503's) so that net/http keeps its connection for the next request
// instead of closing it: the files looked for beside a URL are mostly
// missing, and each new connection cost a write from a local server a
// connect and its wait. A body of unknown or larger length is left, and
// cancel ends a server that sends less than it said.
func drain(resp *http.Response, cancel context.CancelFunc) {
	if resp.ContentLength < 0 || resp.ContentLength > maxDrain {
		return
	}
	t := time.AfterFunc(drainTime, cancel)
	defer t.Stop()
	io.Copy(io.Discard, io.LimitReader(resp.Body, maxDrain))
}

// watch cancels the attempt when fewer than the floor's bytes moved in
// the last window, looked at every slice of it (stallSlices); the stop it
// returns ends the watch.
func (b *Body) watch(cancel context.CancelFunc) (stop func()) {
	o := b.c.opts
	if o.StallFloor < 0 {
		return func() {}
	}
	ticks, stopTicks := o.Ticker(max(o.StallWindow/stallSlices, time.Nanosecond))
	done := make(chan struct{})
	floor := int64(float64(o.StallFloor) * o.StallWindow.Seconds())
	go func() {
		// marks[i] is what had moved at a tick one window ago (at the
		// start for the first window).
		var marks [stallSlices]int64
		for i := range marks {
			marks[i] = b.moved.Load()
		}
		for n := 1; ; n++ {
			select {
			case <-done:
				return
			case <-ticks:
			}
			now, i := b.moved.Load(), n%stallSlices
			if n >= stallSlices && now-marks[i] < max(floor, 1) {
				b.stall.Store(true)
				cancel()
				return
			}
			marks[i] = now
		}
	}()
	var once sync.Once
	return func() {
		once.Do(func() {
			close(done)
			stopTicks()
		})
	}
}

// check accepts an answer: the whole file (200) for the first request,
// the rest of the same version (206 from off) for a resume.
func (b *Body) check(resp *http.Response, off int64) error {
	switch {
	case resp.StatusCode == http.StatusOK && off == 0:
		if !b.opened {
			b.first(resp)
			return nil
		}
		// Asked again before the first byte: still the same file?
		return b.sameVersion(resp)
	case resp.StatusCode == http.StatusOK:
		return ErrResumeWhole
	case resp.StatusCode == http.StatusPartialContent && off > 0:
		if err := b.sameVersion(resp); err != nil {
			return err
		}
		return b.checkRange(resp.Header.Get("Content-Range"), off)
	}
	se := &StatusError{Code: resp.StatusCode, Status: resp.Status}
	if resp.StatusCode == http.StatusServiceUnavailable || resp.StatusCode == http.StatusTooManyRequests {
		se.RetryAfter = retryAfter(resp.Header.Get("Retry-After"), time.Now())
	}
	return se
}

// first records what the first answer says of the file.
func (b *Body) first(resp *http.Response) {
	b.opened = true
	b.size = resp.ContentLength // -1 when not said
	if etag := resp.Header.Get("ETag"); etag != "" && !strings.HasPrefix(etag, "W/") {
		// If-Range takes a strong validator only (RFC 9110, 13.1.5).
		b.etag = etag
	}
	b.lastModified = resp.Header.Get("Last-Modified")
	b.ranges = !strings.EqualFold(strings.TrimSpace(resp.Header.Get("Accept-Ranges")), "none")
	b.name = fileName(b.url, resp.Header.Get("Content-Disposition"))
	b.html = strings.HasPrefix(strings.ToLower(resp.Header.Get("Content-Type")), "text/html")
}

// sameVersion compares an answer's validators with the first answer's.
func (b *Body) sameVersion(resp *http.Response) error {
	switch {
	case b.etag != "" && resp.Header.Get("ETag") != b.etag:
		return fmt.Errorf("%w: its ETag was %s and is now %q", ErrChanged, b.etag, resp.Header.Get("ETag"))
	case b.etag == "" && b.lastModified != "" && resp.Header.Get("Last-Modified") != b.lastModified:
		return fmt.Errorf("%w: its Last-Modified was %s and is now %q", ErrChanged, b.lastModified, resp.Header.Get("Last-Modified"))
	case resp.StatusCode == http.StatusOK && resp.ContentLength != b.size:
		return fmt.Errorf("%w: its length was %d and is now %d", ErrChanged, b.size, resp.ContentLength)
	}
	return nil
}

// checkRange accepts "bytes OFF-LAST/TOTAL" that is the rest of the file.
func (b *Body) checkRange(cr string, off int64) error {
	bad := func() error { return fmt.Errorf("%w: asked from byte %d, got %q", ErrBadRange, off, cr) }
	spec, ok := strings.CutPrefix(cr, "bytes ")
	if !ok {
		return bad()
	}
	rng, total, ok := strings.Cut(spec, "/")
	if !ok {
		return bad()
	}
	first, last, ok := strings.Cut(rng, "-")
	if !ok {
		return bad()
	}
	f, err1 := strconv.ParseInt(first, 10, 64)
	l, err2 := strconv.ParseInt(last, 10, 64)
	if err1 != nil || err2 != nil || f != off || l < f {
		return bad()
	}
	if b.size >= 0 {
		if t, err := strconv.ParseInt(total, 10, 64); total != "*" && (err != nil || t != b.size) || l != b.size-1 {
			return bad()
		}
	}
	return nil
}

// retryAfter is a Retry-After header's wait (seconds or an HTTP date), 0
// when it says none.
func retryAfter(v string, now time.Time) time.Duration {
	v = strings.TrimSpace(v)
	if v == "" {
		return 0
	}
	if s, err := strconv.Atoi(v); err == nil {
		if s < 0 {
			return 0
		}
		return min(time.Duration(s)*time.Second, maxWait)
	}
	if t, err := http.ParseTime(v); err == nil && t.After(now) {
		return min(t.Sub(now), maxWait)
	}
	return 0
}

// fileName is the name an image is known by: Content-Disposition's
// filename (its last element only), else the URL's last path segment.
func fileName(rawURL, disposition string) string {
	if _, params, err := mime.ParseMediaType(disposition); err == nil {
		if n := path.Base(strings.ReplaceAll(params["filename"], "\\", "/")); n != "." && n != "/" && n != ".." && n != "" {
			return n
		}
	}
	u, err := url.Parse(rawURL)
	if err != nil {
		return ""
	}
	if n := path.Base(u.Path); n != "." && n != "/" {
		return n
	}
	return ""
}

// maxSmall bounds ReadFile's limit when the caller gives none.
const maxSmall = 64 << 20

// ReadFile reads a small file (a checksum list, a signature, a block
// map) whole, at most limit bytes; a 404 or 410, and an HTML page (a site's
// page for a file it does not have, served with a 200), are an error for
// which errors.Is(err, fs.ErrNotExist) holds.
func (c *Client) ReadFile(ctx context.Context, rawURL string, limit int64) ([]byte, error) {
	if limit <= 0 {
		limit = maxSmall
	}
	b, err := c.Open(ctx, rawURL)
	if err != nil {
		return nil, err
	}
	defer b.Close()
	if b.html {
		return nil, &Error{URL: b.display, Err: errHTML}
	}
	if b.size > limit {
		return nil, &Error{URL: b.display, Err: fmt.Errorf("is larger than %d bytes", limit)}
	}
	data, err := io.ReadAll(io.LimitReader(b, limit+1))
	if err != nil {
		return nil, err
	}
	if int64(len(data)) > limit {
		return nil, &Error{URL: b.display, Err: fmt.Errorf("is larger than %d bytes", limit)}
	}
	return data, nil
}
