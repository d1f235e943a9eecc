package web

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/usbflash/usbflash/internal/drive"
	"github.com/usbflash/usbflash/internal/ui/termui"
)

// testServer is a Server whose Run tells one event per second of its
// request's kind (or what run does), behind an httptest server.
type testServer struct {
	*Server
	http *httptest.Server
	runs atomic.Int32
}

func newTestServer(t *testing.T, run func(ctx context.Context, j *Job, req Request)) *testServer {
	t.Helper()
	ts := &testServer{}
	srv, err := New(Options{Token: "secret", Hosts: []string{"station.lan"}, ListEvery: time.Hour,
		Slots: func(context.Context) ([]Slot, error) {
			return []Slot{{Target: "sim:a.img", Medium: true, Bytes: 1 << 20}}, nil
		},
		Run: func(ctx context.Context, j *Job, req Request) {
			ts.runs.Add(1)
			run(ctx, j, req)
		}})
	if err != nil {
		t.Fatal(err)
	}
	ts.Server = srv
	ts.http = httptest.NewServer(srv)
	t.Cleanup(func() {
		ts.http.Close()
		srv.Close()
	})
	return ts
}

// post posts body to path as the page does, with headers changed by edit.
func (ts *testServer) post(t *testing.T, path, body string, edit func(r *http.Request)) (int, string) {
	t.Helper()
	r, err := http.NewRequest(http.MethodPost, ts.http.URL+path, strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	r.Header.Set("Origin", ts.http.URL)
	r.Header.Set(TokenHeader, "secret")
	if edit != nil {
		edit(r)
	}
	resp, err := http.DefaultClient.Do(r)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(b)
}

const writeReq = `{"kind":"write","image":{"path":"/img"},"targets":["sim:a.img"]}`

// TestRefusals: a request that changes anything without the token, with a
// wrong one, from another site's page (Origin) or under a name this
// server does not answer to (Host: DNS rebinding) is refused with a
// message saying why, and starts nothing; reading is refused only for a
// foreign Host.
func TestRefusals(t *testing.T) {
	ts := newTestServer(t, func(context.Context, *Job, Request) {})
	for _, tc := range []struct {
		name string
		edit func(r *http.Request)
		want string
	}{
		{"no token", func(r *http.Request) { r.Header.Del(TokenHeader) }, "does not carry this server's token"},
		{"wrong token", func(r *http.Request) { r.Header.Set(TokenHeader, "secreT") }, "does not carry this server's token"},
		{"foreign origin", func(r *http.Request) { r.Header.Set("Origin", "http://evil.example") }, "comes from http://evil.example, not from this page"},
		{"no origin", func(r *http.Request) { r.Header.Del("Origin") }, "comes from none"},
		{"origin of another port", func(r *http.Request) { r.Header.Set("Origin", "http://127.0.0.1:1") }, "not from this page"},
		{"foreign host", func(r *http.Request) {
			r.Host = "evil.example:80"
			r.Header.Set("Origin", "http://evil.example:80")
		}, `does not answer to the host name \"evil.example\" (a page on another site may have pointed its name here: DNS rebinding)`},
	} {
		code, body := ts.post(t, "/api/jobs", writeReq, tc.edit)
		if code != http.StatusForbidden || !strings.Contains(body, tc.want) || !strings.Contains(body, "refused") {
			t.Errorf("%s: %d %s", tc.name, code, body)
		}
	}
	for _, path := range []string{"/api/jobs/1/stop", "/api/jobs/1/answer", "/api/jobs/1/image"} {
		if code, body := ts.post(t, path, "{}", func(r *http.Request) { r.Header.Del(TokenHeader) }); code != http.StatusForbidden {
			t.Errorf("%s without the token: %d %s", path, code, body)
		}
	}
	if n := ts.runs.Load(); n != 0 {
		t.Fatalf("%d sessions ran", n)
	}
	// Reading: any IP address, localhost and the name listened on; a
	// foreign name is refused.
	for host, want := range map[string]int{"127.0.0.1:1": 200, "[::1]:1": 200, "localhost:1": 200, "station.lan:80": 200, "10.1.2.3": 200, "evil.example": 403, "127.0.0.1.evil.example": 403} {
		r, _ := http.NewRequest(http.MethodGet, ts.http.URL+"/api/state", nil)
		r.Host = host
		resp, err := http.DefaultClient.Do(r)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != want {
			t.Errorf("GET with Host %s: %d, want %d", host, resp.StatusCode, want)
		}
	}
	// The page is served with a policy that loads nothing from elsewhere.
	resp, err := http.Get(ts.http.URL + "/")
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if csp := resp.Header.Get("Content-Security-Policy"); resp.StatusCode != 200 || !strings.Contains(csp, "default-src 'none'") || !strings.Contains(csp, "script-src 'self'") {
		t.Errorf("GET /: %d, CSP %q", resp.StatusCode, csp)
	}
}

// TestRequestShape: a request the page would not send is refused before
// any session starts.
func TestRequestShape(t *testing.T) {
	ts := newTestServer(t, func(context.Context, *Job, Request) {})
	for body, want := range map[string]string{
		`{"kind":"erase","targets":["sim:a.img"]}`:                                    "unknown kind",
		`{"kind":"write","targets":["sim:a.img"]}`:                                    "choose one image",
		`{"kind":"write","image":{"path":"/i","url":"https://h/i"},"targets":["x"]}`:  "choose one image",
		`{"kind":"write","image":{"path":"/i"}}`:                                      "choose the cards",
		`{"kind":"write","image":{"path":"/i"},"targets":["x","x"]}`:                  "chosen twice",
		`{"kind":"station","image":{"path":"/i"}}`:                                    "confirm that first",
		`{"kind":"station","image":{"path":"/i"},"confirm":true,"targets":["x"]}`:     "name no card",
		`{"kind":"check","targets":["a","b"]}`:                                        "takes one card",
		`{"kind":"bench","image":{"path":"/i"},"targets":["a"]}`:                      "takes no image",
		`{"kind":"station","image":{"stream":{"name":"i","size":9}},"confirm":true}`:  "a station reads its image again",
		`{"kind":"write","image":{"path":"/i"},"targets":["a"],"yes":true}`:           "not one this page sends",
		`{"kind":"write","image":{"stream":{"name":"i","size":0}},"targets":["a"]}`:   "empty",
		`{"kind":"station","image":{"stream":{"name":"i","size":9}},"confirm":false}`: "confirm",
	} {
		code, got := ts.post(t, "/api/jobs", body, nil)
		if code != http.StatusBadRequest || !strings.Contains(got, want) {
			t.Errorf("%s: %d %s, want %q", body, code, got, want)
		}
	}
	if n := ts.runs.Load(); n != 0 {
		t.Fatalf("%d sessions ran", n)
	}
}

// TestQuestion: a session's question reaches the page as the terminal
// words it; an answer that does not name every card is refused and the
// question stays; one that does lets the session write; "no" refuses.
func TestQuestion(t *testing.T) {
	cards := []*drive.Device{{Name: "sim:a.img", Dev: memCard{}}, {Name: "sim:b.img", Dev: memCard{}}}
	answers := make(chan error, 2)
	ts := newTestServer(t, func(_ context.Context, j *Job, _ Request) { answers <- j.Confirm(cards, "os.img (raw, 1.05 MB)") })
	for _, yes := range []bool{true, false} {
		code, body := ts.post(t, "/api/jobs", writeReq, nil)
		if code != http.StatusAccepted {
			t.Fatalf("%d %s", code, body)
		}
		var started struct{ ID int }
		json.Unmarshal([]byte(body), &started)
		q := waitQuestion(t, ts, started.ID)
		if q.Text != "Write os.img (raw, 1.05 MB) to these 2 cards? ALL DATA ON THEM WILL BE LOST." || len(q.Cards) != 2 ||
			q.Cards[1].Target != "sim:b.img" || q.Cards[1].Identity != "  1.05 MB" {
			t.Fatalf("question %+v", q)
		}
		path := fmt.Sprintf("/api/jobs/%d/answer", started.ID)
		if code, body := ts.post(t, path, `{"write":true,"targets":["sim:a.img"]}`, nil); code != http.StatusConflict || !strings.Contains(body, "unless every card is named") {
			t.Errorf("an answer naming one card of two: %d %s", code, body)
		}
		answer := `{"write":false}`
		if yes {
			answer = `{"write":true,"targets":["sim:a.img","sim:b.img"]}`
		}
		if code, body := ts.post(t, path, answer, nil); code != http.StatusOK {
			t.Fatalf("answer: %d %s", code, body)
		}
		err := <-answers
		if (err == nil) != yes || !yes && !strings.Contains(err.Error(), "not confirmed: nothing was written to 2 cards") {
			t.Errorf("answer %v: %v", yes, err)
		}
		if code, _ := ts.post(t, path, answer, nil); code != http.StatusConflict {
			t.Errorf("a second answer: %d", code)
		}
	}
}

// memCard is a card of 1 MiB that holds nothing.
type memCard struct{}

func (memCard) BlockSize() int                                   { return 512 }
func (memCard) BlockCount() int64                                { return 2048 }
func (memCard) ReadBlocks(context.Context, int64, []byte) error  { return nil }
func (memCard) WriteBlocks(context.Context, int64, []byte) error { return nil }
func (memCard) Sync(context.Context) error                       { return nil }

func waitQuestion(t *testing.T, ts *testServer, id int) termui.Overwrite {
	t.Helper()
	for range 500 {
		for _, j := range ts.state().Jobs {
			if j.ID == id && j.Question != nil {
				return *j.Question
			}
		}
		time.Sleep(10 * time.Millisecond)
	}
	t.Fatalf("job %d asked nothing", id)
	return termui.Overwrite{}
}

// TestEventsRejoin: a page that reconnects with the last event it saw
// gets only what follows; one that joins late gets everything kept; the
// stream ends once the job has.
func TestEventsRejoin(t *testing.T) {
	release := make(chan struct{})
	ts := newTestServer(t, func(_ context.Context, j *Job, _ Request) {
		for i := range 3 {
			fmt.Fprintf(j, `{"event":"note","time":"2026-01-01T00:00:00Z","message":"n%d"}`+"\n", i)
		}
		<-release
		fmt.Fprint(j, `{"event":"note","time":"2026-01-01T00:00:00Z","message":"last"}`+"\n")
	})
	code, body := ts.post(t, "/api/jobs", writeReq, nil)
	if code != http.StatusAccepted {
		t.Fatal(body)
	}
	read := func(lastID string, n int) []string {
		r, _ := http.NewRequest(http.MethodGet, ts.http.URL+"/api/jobs/1/events", nil)
		if lastID != "" {
			r.Header.Set("Last-Event-ID", lastID)
		}
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		resp, err := http.DefaultClient.Do(r.WithContext(ctx))
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		var got []string
		sc := bufio.NewScanner(resp.Body)
		for sc.Scan() && len(got) < n {
			if l := sc.Text(); strings.HasPrefix(l, "id: ") || l == "event: end" {
				got = append(got, l)
			}
		}
		return got
	}
	if got := read("", 3); strings.Join(got, ",") != "id: 1,id: 2,id: 3" {
		t.Errorf("joining: %v", got)
	}
	if got := read("2", 1); strings.Join(got, ",") != "id: 3" {
		t.Errorf("rejoining after 2: %v", got)
	}
	close(release)
	if got := read("3", 2); strings.Join(got, ",") != "id: 4,event: end" {
		t.Errorf("after the end: %v", got)
	}
}

// TestStopCancels: the stop button ends the session's context, as one
// SIGTERM ends a command's.
func TestStopCancels(t *testing.T) {
	ended := make(chan error, 1)
	ts := newTestServer(t, func(ctx context.Context, _ *Job, _ Request) {
		<-ctx.Done()
		ended <- ctx.Err()
	})
	if code, body := ts.post(t, "/api/jobs", writeReq, nil); code != http.StatusAccepted {
		t.Fatal(body)
	}
	if code, body := ts.post(t, "/api/jobs/1/stop", "{}", nil); code != http.StatusOK {
		t.Fatal(code, body)
	}
	if err := <-ended; err != context.Canceled {
		t.Errorf("the session's context: %v", err)
	}
}

// TestCompact: a long job keeps its first event, every milestone of its
// older part and the newest events within the limit.
func TestCompact(t *testing.T) {
	j := &Job{changed: make(chan struct{}), slots: map[string]json.RawMessage{}, running: map[string]bool{}, srv: &Server{changed: make(chan struct{})}}
	fmt.Fprintln(j, `{"event":"start"}`)
	for i := range 3 * maxLines {
		if i%100 == 0 {
			fmt.Fprintf(j, `{"event":"card","target":"c%d","error":""}`+"\n", i)
			continue
		}
		fmt.Fprintf(j, `{"event":"card_progress","target":"c","done":%d}`+"\n", i)
	}
	if len(j.lines) > maxLines || string(j.lines[0].data) != `{"event":"start"}` {
		t.Fatalf("%d lines kept, the first %s", len(j.lines), j.lines[0].data)
	}
	cards := 0
	for _, l := range j.lines {
		if strings.Contains(string(l.data), `"card"`) {
			cards++
		}
	}
	if j.cards != 3*maxLines/100+1 || j.succeeded != j.cards || cards < 3*maxLines/100/2 {
		t.Errorf("cards counted %d (%d ok), %d card events kept", j.cards, j.succeeded, cards)
	}
	if last := j.lines[len(j.lines)-1]; last.seq != 3*maxLines+1 {
		t.Errorf("the last event kept is %d", last.seq)
	}
}

// TestStream: a dropped file's pieces reach the session's standard input
// in order; a piece out of order is refused; a file that ends short fails
// the session's read instead of ending the image early.
func TestStream(t *testing.T) {
	reads := make(chan string, 1)
	ts := newTestServer(t, func(_ context.Context, j *Job, _ Request) {
		b, err := io.ReadAll(j.Stdin())
		reads <- fmt.Sprintf("%q %v", b, err)
	})
	for _, tc := range []struct {
		name   string
		pieces []string // query, body
		want   string
	}{
		{"whole", []string{"offset=0&end=0", "abc", "offset=3&end=1", "defg"}, `"abcdefg" <nil>`},
		{"short", []string{"offset=0&end=0", "abc", "offset=3&end=1", "de"}, `read |0: i/o timeout`},
	} {
		code, body := ts.post(t, "/api/jobs", `{"kind":"write","image":{"stream":{"name":"os.img","size":7}},"targets":["sim:a.img"]}`, nil)
		if code != http.StatusAccepted {
			t.Fatal(body)
		}
		var started struct{ ID int }
		json.Unmarshal([]byte(body), &started)
		path := fmt.Sprintf("/api/jobs/%d/image?", started.ID)
		if code, body := ts.post(t, path+"offset=5&end=0", "x", nil); code != http.StatusConflict || !strings.Contains(body, "has 0 bytes of it") {
			t.Errorf("%s: a piece out of order: %d %s", tc.name, code, body)
		}
		for i := 0; i < len(tc.pieces); i += 2 {
			ts.post(t, path+tc.pieces[i], tc.pieces[i+1], nil)
		}
		if got := <-reads; !strings.HasSuffix(got, tc.want) {
			t.Errorf("%s: the session read %s, want %s", tc.name, got, tc.want)
		}
	}
}
