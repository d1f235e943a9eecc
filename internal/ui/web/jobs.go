package web

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/usbflash/usbflash/internal/customize"
	"github.com/usbflash/usbflash/internal/drive"
	"github.com/usbflash/usbflash/internal/ui/termui"
)

// Kinds of request.
const (
	KindWrite   = "write"   // the image to the cards named
	KindStation = "station" // the image to every card inserted (write --watch)
	KindVerify  = "verify"  // compare a card with the image
	KindCheck   = "check"   // is the card fake (nothing lost: every block put back)
	KindBench   = "bench"   // how fast are the reader and card (reads only)
)

// Request is what the page asks for: a session and its choices. The
// server checks only its shape; its values go through the command line's
// own checks.
type Request struct {
	Kind    string   `json:"kind"`
	Image   Image    `json:"image"`
	Targets []string `json:"targets,omitempty"`
	// Customize are first-boot settings for every card (values may
	// hold {n} and the serials' templates), nil for none.
	Customize *customize.Config `json:"customize,omitempty"`
	NoVerify  bool              `json:"no_verify,omitempty"`
	Eject     bool              `json:"eject,omitempty"`
	// Check probes each card for a fake capacity before writing it.
	Check bool `json:"check,omitempty"`
	// Confirm is a station's explicit choice: every card inserted into
	// any reader is overwritten without a question (the terminal's
	// --yes). A write's choice is its answer to the question.
	Confirm bool `json:"confirm,omitempty"`
}

// Image is the image a request writes or compares with: a path on this
// machine, a URL, a catalog entry, or a file dropped on the page and
// streamed to the server as it is written (Stream); SHA256 is its
// publisher's sum, when the page was given one.
type Image struct {
	Path   string  `json:"path,omitempty"`
	URL    string  `json:"url,omitempty"`
	OS     string  `json:"os,omitempty"`
	Stream *Stream `json:"stream,omitempty"`
	SHA256 string  `json:"sha256,omitempty"`
}

// Stream is a file dropped on the page: its name and size, as the browser
// says them. Its bytes follow in a request of their own.
type Stream struct {
	Name string `json:"name"`
	Size int64  `json:"size"`
}

// check refuses a request of the wrong shape, before any job starts.
func (r Request) check() error {
	sources := 0
	for _, set := range []bool{r.Image.Path != "", r.Image.URL != "", r.Image.OS != "", r.Image.Stream != nil} {
		if set {
			sources++
		}
	}
	needImage := r.Kind == KindWrite || r.Kind == KindStation || r.Kind == KindVerify
	switch {
	case !slices.Contains([]string{KindWrite, KindStation, KindVerify, KindCheck, KindBench}, r.Kind):
		return fmt.Errorf("unknown kind %q: want write, station, verify, check or bench", r.Kind)
	case needImage && sources != 1:
		return errors.New("choose one image: a path on this machine, a URL, an entry of the OS list, or a dropped file")
	case !needImage && sources != 0:
		return fmt.Errorf("%s takes no image", r.Kind)
	case r.Kind == KindStation && !r.Confirm:
		return errors.New("a station overwrites every card inserted without asking: confirm that first")
	case r.Kind == KindStation && len(r.Targets) > 0:
		return errors.New("a station takes every reader: name no card")
	case r.Kind == KindWrite && len(r.Targets) == 0:
		return errors.New("choose the cards to write")
	case (r.Kind == KindVerify || r.Kind == KindCheck || r.Kind == KindBench) && len(r.Targets) != 1:
		return fmt.Errorf("%s takes one card", r.Kind)
	case r.Image.Stream != nil && r.Kind == KindStation:
		return errors.New("a dropped file can be written once: a station reads its image again for every card (give its path)")
	case r.Image.Stream != nil && r.Image.Stream.Size <= 0:
		return errors.New("the dropped file is empty")
	}
	seen := map[string]bool{}
	for _, t := range r.Targets {
		if seen[t] {
			return fmt.Errorf("%s is chosen twice", t)
		}
		seen[t] = true
	}
	return nil
}

