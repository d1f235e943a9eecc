package browsertest

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/chromedp/cdproto/cdp"
	"github.com/chromedp/cdproto/input"
	"github.com/chromedp/chromedp"
	"github.com/santhosh-tekuri/jsonschema/v6"

	"github.com/usbflash/usbflash/internal/testkit/osimage"
)

// required says a browser test must run: in CI, or when asked.
func required() bool {
	return os.Getenv("CI") != "" || os.Getenv("USBFLASH_BROWSER_REQUIRE") == "1"
}

// skipOrFail skips, or fails where the tests must run.
func skipOrFail(t *testing.T, format string, args ...any) {
	t.Helper()
	if required() {
		t.Fatalf("a browser test must run here (CI or USBFLASH_BROWSER_REQUIRE=1): "+format, args...)
	}
	t.Skipf(format, args...)
}

// chromium is the browser's path: $USBFLASH_CHROMIUM, or Debian's
// chromium (or another Chromium on PATH).
func chromium(t *testing.T) string {
	t.Helper()
	if p := os.Getenv("USBFLASH_CHROMIUM"); p != "" {
		return p
	}
	for _, name := range []string{"chromium", "chromium-browser", "google-chrome", "google-chrome-stable"} {
		if p, err := exec.LookPath(name); err == nil {
			return p
		}
	}
	skipOrFail(t, "no Chromium (apt-get install chromium, or set USBFLASH_CHROMIUM)")
	return ""
}

var build struct {
	once sync.Once
	bin  string
	err  error
}

// binary is the usbflash under test: $USBFLASH_BIN, or one built once
// from this module (as make build builds it).
func binary(t *testing.T) string {
	t.Helper()
	if p := os.Getenv("USBFLASH_BIN"); p != "" {
		return p
	}
	build.once.Do(func() {
		dir, err := os.MkdirTemp("", "usbflash-browsertest-")
		if err != nil {
			build.err = err
			return
		}
		build.bin = filepath.Join(dir, "usbflash")
		cmd := exec.Command("go", "build", "-o", build.bin, "github.com/usbflash/usbflash/cmd/usbflash")
		cmd.Env = append(os.Environ(), "CGO_ENABLED=0")
		if out, err := cmd.CombinedOutput(); err != nil {
			build.err = fmt.Errorf("go build: %v\n%s", err, out)
		}
	})
	if build.err != nil {
		t.Fatal(build.err)
	}
	return build.bin
}

func TestMain(m *testing.M) {
	code := m.Run()
	if build.bin != "" {
		os.RemoveAll(filepath.Dir(build.bin))
	}
	os.Exit(code)
}

// server is a running `usbflash serve`.
type server struct {
	t      *testing.T
	cmd    *exec.Cmd
	url    string // the address it printed, with the token
	base   string // http://host:port
	token  string
	out    *syncBuffer // its standard output, line by line
	stderr *syncBuffer
	done   chan struct{}
	exit   error
}

type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

var openLine = regexp.MustCompile(`^usbflash serve: open (http://(\S+?)/#token=([0-9a-f]+))$`)

// serve starts `usbflash serve args...` and waits for the address it
// prints; the test's end stops it as a service manager would (SIGTERM)
// and checks it exits 0.
func serve(t *testing.T, args ...string) *server {
	t.Helper()
	s := &server{t: t, out: &syncBuffer{}, stderr: &syncBuffer{}, done: make(chan struct{})}
	s.cmd = exec.Command(binary(t), append([]string{"serve"}, args...)...)
	s.cmd.Stderr = s.stderr
	out, err := s.cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := s.cmd.Start(); err != nil {
		t.Fatal(err)
	}
	lines := bufio.NewScanner(out)
	found := make(chan []string, 1)
	go func() {
		for lines.Scan() {
			if m := openLine.FindStringSubmatch(lines.Text()); m != nil {
				found <- m
			}
			fmt.Fprintln(s.out, lines.Text())
		}
		close(found)
	}()
	go func() {
		s.exit = s.cmd.Wait()
		close(s.done)
	}()
	select {
	case m, ok := <-found:
		if !ok {
			<-s.done
			t.Fatalf("usbflash serve printed no address (%v):\n%s", s.exit, s.stderr)
		}
		s.url, s.base, s.token = m[1], "http://"+m[2], m[3]
	case <-time.After(30 * time.Second):
		s.cmd.Process.Kill()
		t.Fatalf("usbflash serve printed no address in 30 s:\n%s", s.stderr)
	}
	t.Cleanup(s.stop)
	return s
}

