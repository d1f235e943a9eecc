// Package web is usbflash's page: a local HTTP server that shows the
// readers and the sessions the page started (writes of one card or many,
// a station, verify, check, bench) and relays each session's --json events
// to the browser as Server-Sent Events. It runs no session itself: the
// caller (usbflash serve) runs each request through the command line's own
// path and hands the server its events and its question before cards are
// overwritten. Every request that changes anything carries the token
// printed at start, the page's own Origin and a Host the server answers
// to, or is refused.
package web

import (
	"bytes"
	"context"
	"crypto/rand"
	"crypto/subtle"
	"embed"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"net"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/usbflash/usbflash/internal/image/catalog"
	"github.com/usbflash/usbflash/internal/ui/jsonevents"
)

//go:embed assets
var assets embed.FS

// TokenHeader carries the token on every request that changes anything.
const TokenHeader = "X-Usbflash-Token"

// NewToken is a fresh secret for a server: 128 random bits, hex.
func NewToken() string {
	b := make([]byte, 16)
	_, _ = rand.Read(b) // crypto/rand does not fail (Go 1.24)
	return hex.EncodeToString(b)
}

// Options are what a Server shows and whom it lets act.
type Options struct {
	// Token is the secret a request that changes anything carries in
	// TokenHeader; it must not be empty.
	Token string
	// Hosts are the names a request's Host may carry besides an IP
	// address and localhost: the name the server was told to listen on.
	// Any other name is a page on another site that a DNS server pointed
	// at this one (DNS rebinding), and is refused.
	Hosts []string
	// Slots lists the readers' slots as `list` finds them (with an error
	// saying what could not be listed, beside what was); it is called
	// while no session runs (a session holds its cards, and a listing
	// must not take one from it), and while a page is open.
	Slots func(ctx context.Context) ([]Slot, error)
	// Catalog is the OS list the page offers, nil for none.
	Catalog func(ctx context.Context) ([]catalog.Entry, error)
	// Run runs one request of the page as the command line runs it,
	// telling job its events (--json's lines) and asking job its
	// question before cards are overwritten.
	Run func(ctx context.Context, job *Job, req Request)
	// Version is the build, shown on the page.
	Version string
	// ListEvery is how often the slots are listed while a page is open
	// and no session runs; 0: every 2 s.
	ListEvery time.Duration
	// Kept is how many finished jobs the page keeps; 0: 20.
	Kept int
}

// Server is the page and its API.
type Server struct {
	opts Options
	mux  *http.ServeMux
	// ctx is what the jobs run under: cancelled by Close, not by a
	// request (closing the page never stops a write).
	ctx    context.Context
	cancel context.CancelFunc

	mu       sync.Mutex
	jobs     []*Job // oldest first
	nextID   int
	running  int // jobs not finished
	slots    []Slot
	slotsErr string
	viewers  int // pages connected to /api/events
	changed  chan struct{}
	seq      int64      // changes so far
	listing  sync.Mutex // held by a listing, and by a job while it starts
	wg       sync.WaitGroup
	entries  []catalog.Entry
	catErr   string
	catOnce  sync.Once
	catReady chan struct{}
}

// New is a server of the page; Close stops its jobs.
func New(opts Options) (*Server, error) {
	if opts.Token == "" || opts.Run == nil || opts.Slots == nil {
		return nil, errors.New("web: a server needs a token, Run and Slots")
	}
	if opts.ListEvery <= 0 {
		opts.ListEvery = 2 * time.Second
	}
	if opts.Kept <= 0 {
		opts.Kept = 20
	}
	ctx, cancel := context.WithCancel(context.Background())
	s := &Server{opts: opts, mux: http.NewServeMux(), ctx: ctx, cancel: cancel, changed: make(chan struct{}), catReady: make(chan struct{})}
	static, _ := fs.Sub(assets, "assets")
	files := http.FileServerFS(static)
	s.mux.Handle("GET /{$}", files)
	s.mux.Handle("GET /static/", http.StripPrefix("/static", files))
	s.mux.HandleFunc("GET /api/state", s.getState)
	s.mux.HandleFunc("GET /api/events", s.stateEvents)
	s.mux.HandleFunc("GET /api/catalog", s.getCatalog)
	s.mux.HandleFunc("GET /api/catalog/icon/{n}", s.getIcon)
	s.mux.HandleFunc("GET /api/jobs/{id}/events", s.jobEvents)
	s.mux.HandleFunc("GET /api/jobs/{id}/files/{name}", s.jobFile)
	s.mux.HandleFunc("POST /api/jobs", s.startJob)
	s.mux.HandleFunc("POST /api/jobs/{id}/answer", s.answer)
	s.mux.HandleFunc("POST /api/jobs/{id}/stop", s.stop)
	s.mux.HandleFunc("POST /api/jobs/{id}/image", s.streamImage)
	go s.listSlots()
	return s, nil
}