// title is how the page names a job.
func (r Request) title() string {
	img := r.Image.Path + r.Image.URL + r.Image.OS
	if r.Image.Stream != nil {
		img = r.Image.Stream.Name + " (dropped)"
	}
	switch r.Kind {
	case KindStation:
		return "Station: " + img + " to every card inserted"
	case KindWrite:
		return fmt.Sprintf("Write %s to %s", img, joinNames(r.Targets))
	case KindVerify:
		return fmt.Sprintf("Verify %s against %s", shortName(r.Targets[0]), img)
	}
	return fmt.Sprintf("%s %s", r.Kind, shortName(r.Targets[0]))
}

// shortName is a target as a title names it: a sim: card without the
// simulator's options.
func shortName(target string) string {
	if name, _, ok := strings.Cut(target, "?"); ok && strings.HasPrefix(target, "sim:") {
		return name
	}
	return target
}

func joinNames(targets []string) string {
	names := make([]string, len(targets))
	for i, t := range targets {
		names[i] = shortName(t)
	}
	switch len(names) {
	case 1:
		return names[0]
	case 2:
		return names[0] + " and " + names[1]
	}
	return fmt.Sprintf("%d cards", len(names))
}

// Job is one session the page started: its --json events (kept for the
// pages that join later), the question it asks before overwriting cards,
// and what became of its cards.
type Job struct {
	ID      int
	Kind    string
	Title   string
	Started time.Time
	srv     *Server
	ctx     context.Context
	cancel  context.CancelFunc

	mu       sync.Mutex
	lines    []line // kept events, oldest first
	seq      int
	partial  []byte
	changed  chan struct{} // closed when a line comes or the job ends
	done     bool
	finished time.Time
	code     int
	exitName string
	stopping bool
	question *termui.Overwrite
	answers  chan bool
	files    map[string]string
	// A dropped file's pipe: the session reads stdinR as its standard
	// input, the page's pieces are written to stdinW.
	stdinR, stdinW *os.File
	stream         struct {
		size, got  int64     // bytes of the file, and that came
		busy, done bool      // a piece is under way; the file came whole or failed
		last       time.Time // when the last piece came
	}
	// What the card events said: counts, the last ones, and each slot's
	// last.
	cards, succeeded, failed int
	recent                   []json.RawMessage
	slots                    map[string]json.RawMessage
	running                  map[string]bool // cards under way (their progress came, their card event did not)
}

// line is one event as --json prints it.
type line struct {
	seq      int
	data     []byte
	progress bool
}

// Limits of what a job keeps.
const (
	maxLines  = 4096 // events kept for a page that joins late
	keptCards = 20   // the last card events, and per slot its last
)

// Write takes the session's --json output: one event per line.
func (j *Job) Write(p []byte) (int, error) {
	j.mu.Lock()
	defer j.mu.Unlock()
	j.partial = append(j.partial, p...)
	for {
		i := bytes.IndexByte(j.partial, '\n')
		if i < 0 {
			break
		}
		j.addLocked(bytes.Clone(j.partial[:i]))
		j.partial = j.partial[i+1:]
	}
	return len(p), nil
}

// event is what the server reads of an event: enough to count the cards
// and to know how the job ended.
type event struct {
	Event    string `json:"event"`
	Target   string `json:"target"`
	Slot     string `json:"slot"`
	Error    string `json:"error"`
	Failed   bool   `json:"failed"`
	Code     *int   `json:"code"`
	ExitName string `json:"name"`
}