// stdout is what the server printed on its standard output, once it
// printed more than its address (or after 5 s).
func (s *server) stdout() string {
	for range 50 {
		if strings.Count(s.out.String(), "\n") > 1 {
			break
		}
		time.Sleep(100 * time.Millisecond)
	}
	return s.out.String()
}

// stop ends the server with one SIGTERM, as a service manager stops it.
func (s *server) stop() {
	select {
	case <-s.done:
	default:
		s.cmd.Process.Signal(syscall.SIGTERM)
		select {
		case <-s.done:
		case <-time.After(60 * time.Second):
			s.cmd.Process.Kill()
			<-s.done
			s.t.Errorf("usbflash serve did not stop within 60 s of SIGTERM:\n%s", s.stderr)
			return
		}
	}
	if s.exit != nil {
		s.t.Errorf("usbflash serve: %v\n%s", s.exit, s.stderr)
	}
}

// jobState is what the tests read of /api/state's jobs.
type jobState struct {
	ID        int               `json:"id"`
	Kind      string            `json:"kind"`
	Running   bool              `json:"running"`
	ExitCode  *int              `json:"exit_code"`
	ExitName  string            `json:"exit_name"`
	Cards     int               `json:"cards"`
	Succeeded int               `json:"succeeded"`
	Failed    int               `json:"failed"`
	Question  *json.RawMessage  `json:"question"`
	Files     []string          `json:"files"`
	Recent    []json.RawMessage `json:"recent"`
}

// jobs is the server's jobs, newest first.
func (s *server) jobs() []jobState {
	s.t.Helper()
	resp, err := http.Get(s.base + "/api/state")
	if err != nil {
		s.t.Fatal(err)
	}
	defer resp.Body.Close()
	var st struct{ Jobs []jobState }
	if err := json.NewDecoder(resp.Body).Decode(&st); err != nil {
		s.t.Fatal(err)
	}
	return st.Jobs
}

// waitJob waits for job id to end and returns its state.
func (s *server) waitJob(id int, within time.Duration) jobState {
	s.t.Helper()
	deadline := time.Now().Add(within)
	for time.Now().Before(deadline) {
		for _, j := range s.jobs() {
			if j.ID == id && !j.Running {
				return j
			}
		}
		time.Sleep(100 * time.Millisecond)
	}
	s.t.Fatalf("job %d still running after %v:\n%s", id, within, s.stderr)
	return jobState{}
}

// events is every --json event job id sent the page, each checked
// against the events' schema, as the command line's contract tests check
// them.
func (s *server) events(id int) []map[string]any {
	s.t.Helper()
	resp, err := http.Get(fmt.Sprintf("%s/api/jobs/%d/events", s.base, id))
	if err != nil {
		s.t.Fatal(err)
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body) // the stream ends with the job's "end"
	if err != nil {
		s.t.Fatal(err)
	}
	sch := eventSchema(s.t)
	var out []map[string]any
	for _, block := range strings.Split(string(body), "\n\n") {
		var data string
		for _, l := range strings.Split(block, "\n") {
			if d, ok := strings.CutPrefix(l, "data: "); ok {
				data = d
			}
			if l == "event: end" {
				data = ""
				break
			}
		}
		if data == "" {
			continue
		}
		inst, err := jsonschema.UnmarshalJSON(strings.NewReader(data))
		if err != nil {
			s.t.Fatalf("job %d: %q: %v", id, data, err)
		}
		if err := sch.Validate(inst); err != nil {
			s.t.Errorf("job %d: %s\ndoes not match the schema: %v", id, data, err)
		}
		out = append(out, inst.(map[string]any))
	}
	return out
}

var schema struct {
	once sync.Once
	sch  *jsonschema.Schema
	err  error
}

