package httpsrc

import (
	"bytes"
	"context"
	"crypto/x509"
	"encoding/pem"
	"errors"
	"io"
	"io/fs"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/usbflash/usbflash/internal/failure"
	"github.com/usbflash/usbflash/internal/testkit/factsonly"
	"github.com/usbflash/usbflash/internal/testkit/flakyhttp"
)

// testData is a file whose every offset holds a different byte pattern,
// so that bytes from the wrong offset or version show.
func testData(n int, seed byte) []byte {
	b := make([]byte, n)
	x := uint32(seed) + 1
	for i := range b {
		x = x*1664525 + 1013904223
		b[i] = byte(x >> 24)
	}
	return b
}

// harness is a client whose waits are instant and recorded, whose stall
// windows tick when the server stalls, and whose retries are recorded.
type harness struct {
	mu      sync.Mutex
	waits   []time.Duration
	retries []Retry
	ticks   chan time.Time
	// delivered is what readAll has read; a stall is ticked once the
	// bytes before it were read (stallAt), as a window would find them.
	delivered atomic.Int64
	stallAt   int64
	ahead     bool // readAll reads through the read-ahead
}

func newHarness() *harness { return &harness{} }

func (h *harness) options() Options {
	return Options{
		StallWindow: time.Second, StallFloor: 1, Retries: 3,
		Sleep: func(ctx context.Context, d time.Duration) error {
			h.mu.Lock()
			h.waits = append(h.waits, d)
			h.mu.Unlock()
			return ctx.Err()
		},
		Ticker: func(time.Duration) (<-chan time.Time, func()) {
			// Each attempt's own: a stall ticks the attempt that stalled.
			ch := make(chan time.Time)
			h.mu.Lock()
			h.ticks = ch
			h.mu.Unlock()
			return ch, func() {}
		},
		OnRetry: func(r Retry) { h.mu.Lock(); h.retries = append(h.retries, r); h.mu.Unlock() },
	}
}

// onStall ticks the stall windows until the stalled request ends.
func (h *harness) onStall(ctx context.Context) {
	h.mu.Lock()
	ticks := h.ticks
	h.mu.Unlock()
	go func() {
		for h.delivered.Load() < h.stallAt {
			select {
			case <-ctx.Done():
				return
			case <-time.After(time.Millisecond):
			}
		}
		for {
			select {
			case ticks <- time.Time{}:
			case <-ctx.Done():
				return
			}
		}
	}()
}

var lastMod = time.Date(2026, 11, 3, 10, 0, 0, 0, time.UTC)