// Close stops every job (as a stop request stops a command: after the
// command in flight, synced) and waits for them to finish.
func (s *Server) Close() {
	s.cancel()
	s.wg.Wait()
}

// Wait waits for the jobs under way to finish.
func (s *Server) Wait() { s.wg.Wait() }

// ServeHTTP checks every request's Host, and a request that changes
// anything for its Origin and token, before it reaches the page or the
// API.
func (s *Server) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	h := w.Header()
	h.Set("Content-Security-Policy", "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self' data:; connect-src 'self'; base-uri 'none'; form-action 'none'; frame-ancestors 'none'")
	h.Set("X-Content-Type-Options", "nosniff")
	h.Set("Referrer-Policy", "no-referrer")
	h.Set("Cache-Control", "no-store")
	if err := s.check(r); err != nil {
		refuse(w, http.StatusForbidden, err.Error())
		return
	}
	s.mux.ServeHTTP(w, r)
}

// check refuses a request from elsewhere than this server's page: a Host
// that is not this server's (a DNS name an attacker's server pointed
// here), and for anything but reading, a foreign or missing Origin (a
// page on another site posting here) or a missing or wrong token.
func (s *Server) check(r *http.Request) error {
	if !s.hostAllowed(r.Host) {
		return fmt.Errorf("refused: this server does not answer to the host name %q (a page on another site may have pointed its name here: DNS rebinding); open the address usbflash serve printed", hostOnly(r.Host))
	}
	if r.Method == http.MethodGet || r.Method == http.MethodHead {
		return nil
	}
	origin := r.Header.Get("Origin")
	if origin != "http://"+r.Host {
		if origin == "" {
			origin = "none"
		}
		return fmt.Errorf("refused: the request comes from %s, not from this page (http://%s): usbflash serve acts only for its own page", origin, r.Host)
	}
	if subtle.ConstantTimeCompare([]byte(r.Header.Get(TokenHeader)), []byte(s.opts.Token)) != 1 {
		return errors.New("refused: the request does not carry this server's token; open the address usbflash serve printed (it holds the token)")
	}
	return nil
}

// hostAllowed says whether a request's Host is this server's: an IP
// address (no DNS name points a browser there by surprise), localhost,
// or a name it was told to listen on.
func (s *Server) hostAllowed(host string) bool {
	name := hostOnly(host)
	if name == "" {
		return false
	}
	if net.ParseIP(name) != nil || strings.EqualFold(name, "localhost") {
		return true
	}
	for _, h := range s.opts.Hosts {
		if strings.EqualFold(name, h) {
			return true
		}
	}
	return false
}

// hostOnly is a Host header's name or address, without its port or an
// IPv6 address's brackets.
func hostOnly(host string) string {
	if h, _, err := net.SplitHostPort(host); err == nil {
		return h
	}
	return strings.TrimSuffix(strings.TrimPrefix(host, "["), "]")
}

// refusal is the body of a refused request: the facts, one line.
type refusal struct {
	Error string `json:"error"`
}

func refuse(w http.ResponseWriter, status int, msg string) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	_ = json.NewEncoder(w).Encode(refusal{Error: msg})
}

func reply(w http.ResponseWriter, v any) {
	w.Header().Set("Content-Type", "application/json")
	_ = json.NewEncoder(w).Encode(v)
}

// job is the job a request's path names, or nil after refusing it.
func (s *Server) job(w http.ResponseWriter, r *http.Request) *Job {
	id, err := strconv.Atoi(r.PathValue("id"))
	if err == nil {
		s.mu.Lock()
		defer s.mu.Unlock()
		for _, j := range s.jobs {
			if j.ID == id {
				return j
			}
		}
	}
	refuse(w, http.StatusNotFound, fmt.Sprintf("no job %s (a finished job is kept only while it is among the last %d)", r.PathValue("id"), s.opts.Kept))
	return nil
}