// eventSchema is the --json events' contract.
func eventSchema(t *testing.T) *jsonschema.Schema {
	schema.once.Do(func() {
		c := jsonschema.NewCompiler()
		c.AssertFormat()
		schema.sch, schema.err = c.Compile("../../jsonevents/events.schema.json")
	})
	if schema.err != nil {
		t.Fatal(schema.err)
	}
	return schema.sch
}

// browser is one Chromium of a test: headless, with a user data
// directory of its own and nothing that calls the network.
type browser struct {
	t   *testing.T
	ctx context.Context
}

func newBrowser(t *testing.T) *browser {
	t.Helper()
	exe := chromium(t)
	opts := []chromedp.ExecAllocatorOption{
		chromedp.ExecPath(exe),
		chromedp.UserDataDir(t.TempDir()),
		chromedp.Headless,
		chromedp.NoSandbox,
		chromedp.DisableGPU,
		chromedp.Flag("disable-background-networking", true),
		chromedp.Flag("disable-component-update", true),
		chromedp.Flag("disable-sync", true),
		chromedp.Flag("no-first-run", true),
		chromedp.Flag("no-default-browser-check", true),
		chromedp.Flag("disable-default-apps", true),
		chromedp.Flag("disable-extensions", true),
		chromedp.Flag("disable-dev-shm-usage", true),
		chromedp.Flag("metrics-recording-only", true),
		chromedp.Flag("password-store", "basic"),
		chromedp.WindowSize(1280, 1000),
	}
	alloc, cancelAlloc := chromedp.NewExecAllocator(context.Background(), opts...)
	ctx, cancel := chromedp.NewContext(alloc)
	t.Cleanup(func() {
		cancel()
		cancelAlloc()
	})
	if err := chromedp.Do(ctx); err != nil {
		skipOrFail(t, "Chromium %s does not start: %v", exe, err)
	}
	return &browser{t: t, ctx: ctx}
}

// page is one tab.
type page struct {
	t      *testing.T
	ctx    context.Context
	cancel context.CancelFunc
	mu     sync.Mutex
	errors []string
	seen   int // the newest job newestJob returned
}

// open opens url in a new tab of b, and records the page's exceptions:
// the test fails on any.
func (b *browser) open(url string) *page {
	b.t.Helper()
	ctx, cancel := chromedp.NewContext(b.ctx)
	// The tab lives as long as the context of its first action: not a
	// timeout's.
	if err := chromedp.Do(ctx); err != nil {
		b.t.Fatalf("a new tab: %v", err)
	}
	p := &page{t: b.t, ctx: ctx, cancel: cancel}
	p.do(chromedp.EmulateViewport(1280, 1000), chromedp.Navigate(url))
	go func() {
		for m, err := range chromedp.Console(ctx) {
			if err != nil {
				return
			}
			if m.IsException() || m.Type == "error" {
				p.mu.Lock()
				p.errors = append(p.errors, m.String())
				p.mu.Unlock()
			}
		}
	}()
	b.t.Cleanup(func() {
		p.mu.Lock()
		defer p.mu.Unlock()
		for _, e := range p.errors {
			b.t.Errorf("the page said: %s", e)
		}
	})
	p.waitFor(`document.querySelector('#connection').textContent === 'Connected'`, 20*time.Second)
	return p
}

// close closes the tab, as a person closes the page.
func (p *page) close() { p.cancel() }

func (p *page) do(steps ...chromedp.Action[chromedp.Void]) {
	p.t.Helper()
	ctx, cancel := context.WithTimeout(p.ctx, 60*time.Second)
	defer cancel()
	if err := chromedp.Do(ctx, steps...); err != nil {
		p.t.Fatalf("page: %v", err)
	}
}

// eval is a JavaScript expression's value.
func eval[T any](p *page, js string) T {
	p.t.Helper()
	ctx, cancel := context.WithTimeout(p.ctx, 30*time.Second)
	defer cancel()
	v, err := chromedp.Run(ctx, chromedp.Evaluate[T](js))
	if err != nil {
		p.t.Fatalf("page: %s: %v", js, err)
	}
	return v
}