func TestBodyResumes(t *testing.T) {
	const n = 300 << 10
	data := testData(n, 1)
	v1 := flakyhttp.Version{Data: data, ETag: `"v1"`, LastModified: lastMod}
	v2 := flakyhttp.Version{Data: testData(n, 2), ETag: `"v2"`, LastModified: lastMod.Add(time.Hour)}
	tests := []resumeCase{
		{name: "clean", v: v1, ranges: []string{""}},
		{name: "drop after the first byte", v: v1, faults: map[int]flakyhttp.Fault{0: {DropAt: 1}},
			ranges: []string{"", "bytes=1-"}, retries: 1},
		{name: "drop mid-body", v: v1, faults: map[int]flakyhttp.Fault{0: {DropAt: 100000}},
			ranges: []string{"", "bytes=100000-"}, retries: 1},
		{name: "drop before the last byte", v: v1, faults: map[int]flakyhttp.Fault{0: {DropAt: n - 1}},
			ranges: []string{"", "bytes=307199-"}, retries: 1},
		{name: "dropped three times", v: v1, faults: map[int]flakyhttp.Fault{0: {DropAt: 5000}, 1: {DropAt: 70000}, 2: {DropAt: 70001}},
			ranges: []string{"", "bytes=5000-", "bytes=70000-", "bytes=70001-"}, retries: 3},
		{name: "resume by Last-Modified when the ETag is weak", v: flakyhttp.Version{Data: data, ETag: `W/"weak"`, LastModified: lastMod},
			faults: map[int]flakyhttp.Fault{0: {DropAt: 9000}}, ranges: []string{"", "bytes=9000-"}, retries: 1},
		{name: "stall", v: v1, faults: map[int]flakyhttp.Fault{0: {StallAt: 64 << 10}},
			ranges: []string{"", "bytes=65536-"}, retries: 1},
		{name: "slow trickle", v: v1, faults: map[int]flakyhttp.Fault{0: {Chunk: 997}}, ranges: []string{""}},
		{name: "500 then the file", v: v1, faults: map[int]flakyhttp.Fault{0: {Status: 500}, 1: {Status: 502}},
			ranges: []string{"", "", ""}, retries: 2, waits: []time.Duration{time.Second, 2 * time.Second}},
		{name: "503 with Retry-After", v: v1, faults: map[int]flakyhttp.Fault{0: {Status: 503, RetryAfter: "7"}},
			ranges: []string{"", ""}, retries: 1, waits: []time.Duration{7 * time.Second}},
		{name: "503 mid-body", v: v1, faults: map[int]flakyhttp.Fault{0: {DropAt: 4096}, 1: {Status: 503}},
			ranges: []string{"", "bytes=4096-", "bytes=4096-"}, retries: 2},

		{name: "200 to a range", v: v1, faults: map[int]flakyhttp.Fault{0: {DropAt: 4096}, 1: {Whole: true}},
			want: ErrResumeWhole, ranges: []string{"", "bytes=4096-"}, retries: 1},
		{name: "file replaced mid-body", v: v1, faults: map[int]flakyhttp.Fault{0: {DropAt: 4096}, 1: {Replace: &v2}},
			want: ErrResumeWhole, ranges: []string{"", "bytes=4096-"}, retries: 1},
		{name: "ETag changed on a 206", v: v1, faults: map[int]flakyhttp.Fault{0: {DropAt: 4096}, 1: {Replace: &v2, IgnoreIfRange: true}},
			want: ErrChanged, ranges: []string{"", "bytes=4096-"}, retries: 1},
		{name: "Content-Range elsewhere", v: v1, faults: map[int]flakyhttp.Fault{0: {DropAt: 4096}, 1: {Shift: 1}},
			want: ErrBadRange, ranges: []string{"", "bytes=4096-"}, retries: 1},
		{name: "no validator", v: flakyhttp.Version{Data: data}, faults: map[int]flakyhttp.Fault{0: {DropAt: 4096}},
			want: ErrNotResumable, ranges: []string{""}},
		{name: "no ranges", v: flakyhttp.Version{Data: data, ETag: `"v1"`, NoRanges: true}, faults: map[int]flakyhttp.Fault{0: {DropAt: 4096}},
			want: ErrNotResumable, ranges: []string{""}},
		{name: "lying Content-Length", v: v1, faults: map[int]flakyhttp.Fault{0: {ExtraLength: 100}},
			want: &StatusError{Code: http.StatusRequestedRangeNotSatisfiable}, ranges: []string{"", "bytes=307200-"}, retries: 1},
		{name: "503 for ever", v: v1, faults: map[int]flakyhttp.Fault{0: {Status: 503}, 1: {Status: 503}, 2: {Status: 503}, 3: {Status: 503}},
			want: ErrGaveUp, ranges: []string{"", "", "", ""}, retries: 3},
		{name: "not found", v: v1, path: "/missing", want: fs.ErrNotExist},
		{name: "redirect loop", v: v1, path: "/loop", want: ErrRedirects},
		{name: "10 redirects are followed", v: v1, path: "/hops/10/os.img"},
		{name: "11 redirects are not", v: v1, path: "/hops/11/os.img", want: ErrRedirects},
	}
	// Each case read by Read itself and through the read-ahead ring,
	// whose goroutine meets the faults while Read drains earlier chunks.
	for _, ahead := range []bool{false, true} {
		for _, tc := range tests {
			name := tc.name
			if ahead {
				name += " read ahead"
			}
			t.Run(name, func(t *testing.T) { tc.run(t, ahead) })
		}
	}
}