func (j *Job) addLocked(data []byte) {
	if len(bytes.TrimSpace(data)) == 0 {
		return
	}
	var e event
	_ = json.Unmarshal(data, &e)
	j.seq++
	progress := e.Event == "progress" || e.Event == "card_progress" || e.Event == "download" || e.Event == "point" || e.Event == "phase"
	j.lines = append(j.lines, line{seq: j.seq, data: data, progress: progress})
	if len(j.lines) > maxLines {
		j.lines = compact(j.lines)
	}
	notifyState := false
	switch e.Event {
	case "card_progress":
		if !e.Failed && !j.running[e.Target] {
			j.running[e.Target] = true
			notifyState = true
		}
	case "card":
		delete(j.running, e.Target)
		j.cards++
		if e.Error == "" {
			j.succeeded++
		} else {
			j.failed++
		}
		j.recent = append(j.recent, data)
		if len(j.recent) > keptCards {
			j.recent = j.recent[1:]
		}
		slot := e.Slot
		if slot == "" {
			slot = e.Target
		}
		j.slots[slot] = data
		notifyState = true
	case "error":
		if e.Code != nil {
			j.code, j.exitName = *e.Code, e.ExitName
		}
	}
	close(j.changed)
	j.changed = make(chan struct{})
	if notifyState {
		go j.srv.notify()
	}
}

// compact keeps the first event (the start), the milestones and the last
// quarter of the progress, then the newest events within the limit.
func compact(lines []line) []line {
	recent := len(lines) - maxLines/4
	out := []line{lines[0]}
	for i, l := range lines[1:] {
		if !l.progress || i+1 >= recent {
			out = append(out, l)
		}
	}
	if len(out) > maxLines*3/4 {
		out = append(out[:1], out[len(out)-maxLines*3/4+1:]...)
	}
	return out
}

// Confirm asks the page whether to write what (in words) over cards, as
// the terminal asks its question, and waits for the answer: only an
// answer that names every card agrees. A stop refuses.
func (j *Job) Confirm(cards []*drive.Device, what string) error {
	q := termui.Question(cards, what)
	answers := make(chan bool, 1)
	j.mu.Lock()
	j.question, j.answers = &q, answers
	j.mu.Unlock()
	j.srv.notify()
	defer func() {
		j.mu.Lock()
		j.question, j.answers = nil, nil
		j.mu.Unlock()
		j.srv.notify()
	}()
	select {
	case yes := <-answers:
		if yes {
			return nil
		}
	case <-j.ctx.Done():
	}
	return termui.NotConfirmed(cards)
}

// Stdin is what the session reads as its standard input: a dropped
// file's bytes as the page sends them; nil for a job without one.
func (j *Job) Stdin() *os.File { return j.stdinR }

// AddFile lets the page fetch a file the session made (bench's plot),
// under name.
func (j *Job) AddFile(name, path string) {
	j.mu.Lock()
	defer j.mu.Unlock()
	j.files[name] = path
}

// Context is the job's: it ends when the page's stop button is pressed or
// the server stops.
func (j *Job) Context() context.Context { return j.ctx }

// JobState is what the page shows of a job besides its events.
type JobState struct {
	ID       int               `json:"id"`
	Kind     string            `json:"kind"`
	Title    string            `json:"title"`
	Started  time.Time         `json:"started"`
	Finished *time.Time        `json:"finished,omitempty"`
	Running  bool              `json:"running"`
	Stopping bool              `json:"stopping,omitempty"`
	Question *termui.Overwrite `json:"question,omitempty"`
	// ExitCode and ExitName are the command's exit code and its name
	// in the exit-code table, once it finished.
	ExitCode *int   `json:"exit_code,omitempty"`
	ExitName string `json:"exit_name,omitempty"`
	// Cards counts the cards done, Succeeded and Failed by outcome;
	// Recent are the last card events, Slots each slot's last, Writing
	// the cards under way.
	Cards     int                        `json:"cards"`
	Succeeded int                        `json:"succeeded"`
	Failed    int                        `json:"failed"`
	Recent    []json.RawMessage          `json:"recent"`
	Slots     map[string]json.RawMessage `json:"slots"`
	Writing   []string                   `json:"writing"`
	Files     []string                   `json:"files,omitempty"`
	// AwaitsStream: the dropped file's bytes have not come yet.
	AwaitsStream bool `json:"awaits_stream,omitempty"`
}