// notify tells every open page that the state changed.
func (s *Server) notify() {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.notifyLocked()
}

func (s *Server) notifyLocked() {
	s.seq++
	close(s.changed)
	s.changed = make(chan struct{})
}

// State is what the page shows besides each job's events: the slots, the
// jobs, and the catalog's presence.
type State struct {
	Version string `json:"version"`
	Slots   []Slot `json:"slots"`
	// SlotsNote says why the slots could not be listed, or that they
	// are not listed while a session runs.
	SlotsNote string     `json:"slots_note,omitempty"`
	Jobs      []JobState `json:"jobs"`
	Catalog   bool       `json:"catalog"`
	Listing   bool       `json:"listing"` // slots are listed now (no session runs)
	Now       time.Time  `json:"now"`
	// Seq grows with every change: a page shows no state older than
	// the one it shows.
	Seq int64 `json:"seq"`
}

func (s *Server) state() State {
	s.mu.Lock()
	defer s.mu.Unlock()
	st := State{Version: s.opts.Version, Slots: s.slots, SlotsNote: s.slotsErr, Catalog: s.opts.Catalog != nil,
		Listing: s.running == 0, Now: time.Now().UTC(), Seq: s.seq}
	if st.Slots == nil {
		st.Slots = []Slot{}
	}
	if s.running > 0 {
		st.SlotsNote = "The slots are not listed while a session runs: it holds its cards"
	}
	for i := len(s.jobs) - 1; i >= 0; i-- {
		st.Jobs = append(st.Jobs, s.jobs[i].state())
	}
	if st.Jobs == nil {
		st.Jobs = []JobState{}
	}
	return st
}

func (s *Server) getState(w http.ResponseWriter, _ *http.Request) { reply(w, s.state()) }

// stateEvents streams the state to a page: now, and again whenever it
// changes.
func (s *Server) stateEvents(w http.ResponseWriter, r *http.Request) {
	flusher, ok := w.(http.Flusher)
	if !ok {
		refuse(w, http.StatusInternalServerError, "streaming is not supported here")
		return
	}
	s.mu.Lock()
	s.viewers++
	first := s.slots == nil && s.running == 0
	s.mu.Unlock()
	if first {
		go s.listOnce() // not a tick later: the page shows the cards at once
	}
	defer func() {
		s.mu.Lock()
		s.viewers--
		s.mu.Unlock()
	}()
	sseHeaders(w)
	keepAlive := time.NewTicker(15 * time.Second)
	defer keepAlive.Stop()
	var last []byte
	for {
		s.mu.Lock()
		changed := s.changed
		s.mu.Unlock()
		st := s.state()
		b, _ := json.Marshal(st)
		st.Now, st.Seq = time.Time{}, 0
		if key, _ := json.Marshal(st); !bytes.Equal(key, last) {
			fmt.Fprintf(w, "event: state\ndata: %s\n\n", b)
			flusher.Flush()
			last = key
		}
		if !await(r.Context(), w, flusher, changed, keepAlive) {
			return
		}
	}
}

// await waits for changed to close, keeping the stream alive meanwhile
// (a comment every tick); false when the page went away.
func await(ctx context.Context, w io.Writer, f http.Flusher, changed <-chan struct{}, keepAlive *time.Ticker) bool {
	for {
		select {
		case <-ctx.Done():
			return false
		case <-changed:
			return true
		case <-keepAlive.C:
			fmt.Fprint(w, ": keep-alive\n\n")
			f.Flush()
		}
	}
}

func sseHeaders(w http.ResponseWriter) {
	h := w.Header()
	h.Set("Content-Type", "text/event-stream")
	h.Set("X-Accel-Buffering", "no")
	w.WriteHeader(http.StatusOK)
}

// listSlots lists the slots while a page is open and no job runs.
func (s *Server) listSlots() {
	tick := time.NewTicker(s.opts.ListEvery)
	defer tick.Stop()
	for {
		s.mu.Lock()
		idle, watched := s.running == 0, s.viewers > 0
		s.mu.Unlock()
		if idle && watched {
			s.listOnce()
		}
		select {
		case <-s.ctx.Done():
			return
		case <-tick.C:
		}
	}
}