type resumeCase struct {
	name    string
	v       flakyhttp.Version
	faults  map[int]flakyhttp.Fault
	path    string
	want    error // nil: the file, byte-exact
	ranges  []string
	retries int
	waits   []time.Duration
}

// run reads the case's file from its misbehaving server, with or without
// the read-ahead.
func (tc resumeCase) run(t *testing.T, ahead bool) {
	h := newHarness()
	h.ahead = ahead
	srv := flakyhttp.New(tc.v, tc.faults)
	srv.Path = "/os.img"
	srv.OnStall = h.onStall
	h.stallAt = tc.faults[0].StallAt
	ts := httptest.NewServer(srv)
	defer ts.Close()
	path := "/os.img"
	if tc.path != "" {
		path = tc.path
	}
	got, err := h.readAll(New(h.options()), ts.URL+path)
	checkOutcome(t, got, err, tc.v.Data, tc.want)
	if tc.path == "" && !slices.Equal(srv.Ranges, tc.ranges) {
		t.Errorf("ranges asked %q, want %q", srv.Ranges, tc.ranges)
	}
	if len(h.retries) != tc.retries {
		t.Errorf("%d retries said, want %d: %v", len(h.retries), tc.retries, h.retries)
	}
	if tc.waits != nil && !slices.Equal(h.waits, tc.waits) {
		t.Errorf("waits %v, want %v", h.waits, tc.waits)
	}
}

func (h *harness) readAll(c *Client, url string) ([]byte, error) {
	b, err := c.Open(context.Background(), url)
	if err != nil {
		return nil, err
	}
	defer b.Close()
	if h.ahead {
		b.ReadAhead()
	}
	// Small reads, as a decoder's are, so faults land between them.
	var out bytes.Buffer
	buf := make([]byte, 3000)
	for {
		n, err := b.Read(buf)
		out.Write(buf[:n])
		h.delivered.Add(int64(n))
		if err == io.EOF {
			return out.Bytes(), nil
		}
		if err != nil {
			return out.Bytes(), err
		}
	}
}

// checkOutcome: the file byte-exact, or the error wanted and never
// bytes of another version.
func checkOutcome(t *testing.T, got []byte, err error, data []byte, want error) {
	t.Helper()
	if want == nil {
		if err != nil {
			t.Fatalf("read: %v", err)
		}
		if !bytes.Equal(got, data) {
			t.Fatalf("got %d bytes that differ from the file's %d", len(got), len(data))
		}
		return
	}
	var se *StatusError
	if ws, ok := want.(*StatusError); ok {
		if !errors.As(err, &se) || se.Code != ws.Code {
			t.Fatalf("error %v, want status %d", err, ws.Code)
		}
	} else if !errors.Is(err, want) {
		t.Fatalf("error %v, want %v", err, want)
	}
	if failure.Of(err) != failure.Image {
		t.Errorf("class %v, want image", failure.Of(err))
	}
	factsonly.Check(t, err.Error())
	if !bytes.Equal(got, data[:len(got)]) {
		t.Fatalf("the %d bytes delivered before the error are not the file's first bytes", len(got))
	}
}

