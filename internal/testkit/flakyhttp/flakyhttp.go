// Package flakyhttp is an HTTP file server that misbehaves on purpose, for
// testing clients that must resume: it serves one file with ranges and
// If-Range as a correct server does, and each request may be given a
// fault (a dropped connection at an offset, a stall, an error status, a
// 200 to a range, another version of the file, a wrong Content-Range, a
// lying Content-Length). Tests use it through httptest; the e2e guest runs
// it as a real server (cmd/flakyhttpd).
package flakyhttp

import (
	"context"
	"fmt"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"time"
)

// Fault is what one request gets instead of a correct answer.
type Fault struct {
	// Status answers with this status and no body (RetryAfter, when set,
	// as its Retry-After header).
	Status     int
	RetryAfter string
	// DropAt closes the connection once the body reached this offset of
	// the file (0: no drop; the byte at DropAt is not sent).
	DropAt int64
	// StallAt stops sending at this offset and holds the connection
	// until the client gives up on it.
	StallAt int64
	// Whole answers a range request with the whole file (200).
	Whole bool
	// Replace makes the file another version (its bytes and ETag) from
	// this request on; the request is answered as a correct server then
	// answers (If-Range no longer matches: a 200).
	Replace *Version
	// IgnoreIfRange answers a range with a 206 even when If-Range does
	// not match.
	IgnoreIfRange bool
	// Shift moves a 206's Content-Range (and its bytes) this many bytes
	// on from the offset asked.
	Shift int64
	// ExtraLength adds to the Content-Length said (the body is the file).
	ExtraLength int64
	// Chunk sends the body in pieces of this size, flushing each (a
	// trickle; 0: as one).
	Chunk int
	// PauseAt holds the body at this offset until Resume is closed (or
	// the client gives up), then sends the rest: a slow link's wait,
	// ended by the test.
	PauseAt int64
	Resume  <-chan struct{}
}

// Version is a file's content and validators.
type Version struct {
	Data         []byte
	ETag         string // "" sends none
	LastModified time.Time
	// NoRanges says Accept-Ranges: none and ignores Range.
	NoRanges bool
	// Name, when set, is sent as Content-Disposition's filename.
	Name string
}

// Server serves a Version at Path, the extra files in Files (a checksum
// list, a block map), at /loop a redirect to itself and at /hops/N/PATH
// a chain of N redirects ending at /PATH; other paths are 404s.
type Server struct {
	mu     sync.Mutex
	v      Version
	faults map[int]Fault
	n      int
	// Path is where the file is; "" serves it at every path.
	Path string
	// Files are served whole at their path (no faults).
	Files map[string][]byte
	// Ranges records each file request's Range header ("" for none).
	Ranges []string
	// Protos records each file request's protocol.
	Protos []string
	// Rate, when set, paces every file body at this many bytes per
	// second (a link of known speed, for measuring).
	Rate int64
	// OnStall, when set, is called as a stall begins, with the request's
	// context (done once the client gave up).
	OnStall func(ctx context.Context)
	// Query, when set, makes the server a pre-signed URL's: a request
	// whose raw query is not Query (a file beside the image asked
	// without it, a token of another path) is answered 403, as an object
	// store answers one whose signature does not cover it.
	Query string
}

// New serves v; faults[i] applies to the i-th request for the file
// (from 0).
func New(v Version, faults map[int]Fault) *Server {
	return &Server{v: v, faults: faults, Files: map[string][]byte{}}
}

// Requests is how many requests for the file came.
func (s *Server) Requests() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.n
}