// listOnce lists the slots, unless a job started meanwhile.
func (s *Server) listOnce() {
	s.listing.Lock()
	defer s.listing.Unlock()
	s.mu.Lock()
	busy := s.running > 0
	s.mu.Unlock()
	if busy {
		return
	}
	ctx, cancel := context.WithTimeout(s.ctx, 30*time.Second)
	defer cancel()
	// Slots and an error together: what was listed, and why the rest
	// was not.
	slots, err := s.opts.Slots(ctx)
	s.mu.Lock()
	defer s.mu.Unlock()
	s.slots, s.slotsErr = slots, ""
	if err != nil {
		s.slotsErr = err.Error()
	}
	s.notifyLocked()
}

// Refresh lists the slots now (when no job runs), as the page shows them
// next.
func (s *Server) Refresh() { s.listOnce() }

// getCatalog is the catalog's entries, with an icon path for those that
// have one.
func (s *Server) getCatalog(w http.ResponseWriter, r *http.Request) {
	entries, err := s.catalog(r.Context())
	if err != nil {
		refuse(w, http.StatusBadGateway, err.Error())
		return
	}
	type shown struct {
		jsonevents.CatalogEntry
		IconPath string `json:"icon_path,omitempty"`
	}
	out := make([]shown, len(entries))
	for i, e := range entries {
		out[i] = shown{CatalogEntry: jsonevents.NewCatalogEntry(e)}
		if e.Icon != "" {
			out[i].IconPath = fmt.Sprintf("/api/catalog/icon/%d", i)
		}
	}
	reply(w, map[string]any{"entries": out})
}

// catalog is the catalog's entries, read once.
func (s *Server) catalog(ctx context.Context) ([]catalog.Entry, error) {
	if s.opts.Catalog == nil {
		return nil, errors.New("no OS list: start usbflash serve with one to choose from it")
	}
	s.catOnce.Do(func() {
		defer close(s.catReady)
		ctx, cancel := context.WithTimeout(s.ctx, time.Minute)
		defer cancel()
		entries, err := s.opts.Catalog(ctx)
		s.mu.Lock()
		defer s.mu.Unlock()
		s.entries = entries
		if err != nil {
			s.catErr = err.Error()
		}
	})
	select {
	case <-s.catReady:
	case <-ctx.Done():
		return nil, ctx.Err()
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.catErr != "" {
		return nil, errors.New(s.catErr)
	}
	return s.entries, nil
}

// getIcon serves a catalog entry's icon from where the catalog says it
// is: the page loads nothing from elsewhere, and the server fetches only
// what the catalog names.
func (s *Server) getIcon(w http.ResponseWriter, r *http.Request) {
	entries, err := s.catalog(r.Context())
	n, nerr := strconv.Atoi(r.PathValue("n"))
	if err != nil || nerr != nil || n < 0 || n >= len(entries) || entries[n].Icon == "" {
		refuse(w, http.StatusNotFound, "no such icon")
		return
	}
	data, err := readIcon(r.Context(), entries[n].Icon)
	if err != nil {
		refuse(w, http.StatusBadGateway, err.Error())
		return
	}
	kind := http.DetectContentType(data)
	if strings.HasPrefix(strings.TrimSpace(string(data[:min(len(data), 512)])), "<svg") || strings.Contains(string(data[:min(len(data), 512)]), "<svg") {
		kind = "image/svg+xml"
	}
	if !strings.HasPrefix(kind, "image/") {
		refuse(w, http.StatusBadGateway, "the icon is not an image")
		return
	}
	w.Header().Set("Content-Type", kind)
	w.Header().Set("Content-Security-Policy", "default-src 'none'; style-src 'unsafe-inline'; sandbox")
	w.Header().Set("Cache-Control", "max-age=3600")
	_, _ = w.Write(data)
}

// maxIcon bounds an icon's size.
const maxIcon = 1 << 20

// readIcon reads an icon at an http(s) URL or in a file.
func readIcon(ctx context.Context, ref string) ([]byte, error) {
	if !strings.HasPrefix(ref, "http://") && !strings.HasPrefix(ref, "https://") {
		return readFileLimited(ref, maxIcon)
	}
	ctx, cancel := context.WithTimeout(ctx, 20*time.Second)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, ref, nil)
	if err != nil {
		return nil, err
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return nil, fmt.Errorf("icon %s: %s", ref, resp.Status)
	}
	data, err := io.ReadAll(io.LimitReader(resp.Body, maxIcon+1))
	if err == nil && len(data) > maxIcon {
		err = fmt.Errorf("icon %s is larger than %d bytes", ref, maxIcon)
	}
	return data, err
}