// TestTLS: a server with a test CA is trusted only when its CA is given;
// HTTP/2 is spoken where offered, and after a failure on it the resume
// speaks HTTP/1.1.
func TestTLS(t *testing.T) {
	data := testData(200<<10, 3)
	tests := []struct {
		name   string
		trust  bool
		faults map[int]flakyhttp.Fault
		protos []string
		want   error
	}{
		{name: "trusted", trust: true, protos: []string{"HTTP/2.0"}},
		{name: "HTTP/2 drop falls back to HTTP/1.1", trust: true, faults: map[int]flakyhttp.Fault{0: {DropAt: 50000}},
			protos: []string{"HTTP/2.0", "HTTP/1.1"}},
		{name: "unknown CA", want: x509.UnknownAuthorityError{}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			srv := flakyhttp.New(flakyhttp.Version{Data: data, ETag: `"x"`}, tc.faults)
			ts := httptest.NewUnstartedServer(srv)
			ts.EnableHTTP2 = true
			ts.StartTLS()
			defer ts.Close()
			h := newHarness()
			o := h.options()
			if tc.trust {
				o.RootCAs = x509.NewCertPool()
				o.RootCAs.AddCert(ts.Certificate())
			}
			got, err := h.readAll(New(o), ts.URL+"/os.img")
			if tc.want != nil {
				var ua x509.UnknownAuthorityError
				if !errors.As(err, &ua) {
					t.Fatalf("error %v, want an unknown authority", err)
				}
				if srv.Requests() != 0 || len(h.retries) != 0 {
					t.Errorf("%d requests and %d retries for a certificate that is not trusted", srv.Requests(), len(h.retries))
				}
				return
			}
			checkOutcome(t, got, err, data, nil)
			if !slices.Equal(srv.Protos, tc.protos) {
				t.Errorf("protocols %q, want %q", srv.Protos, tc.protos)
			}
		})
	}
}

func TestName(t *testing.T) {
	tests := []struct{ url, disposition, want string }{
		{"https://h/a/os.img.xz", "", "os.img.xz"},
		{"https://h/a/os.img.xz?X-Token=abc&x=.zip", "", "os.img.xz"},
		{"https://h/a/os%20one.img.gz", "", "os one.img.gz"},
		{"https://h/download?id=7", `attachment; filename="os.img.zst"`, "os.img.zst"},
		{"https://h/download", `attachment; filename="../../etc/os.img"`, "os.img"},
		{"https://h/", "", ""},
	}
	for _, tc := range tests {
		if got := fileName(tc.url, tc.disposition); got != tc.want {
			t.Errorf("fileName(%q, %q) = %q, want %q", tc.url, tc.disposition, got, tc.want)
		}
	}
}

func TestRetryAfter(t *testing.T) {
	now := lastMod
	tests := []struct {
		v    string
		want time.Duration
	}{
		{"", 0}, {"5", 5 * time.Second}, {"-1", 0}, {"99999", maxWait},
		{now.Add(30 * time.Second).Format(http.TimeFormat), 30 * time.Second}, {"soon", 0},
	}
	for _, tc := range tests {
		if got := retryAfter(tc.v, now); got != tc.want {
			t.Errorf("retryAfter(%q) = %v, want %v", tc.v, got, tc.want)
		}
	}
}

func TestReadFile(t *testing.T) {
	srv := flakyhttp.New(flakyhttp.Version{Data: []byte("x")}, nil)
	srv.Path = "/os.img"
	srv.Files["/SHA256SUMS"] = []byte("abc  os.img\n")
	srv.Files["/page"] = []byte("<!doctype html><title>Not here</title>")
	ts := httptest.NewUnstartedServer(srv)
	var conns atomic.Int64
	ts.Config.ConnState = func(_ net.Conn, s http.ConnState) {
		if s == http.StateNew {
			conns.Add(1)
		}
	}
	ts.Start()
	defer ts.Close()
	// The lookups beside an image, one after the other as a session
	// makes them: missing files (404s) keep their connection.
	c0 := New(newHarness().options())
	for _, p := range []string{"/os.img.sha256", "/os.img.sha256sum", "/os.img.sha", "/SHA256SUMS", "/os.img.bmap"} {
		c0.ReadFile(context.Background(), ts.URL+p, 100)
	}
	if n := conns.Load(); n != 1 {
		t.Errorf("5 small files read over %d connections, want 1", n)
	}
	c := New(newHarness().options())
	got, err := c.ReadFile(context.Background(), ts.URL+"/SHA256SUMS", 100)
	if err != nil || string(got) != "abc  os.img\n" {
		t.Fatalf("ReadFile = %q, %v", got, err)
	}
	if _, err := c.ReadFile(context.Background(), ts.URL+"/SHA256SUMS", 5); err == nil {
		t.Error("a file over the limit was read")
	}
	for _, p := range []string{"/os.img.sha256", "/page"} {
		if _, err := c.ReadFile(context.Background(), ts.URL+p, 100); !errors.Is(err, fs.ErrNotExist) {
			t.Errorf("%s: %v, want fs.ErrNotExist", p, err)
		}
	}
}