// waitFor waits until the JavaScript expression js is true.
func (p *page) waitFor(js string, within time.Duration) {
	p.t.Helper()
	ctx, cancel := context.WithTimeout(p.ctx, within+5*time.Second)
	defer cancel()
	if _, err := chromedp.Run(ctx, chromedp.Poll[bool](js, chromedp.WithPollingTimeout(within), chromedp.WithPollingInterval(50*time.Millisecond))); err != nil {
		body, _ := chromedp.Run(p.ctx, chromedp.Evaluate[string](`document.querySelector('main').innerText`))
		p.t.Fatalf("page: waiting for %s: %v\nthe page reads:\n%s", js, err, body)
	}
}

// click clicks the element sel (CSS) as a person does; an element drawn
// again between finding and clicking it is found again.
func (p *page) click(sel string) {
	p.t.Helper()
	var err error
	for range 3 {
		ctx, cancel := context.WithTimeout(p.ctx, 30*time.Second)
		err = chromedp.Do(ctx, chromedp.Click(chromedp.CSS(sel)))
		cancel()
		if err == nil || !strings.Contains(err.Error(), "Could not find node") {
			break
		}
	}
	if err != nil {
		p.t.Fatalf("page: clicking %s: %v", sel, err)
	}
}

// dropFile drags the file at path from the desktop and drops it on the
// element sel, as a person does.
func (p *page) dropFile(sel, path string) {
	p.t.Helper()
	box := eval[[]float64](p, fmt.Sprintf(`(() => { const e = document.querySelector(%s); e.scrollIntoView(); const r = e.getBoundingClientRect(); return [r.x + r.width/2, r.y + r.height/2] })()`, jsString(sel)))
	data := &input.DragData{Items: []*input.DragDataItem{}, Files: []string{path}, DragOperationsMask: 1}
	for _, typ := range []input.DispatchDragEventType{input.DispatchDragEventTypeDragEnter, input.DispatchDragEventTypeDragOver, input.DispatchDragEventTypeDrop} {
		p.do(chromedp.Func(func(ctx context.Context, t *chromedp.Target) error {
			_, err := cdp.Call(ctx, t, input.DispatchDragEvent, input.DispatchDragEventParams{Type: typ, X: box[0], Y: box[1], Data: data})
			return err
		}))
	}
}

// typeIn types text into the field sel.
func (p *page) typeIn(sel, text string) {
	p.t.Helper()
	p.do(chromedp.Click(chromedp.CSS(sel)), chromedp.SendKeys(chromedp.CSS(sel), text))
}

// chooseCards ticks the Use box of each target, waiting for it to be
// listed.
func (p *page) chooseCards(targets ...string) {
	p.t.Helper()
	for _, target := range targets {
		sel := fmt.Sprintf(`#slots input[data-target=%s]`, jsString(target))
		p.waitFor(fmt.Sprintf(`!!document.querySelector(%s)`, jsString(sel)), 20*time.Second)
		p.click(sel)
	}
}

// jsString is s as a JavaScript (and CSS) string literal.
func jsString(s string) string {
	var b strings.Builder
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	_ = enc.Encode(s)
	return strings.TrimSpace(b.String())
}

// answerYes waits for the question before cards are overwritten, checks
// it names the cards, and agrees by the button that names them.
func (p *page) answerYes(cards ...string) {
	p.t.Helper()
	p.waitFor(`document.querySelector('#question').open`, 30*time.Second)
	q := eval[string](p, `document.querySelector('#question').innerText`)
	for _, c := range cards {
		if !strings.Contains(q, c) {
			p.t.Fatalf("the question does not name %s:\n%s", c, q)
		}
	}
	if !strings.Contains(q, "ALL DATA ON") {
		p.t.Fatalf("the question is not the terminal's:\n%s", q)
	}
	p.click("#question-yes")
	p.waitFor(`!document.querySelector('#question').open`, 10*time.Second)
}

// writeImage writes the image at path (on the server's machine) to the
// cards, as a person does: the cards ticked, the path typed, Write, the
// question answered by naming them; it returns the write's job.
func (p *page) writeImage(path string, cards ...card) int {
	p.t.Helper()
	var targets, names []string
	for _, c := range cards {
		targets, names = append(targets, c.target), append(names, c.name())
	}
	p.chooseCards(targets...)
	p.typeIn("#image-path", path)
	p.click("#do-write")
	p.answerYes(names...)
	return p.newestJob()
}