func (s *Server) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if r.URL.Path == "/loop" {
		http.Redirect(w, r, "/loop", http.StatusFound)
		return
	}
	if rest, ok := strings.CutPrefix(r.URL.Path, "/hops/"); ok {
		n, path, _ := strings.Cut(rest, "/")
		hops, err := strconv.Atoi(n)
		switch {
		case err != nil || hops < 1:
			http.NotFound(w, r)
		case hops == 1:
			http.Redirect(w, r, "/"+path, http.StatusFound)
		default:
			http.Redirect(w, r, fmt.Sprintf("/hops/%d/%s", hops-1, path), http.StatusFound)
		}
		return
	}
	if s.Query != "" && r.URL.RawQuery != s.Query {
		http.Error(w, "the signature does not match", http.StatusForbidden)
		return
	}
	s.mu.Lock()
	if data, ok := s.Files[r.URL.Path]; ok {
		s.mu.Unlock()
		w.Header().Set("Content-Length", strconv.Itoa(len(data)))
		w.Write(data)
		return
	}
	if s.Path != "" && r.URL.Path != s.Path {
		s.mu.Unlock()
		http.NotFound(w, r)
		return
	}
	f := s.faults[s.n]
	s.n++
	s.Ranges = append(s.Ranges, r.Header.Get("Range"))
	s.Protos = append(s.Protos, r.Proto)
	if f.Replace != nil {
		s.v = *f.Replace
	}
	v := s.v
	s.mu.Unlock()

	if f.Status != 0 {
		if f.RetryAfter != "" {
			w.Header().Set("Retry-After", f.RetryAfter)
		}
		http.Error(w, http.StatusText(f.Status), f.Status)
		return
	}
	h := w.Header()
	if v.ETag != "" {
		h.Set("ETag", v.ETag)
	}
	if !v.LastModified.IsZero() {
		h.Set("Last-Modified", v.LastModified.UTC().Format(http.TimeFormat))
	}
	if v.Name != "" {
		h.Set("Content-Disposition", fmt.Sprintf("attachment; filename=%q", v.Name))
	}
	if v.NoRanges {
		h.Set("Accept-Ranges", "none")
	} else {
		h.Set("Accept-Ranges", "bytes")
	}
	start, ranged := s.rangeStart(r, v, f)
	size := int64(len(v.Data))
	if ranged && start >= size {
		h.Set("Content-Range", fmt.Sprintf("bytes */%d", size))
		w.WriteHeader(http.StatusRequestedRangeNotSatisfiable)
		return
	}
	status := http.StatusOK
	if ranged {
		start += f.Shift
		status = http.StatusPartialContent
		h.Set("Content-Range", fmt.Sprintf("bytes %d-%d/%d", start, size-1, size))
	} else {
		start = 0
	}
	h.Set("Content-Length", strconv.FormatInt(size-start+f.ExtraLength, 10))
	w.WriteHeader(status)
	s.body(w, r, v.Data, start, f)
}

// rangeStart is where a correct server (or the fault) starts the body.
func (s *Server) rangeStart(r *http.Request, v Version, f Fault) (int64, bool) {
	rng := r.Header.Get("Range")
	if rng == "" || v.NoRanges || f.Whole {
		return 0, false
	}
	spec, ok := strings.CutPrefix(rng, "bytes=")
	first, last, ok2 := strings.Cut(spec, "-")
	start, err := strconv.ParseInt(first, 10, 64)
	if !ok || !ok2 || last != "" || err != nil || start < 0 {
		return 0, false
	}
	if ir := r.Header.Get("If-Range"); ir != "" && !f.IgnoreIfRange {
		lm := ""
		if !v.LastModified.IsZero() {
			lm = v.LastModified.UTC().Format(http.TimeFormat)
		}
		if ir != v.ETag && ir != lm {
			return 0, false
		}
	}
	return start, true
}

// body sends data from start, with the fault's drop, stall or trickle.
func (s *Server) body(w http.ResponseWriter, r *http.Request, data []byte, start int64, f Fault) {
	end := int64(len(data))
	cut := end
	if f.DropAt > start && f.DropAt < cut {
		cut = f.DropAt
	}
	if f.StallAt > start && f.StallAt < cut {
		cut = f.StallAt
	}
	if f.PauseAt > start && f.PauseAt < cut {
		if _, err := w.Write(data[start:f.PauseAt]); err != nil {
			return
		}
		if fl, ok := w.(http.Flusher); ok {
			fl.Flush()
		}
		select {
		case <-f.Resume:
		case <-r.Context().Done():
			return
		}
		start = f.PauseAt
	}
	chunk := int64(f.Chunk)
	if chunk <= 0 {
		chunk = max(cut-start, 1)
	}
	if s.Rate > 0 {
		chunk = min(chunk, 64<<10)
	}
	fl, _ := w.(http.Flusher)
	t0 := time.Now()
	for p := start; p < cut; p += chunk {
		if _, err := w.Write(data[p:min(p+chunk, cut)]); err != nil {
			return
		}
		if fl != nil {
			fl.Flush()
		}
		if s.Rate > 0 {
			due := time.Duration(float64(p+chunk-start) / float64(s.Rate) * float64(time.Second))
			time.Sleep(due - time.Since(t0))
		}
	}
	switch {
	case cut == f.StallAt && cut < end:
		if s.OnStall != nil {
			s.OnStall(r.Context())
		}
		<-r.Context().Done()
		panic(http.ErrAbortHandler)
	case cut < end || f.ExtraLength > 0:
		// The connection closes before the length said was sent.
		panic(http.ErrAbortHandler)
	}
}