func (j *Job) state() JobState {
	j.mu.Lock()
	defer j.mu.Unlock()
	st := JobState{ID: j.ID, Kind: j.Kind, Title: j.Title, Started: j.Started, Running: !j.done, Stopping: j.stopping && !j.done,
		Question: j.question, Cards: j.cards, Succeeded: j.succeeded, Failed: j.failed,
		Recent: slices.Clone(j.recent), Slots: map[string]json.RawMessage{}, Writing: []string{},
		AwaitsStream: j.stdinW != nil && j.stream.got == 0 && !j.done}
	if st.Recent == nil {
		st.Recent = []json.RawMessage{}
	}
	for k, v := range j.slots {
		st.Slots[k] = v
	}
	for k := range j.running {
		st.Writing = append(st.Writing, k)
	}
	slices.Sort(st.Writing)
	for k := range j.files {
		st.Files = append(st.Files, k)
	}
	slices.Sort(st.Files)
	if j.done {
		f, code := j.finished, j.code
		st.Finished, st.ExitCode, st.ExitName = &f, &code, j.exitName
	}
	return st
}

// startJob starts the session a page asks for.
func (s *Server) startJob(w http.ResponseWriter, r *http.Request) {
	var req Request
	dec := json.NewDecoder(io.LimitReader(r.Body, 1<<20))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&req); err != nil {
		refuse(w, http.StatusBadRequest, "the request is not one this page sends: "+err.Error())
		return
	}
	if err := req.check(); err != nil {
		refuse(w, http.StatusBadRequest, err.Error())
		return
	}
	j, err := s.newJob(req)
	if err != nil {
		refuse(w, http.StatusInternalServerError, err.Error())
		return
	}
	w.WriteHeader(http.StatusAccepted)
	reply(w, map[string]int{"id": j.ID})
}

// newJob starts a job. A listing under way ends first: it may hold a
// card the job opens.
func (s *Server) newJob(req Request) (*Job, error) {
	ctx, cancel := context.WithCancel(s.ctx)
	j := &Job{Kind: req.Kind, Title: req.title(), Started: time.Now().UTC(), srv: s, ctx: ctx, cancel: cancel,
		changed: make(chan struct{}), files: map[string]string{}, slots: map[string]json.RawMessage{}, running: map[string]bool{}}
	if req.Image.Stream != nil {
		r, w, err := os.Pipe()
		if err != nil {
			cancel()
			return nil, fmt.Errorf("a pipe for the dropped file: %w", err)
		}
		j.stdinR, j.stdinW = r, w
		j.stream.size, j.stream.last = req.Image.Stream.Size, time.Now()
		go j.watchStream()
	}
	s.listing.Lock()
	s.mu.Lock()
	s.nextID++
	j.ID = s.nextID
	s.jobs = append(s.jobs, j)
	s.running++
	s.forgetLocked()
	s.notifyLocked()
	s.mu.Unlock()
	s.listing.Unlock()
	s.wg.Add(1)
	go func() {
		defer s.wg.Done()
		s.opts.Run(ctx, j, req)
		j.finish()
		s.mu.Lock()
		s.running--
		idle := s.running == 0
		s.notifyLocked()
		s.mu.Unlock()
		if idle {
			go s.listOnce()
		}
	}()
	return j, nil
}

// forgetLocked drops the oldest finished jobs past the number kept.
func (s *Server) forgetLocked() {
	for len(s.jobs) > s.opts.Kept {
		i := slices.IndexFunc(s.jobs, func(j *Job) bool {
			j.mu.Lock()
			defer j.mu.Unlock()
			return j.done
		})
		if i < 0 {
			return
		}
		s.jobs = slices.Delete(s.jobs, i, i+1)
	}
}

// finish ends a job once its session returned.
func (j *Job) finish() {
	j.cancel()
	j.mu.Lock()
	defer j.mu.Unlock()
	if len(j.partial) > 0 {
		j.addLocked(j.partial)
		j.partial = nil
	}
	if j.stdinR != nil {
		j.stdinR.Close()
		j.stdinW.Close()
	}
	j.done, j.finished = true, time.Now().UTC()
	if j.exitName == "" {
		j.exitName = "ok"
	}
	close(j.changed)
	j.changed = make(chan struct{})
}