// cardResult waits for a card's result on job id's panel and returns it.
func (p *page) cardResult(job int, target string, within time.Duration) string {
	p.t.Helper()
	sel := fmt.Sprintf(`#job-%d .card[data-target=%s]`, job, jsString(target))
	p.waitFor(fmt.Sprintf(`(() => { const c = document.querySelector(%s); return !!(c && c.dataset.result) })()`, jsString(sel)), within)
	return eval[string](p, fmt.Sprintf(`document.querySelector(%s).innerText`, jsString(sel)))
}

// jobEnded waits for job id's panel to say it ended, and returns its
// state ("ok" or "failed") and status line.
func (p *page) jobEnded(job int, within time.Duration) (string, string) {
	p.t.Helper()
	p.waitFor(fmt.Sprintf(`(() => { const j = document.querySelector('#job-%d'); return !!(j && j.dataset.state && j.dataset.state !== 'running') })()`, job), within)
	return eval[string](p, fmt.Sprintf(`document.querySelector('#job-%d').dataset.state`, job)),
		eval[string](p, fmt.Sprintf(`document.querySelector('#job-%d .job-status').textContent`, job))
}

// newestJob waits for a job newer than the last one it returned, and
// returns its id.
func (p *page) newestJob() int {
	p.t.Helper()
	p.waitFor(fmt.Sprintf(`(() => { const j = document.querySelector('#jobs .job'); return !!j && Number(j.id.slice(4)) > %d })()`, p.seen), 20*time.Second)
	fmt.Sscanf(eval[string](p, `document.querySelector('#jobs .job').id`), "job-%d", &p.seen)
	return p.seen
}

// screenshot saves the page as docs' name.png when USBFLASH_SCREENSHOTS
// names a directory (make screenshots).
func (p *page) screenshot(name string) {
	p.t.Helper()
	dir := os.Getenv("USBFLASH_SCREENSHOTS")
	if dir == "" {
		return
	}
	// Let the bars and fonts settle.
	p.do(chromedp.Sleep(300 * time.Millisecond))
	ctx, cancel := context.WithTimeout(p.ctx, 30*time.Second)
	defer cancel()
	png, err := chromedp.Run(ctx, chromedp.FullScreenshot(100))
	if err != nil {
		p.t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, name+".png"), png, 0o644); err != nil {
		p.t.Fatal(err)
	}
}

// sameAsImage checks that card holds img from its first byte, and
// nothing else was changed up to end (the sim card's size).
func sameAsImage(t *testing.T, card string, img []byte) {
	t.Helper()
	got, err := os.ReadFile(card)
	if err != nil {
		t.Fatal(err)
	}
	if len(got) < len(img) {
		t.Fatalf("%s: %d bytes, the image %d", card, len(got), len(img))
	}
	if !bytes.Equal(got[:len(img)], img) {
		t.Errorf("%s does not hold the image (first difference at byte %d)", card, firstDiff(got, img))
	}
}

func firstDiff(a, b []byte) int {
	for i := range min(len(a), len(b)) {
		if a[i] != b[i] {
			return i
		}
	}
	return min(len(a), len(b))
}

// shortDir is a directory of the test with a short name: the page shows
// its cards' paths, and the screenshots should read well.
func shortDir(t *testing.T) string {
	t.Helper()
	dir, err := os.MkdirTemp("", "cards-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	return dir
}

// osImage writes an OS-like image of size bytes (osimage.Generate's, of
// seed) to path.
func osImage(t *testing.T, path string, size int64, seed uint64) ([]byte, string) {
	t.Helper()
	img := osimage.Generate(size, seed)
	if err := os.WriteFile(path, img, 0o644); err != nil {
		t.Fatal(err)
	}
	return img, path
}

// blankCard makes a sim card file of size bytes, all zeros.
func blankCard(t *testing.T, path string, size int64) {
	t.Helper()
	f, err := os.Create(path)
	if err != nil {
		t.Fatal(err)
	}
	if err := f.Truncate(size); err != nil {
		t.Fatal(err)
	}
	f.Close()
}