// aheadBody is a body of data from a server with faults, reading ahead.
func aheadBody(t *testing.T, ctx context.Context, data []byte, faults map[int]flakyhttp.Fault) *Body {
	t.Helper()
	srv := flakyhttp.New(flakyhttp.Version{Data: data, ETag: `"v1"`, LastModified: lastMod}, faults)
	ts := httptest.NewServer(srv)
	t.Cleanup(ts.Close)
	b, err := New(newHarness().options()).Open(ctx, ts.URL+"/os.img")
	if err != nil {
		t.Fatal(err)
	}
	b.ReadAhead()
	return b
}

// ended says the read-ahead's goroutine has returned.
func ended(b *Body) bool {
	select {
	case <-b.ahead.exited:
		return true
	default:
		return false
	}
}

// TestReadAheadCancelFull: a context cancelled while every buffer of the
// ring is queued ends the stream after the queued bytes (in order, the
// file's), with the cancellation, and the goroutine ends.
func TestReadAheadCancelFull(t *testing.T) {
	data := testData(4*ReadAheadMemory, 4)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	b := aheadBody(t, ctx, data, nil)
	defer b.Close()
	for len(b.ahead.full) < ReadAheadBuffers {
		time.Sleep(time.Millisecond) // until the goroutine waits for a free buffer
	}
	cancel()
	got, err := io.ReadAll(b)
	if !errors.Is(err, context.Canceled) {
		t.Fatalf("error %v after %d bytes, want the cancellation", err, len(got))
	}
	if queued := (ReadAheadBuffers - 1) * ReadAheadSize; len(got) < queued || len(got) >= len(data) {
		t.Errorf("%d bytes before the cancellation, want the %d queued at least and not the whole file", len(got), queued)
	}
	if !bytes.Equal(got, data[:len(got)]) {
		t.Error("the bytes before the cancellation are not the file's first bytes")
	}
	b.Close()
	if !ended(b) {
		t.Error("the read-ahead's goroutine runs on after Close")
	}
}

// TestReadAheadClose: Close ends the read-ahead's goroutine whatever it
// is doing, and a Read waiting on the ring (the server stalled, the
// stall watch not ticking) returns.
func TestReadAheadClose(t *testing.T) {
	data := testData(256<<10, 5)
	tests := []struct {
		name   string
		faults map[int]flakyhttp.Fault
		read   int // bytes read before Close
		wait   bool
	}{
		{name: "nothing read", read: 0},
		{name: "half read", read: 128 << 10},
		{name: "a Read waits for a stalled server", faults: map[int]flakyhttp.Fault{0: {StallAt: 5000}}, read: 5000, wait: true},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			b := aheadBody(t, context.Background(), data, tc.faults)
			got := make([]byte, tc.read)
			if _, err := io.ReadFull(b, got); err != nil || !bytes.Equal(got, data[:tc.read]) {
				t.Fatalf("the first %d bytes: %v", tc.read, err)
			}
			type result struct {
				n   int
				err error
			}
			waiting := make(chan result, 1)
			if tc.wait {
				go func() {
					n, err := b.Read(make([]byte, 100))
					waiting <- result{n, err}
				}()
			}
			b.Close()
			if !ended(b) {
				t.Error("the read-ahead's goroutine runs on after Close")
			}
			if tc.wait {
				if r := <-waiting; r.n != 0 || !errors.Is(r.err, errClosed) {
					t.Errorf("the waiting Read returned %d, %v; want 0, %v", r.n, r.err, errClosed)
				}
			}
			if n, err := b.Read(make([]byte, 100)); n != 0 || !errors.Is(err, errClosed) {
				t.Errorf("Read after Close: %d, %v", n, err)
			}
		})
	}
}