// answer takes the page's answer to a job's question: to write, it names
// the cards the question named, every one.
func (s *Server) answer(w http.ResponseWriter, r *http.Request) {
	j := s.job(w, r)
	if j == nil {
		return
	}
	var a struct {
		Write   bool     `json:"write"`
		Targets []string `json:"targets"`
	}
	if err := json.NewDecoder(io.LimitReader(r.Body, 1<<16)).Decode(&a); err != nil {
		refuse(w, http.StatusBadRequest, "the answer is not one this page sends: "+err.Error())
		return
	}
	j.mu.Lock()
	defer j.mu.Unlock()
	if j.question == nil {
		refuse(w, http.StatusConflict, fmt.Sprintf("job %d asks nothing now", j.ID))
		return
	}
	if a.Write {
		var want []string
		for _, c := range j.question.Cards {
			want = append(want, c.Target)
		}
		if !slices.Equal(want, a.Targets) {
			refuse(w, http.StatusConflict, fmt.Sprintf("the answer names %s; the question is about %s: nothing is written unless every card is named",
				orNone(a.Targets), orNone(want)))
			return
		}
	}
	select {
	case j.answers <- a.Write:
	default:
		refuse(w, http.StatusConflict, fmt.Sprintf("job %d was answered already", j.ID))
		return
	}
	reply(w, map[string]bool{"write": a.Write})
}

func orNone(names []string) string {
	if len(names) == 0 {
		return "no card"
	}
	return fmt.Sprint(names)
}

// stop asks a job to stop as one stop request (SIGTERM) stops a command:
// after the command in flight, synced, reported; a station finishes its
// cards for the stop timeout it was given.
func (s *Server) stop(w http.ResponseWriter, r *http.Request) {
	j := s.job(w, r)
	if j == nil {
		return
	}
	j.mu.Lock()
	j.stopping = true
	j.mu.Unlock()
	j.cancel()
	s.notify()
	reply(w, map[string]bool{"stopping": true})
}

// streamIdle is how long a dropped file's next piece may be awaited while
// no piece is under way: longer, and the page that sends it went away.
const streamIdle = time.Minute

// streamImage takes a piece of a dropped file (the bytes from offset on;
// end=1: the last) and hands it to the session as it reads it: nothing is
// stored, and the page sends the next piece once this one was taken. A
// piece out of order, a file cut short or a page gone fails the read
// (never an early end of the image) and stops the job.
func (s *Server) streamImage(w http.ResponseWriter, r *http.Request) {
	j := s.job(w, r)
	if j == nil {
		return
	}
	offset, err := strconv.ParseInt(r.URL.Query().Get("offset"), 10, 64)
	last := r.URL.Query().Get("end") == "1"
	j.mu.Lock()
	pw, ok := j.stdinW, j.stdinW != nil && !j.stream.done && !j.stream.busy && err == nil && offset == j.stream.got
	if ok {
		j.stream.busy = true
	}
	got := j.stream.got
	j.mu.Unlock()
	if !ok {
		refuse(w, http.StatusConflict, fmt.Sprintf("job %d takes no dropped file here: it has %d bytes of it and takes the next piece from there, one at a time", j.ID, got))
		return
	}
	s.notify()
	n, err := io.Copy(pw, r.Body)
	j.mu.Lock()
	j.stream.got += n
	j.stream.busy, j.stream.last = false, time.Now()
	got = j.stream.got
	j.mu.Unlock()
	switch {
	case err != nil:
		j.failStream(fmt.Sprintf("the dropped file stopped coming after %d of %d bytes: %v", got, j.stream.size, err))
	case last && got != j.stream.size:
		j.failStream(fmt.Sprintf("the dropped file ended after %d of its %d bytes", got, j.stream.size))
	case last:
		j.mu.Lock()
		j.stream.done = true
		j.mu.Unlock()
		pw.Close()
	}
	if err != nil || last && got != j.stream.size {
		refuse(w, http.StatusBadRequest, "the dropped file did not arrive whole")
		return
	}
	reply(w, map[string]int64{"bytes": got})
}

// failStream stops a job whose dropped file did not come whole: its read
// fails, so the bytes that came are not taken for the whole image.
func (j *Job) failStream(why string) {
	j.mu.Lock()
	if j.stream.done {
		j.mu.Unlock()
		return
	}
	j.stream.done = true
	j.mu.Unlock()
	fmt.Fprintf(j, "%s\n", mustJSON(map[string]string{"event": "note", "time": time.Now().UTC().Format(time.RFC3339Nano), "message": why}))
	j.cancel()
	// The read fails now; the pipe is not closed, which would end the
	// image where it was cut (finish closes it).
	_ = j.stdinR.SetReadDeadline(time.Now())
}

func mustJSON(v any) []byte {
	b, _ := json.Marshal(v)
	return b
}

// watchStream fails a dropped file whose page went away: no piece under
// way, none for streamIdle.
func (j *Job) watchStream() {
	tick := time.NewTicker(streamIdle / 10)
	defer tick.Stop()
	for {
		select {
		case <-j.ctx.Done():
			return
		case <-tick.C:
		}
		j.mu.Lock()
		idle := !j.stream.done && !j.stream.busy && time.Since(j.stream.last) > streamIdle
		got, size := j.stream.got, j.stream.size
		j.mu.Unlock()
		if idle {
			j.failStream(fmt.Sprintf("the page sending the dropped file went away: %d of its %d bytes came", got, size))
			return
		}
	}
}

// jobEvents streams a job's events as Server-Sent Events, each one the
// --json line, its id its number: a page that reconnects (Last-Event-ID)
// or joins late gets what it has not seen. An "end" event follows the
// last once the job is done.
func (s *Server) jobEvents(w http.ResponseWriter, r *http.Request) {
	j := s.job(w, r)
	if j == nil {
		return
	}
	flusher, ok := w.(http.Flusher)
	if !ok {
		refuse(w, http.StatusInternalServerError, "streaming is not supported here")
		return
	}
	after, _ := strconv.Atoi(r.Header.Get("Last-Event-ID"))
	sseHeaders(w)
	keepAlive := time.NewTicker(15 * time.Second)
	defer keepAlive.Stop()
	for {
		j.mu.Lock()
		var pending []line
		for _, l := range j.lines {
			if l.seq > after {
				pending = append(pending, l)
			}
		}
		done, changed := j.done, j.changed
		j.mu.Unlock()
		for _, l := range pending {
			fmt.Fprintf(w, "id: %d\ndata: %s\n\n", l.seq, l.data)
			after = l.seq
		}
		if done {
			fmt.Fprint(w, "event: end\ndata: {}\n\n")
			flusher.Flush()
			return
		}
		flusher.Flush()
		if !await(r.Context(), w, flusher, changed, keepAlive) {
			return
		}
	}
}

// jobFile serves a file a job made (bench's plot).
func (s *Server) jobFile(w http.ResponseWriter, r *http.Request) {
	j := s.job(w, r)
	if j == nil {
		return
	}
	j.mu.Lock()
	path, ok := j.files[r.PathValue("name")]
	j.mu.Unlock()
	if !ok {
		refuse(w, http.StatusNotFound, "no such file")
		return
	}
	if filepath.Ext(path) == ".svg" {
		w.Header().Set("Content-Type", "image/svg+xml")
		w.Header().Set("Content-Security-Policy", "default-src 'none'; style-src 'unsafe-inline'; sandbox")
	}
	http.ServeFile(w, r, path)
}

// readFileLimited reads a file of at most limit bytes.
func readFileLimited(path string, limit int64) ([]byte, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	data, err := io.ReadAll(io.LimitReader(f, limit+1))
	if err == nil && int64(len(data)) > limit {
		err = fmt.Errorf("%s is larger than %d bytes", path, limit)
	}
	return data, err
}