// TestStallFoundAfterOneWindow: a body that stops is found stalled once
// the window (60 s by default) has passed without the floor's bytes, give
// or take one slice of it, not up to two windows later. Time is the
// ticks': each tick the stall watch asked for is its period, ticked by
// hand once the bytes before the stall were read.
func TestStallFoundAfterOneWindow(t *testing.T) {
	data := testData(300<<10, 9)
	const sent = 100000
	for _, window := range []time.Duration{DefaultStallWindow, 10 * time.Second} {
		t.Run(window.String(), func(t *testing.T) {
			srv := flakyhttp.New(flakyhttp.Version{Data: data, ETag: `"s"`}, map[int]flakyhttp.Fault{0: {StallAt: sent}})
			stalled := make(chan context.Context, 1)
			srv.OnStall = func(ctx context.Context) { stalled <- ctx }
			ts := httptest.NewServer(srv)
			defer ts.Close()
			var mu sync.Mutex
			var period time.Duration
			var ticks chan time.Time
			o := Options{StallWindow: window, Retries: -1,
				Ticker: func(d time.Duration) (<-chan time.Time, func()) {
					mu.Lock()
					defer mu.Unlock()
					period, ticks = d, make(chan time.Time)
					return ticks, func() {}
				}}
			b, err := New(o).Open(context.Background(), ts.URL+"/os.img")
			if err != nil {
				t.Fatal(err)
			}
			defer b.Close()
			read := make(chan error, 1)
			go func() {
				_, err := io.Copy(io.Discard, b)
				read <- err
			}()
			ctx := <-stalled
			for b.Offset() < sent {
				time.Sleep(time.Millisecond) // the bytes before the stall are read first
			}
			mu.Lock()
			tick, d := ticks, period
			mu.Unlock()
			var elapsed time.Duration
			for ctx.Err() == nil && elapsed <= 3*window {
				select {
				case tick <- time.Time{}:
					elapsed += d
				case <-ctx.Done():
				}
			}
			if err := <-read; !errors.Is(err, ErrStalled) {
				t.Fatalf("read: %v, want a stall", err)
			}
			if elapsed < window || elapsed > window+window/stallSlices {
				t.Errorf("the stall was found after %v of ticks, want between %v and %v", elapsed, window, window+window/stallSlices)
			}
		})
	}
}

// TestRootCAsWith: a private CA's PEM file is trusted beside the system's
// CAs; a file without a certificate is a usage error.
func TestRootCAsWith(t *testing.T) {
	data := testData(50<<10, 4)
	ts := httptest.NewTLSServer(flakyhttp.New(flakyhttp.Version{Data: data, ETag: `"x"`}, nil))
	defer ts.Close()
	dir := t.TempDir()
	ca := filepath.Join(dir, "ca.pem")
	if err := os.WriteFile(ca, pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: ts.Certificate().Raw}), 0o644); err != nil {
		t.Fatal(err)
	}
	empty := filepath.Join(dir, "empty.pem")
	if err := os.WriteFile(empty, []byte("not a certificate\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name, file string
		want       error // RootCAsWith's
	}{
		{"the CA's PEM", ca, nil},
		{"no certificate", empty, ErrNoCertificate},
		{"no file", filepath.Join(dir, "missing.pem"), fs.ErrNotExist},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			roots, err := RootCAsWith(tc.file)
			if !errors.Is(err, tc.want) {
				t.Fatalf("RootCAsWith: %v, want %v", err, tc.want)
			}
			if err != nil {
				return
			}
			h := newHarness()
			o := h.options()
			o.RootCAs = roots
			got, err := h.readAll(New(o), ts.URL+"/os.img")
			checkOutcome(t, got, err, data, nil)
		})
	}
}
