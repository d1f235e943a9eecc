package browsertest

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/cdproto/cdp"
	"github.com/chromedp/cdproto/emulation"
	"github.com/chromedp/chromedp"

	"github.com/usbflash/usbflash/internal/testkit/osimage"
)

// TestCheckAndBench: check tells a genuine card from a fake one and puts
// back every block it wrote; bench measures a card and the page shows
// its plot.
func TestCheckAndBench(t *testing.T) {
	b := newBrowser(t)
	genuine := bus{dir: t.TempDir()}
	real := genuine.card(t, "real", 0)
	held := osimage.Generate(16<<20, 9)
	if err := os.WriteFile(real.path, held, 0o644); err != nil {
		t.Fatal(err)
	}
	s := serve(t, genuine.readers()...)
	p := b.open(s.url)
	accessible(t, p)

	run := func(p *page, target, button string) int {
		t.Helper()
		p.chooseCards(target)
		p.click(button)
		id := p.newestJob()
		p.jobEnded(id, 90*time.Second)
		p.click(fmt.Sprintf(`#slots input[data-target=%s]`, jsString(target))) // unchosen again
		return id
	}
	id := run(p, real.target, "#do-check")
	if r := p.cardResult(id, real.name(), 10*time.Second); !strings.Contains(r, "No fake capacity") || !strings.Contains(r, "put back") {
		t.Errorf("check %s: %s", real.name(), r)
	}
	got, err := os.ReadFile(real.path)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(got, held) {
		t.Errorf("check changed %s (first difference at byte %d)", real.path, firstDiff(got, held))
	}
	s.events(id)

	id = run(p, real.target, "#do-bench")
	if r := p.cardResult(id, real.name(), 10*time.Second); !strings.Contains(r, "Recommended transfer size") {
		t.Errorf("bench: %s", r)
	}
	p.waitFor(fmt.Sprintf(`document.querySelector('#job-%d .job-plot img').naturalWidth > 100`, id), 20*time.Second)
	s.events(id)

	// A reader of fake cards: 64 MiB claimed, the first 8 MiB kept.
	fakes := bus{dir: t.TempDir(), opts: "fake=drop&real=8MiB"}
	fake := fakes.card(t, "fake", 64<<20)
	fs := serve(t, fakes.readers()...)
	fp := b.open(fs.url)
	id = run(fp, fake.target, "#do-check")
	if r := fp.cardResult(id, fake.name(), 10*time.Second); !strings.Contains(r, "FAKE") {
		t.Errorf("check %s: %s", fake.name(), r)
	}
	if _, status := fp.jobEnded(id, time.Second); !strings.Contains(status, "fake (exit code 8)") {
		t.Errorf("check %s: %s", fake.name(), status)
	}
	fs.events(id)
}

// accessible checks what a keyboard and a screen reader need of the
// page: every control has a name (a label, its text or aria-label), the
// sessions speak through live regions, and the page follows the system's
// dark scheme.
func accessible(t *testing.T, p *page) {
	t.Helper()
	unnamed := eval[[]string](p, `[...document.querySelectorAll('input, select, textarea, button')]
		.filter(e => !(e.labels && e.labels.length) && !e.getAttribute('aria-label') && !e.textContent.trim())
		.map(e => e.id || e.outerHTML)`)
	if len(unnamed) > 0 {
		t.Errorf("controls without a name: %q", unnamed)
	}
	if n := eval[int](p, `document.querySelectorAll('[role=status], [aria-live], [role=alert]').length`); n < 3 {
		t.Errorf("%d live regions", n)
	}
	light := eval[string](p, `getComputedStyle(document.body).backgroundColor`)
	p.do(chromedp.Func(func(ctx context.Context, tg *chromedp.Target) error {
		_, err := cdp.Call(ctx, tg, emulation.SetEmulatedMedia, emulation.SetEmulatedMediaParams{
			Features: []*emulation.MediaFeature{{Name: "prefers-color-scheme", Value: "dark"}}})
		return err
	}))
	dark := eval[string](p, `getComputedStyle(document.body).backgroundColor`)
	if light != "rgb(247, 247, 245)" || dark != "rgb(22, 23, 25)" {
		t.Errorf("background light %s, dark %s", light, dark)
	}
}

// TestServeRefuses: `usbflash serve` listens on loopback alone unless
// told otherwise; a request without the token, from another site's page
// or under a foreign host name is refused, and no card is written.
func TestServeRefuses(t *testing.T) {
	_, imgPath := osImage(t, filepath.Join(t.TempDir(), "os.img"), 1<<20, 10)
	readers := bus{dir: t.TempDir()}
	c := readers.card(t, "card", 8<<20)
	s := serve(t, readers.readers()...)
	if !strings.HasPrefix(s.base, "http://127.0.0.1:") {
		t.Errorf("the default address is %s, not loopback", s.base)
	}
	_, port, _ := net.SplitHostPort(strings.TrimPrefix(s.base, "http://"))
	if ip := nonLoopback(); ip != "" {
		if conn, err := net.DialTimeout("tcp", net.JoinHostPort(ip, port), 2*time.Second); err == nil {
			conn.Close()
			t.Errorf("the page answers on %s, another address than loopback", ip)
		}
	}
	body := fmt.Sprintf(`{"kind":"write","image":{"path":%q},"targets":[%q]}`, imgPath, c.target)
	for _, tc := range []struct {
		name                string
		host, origin, token string
		want                string
	}{
		{"no token", "", s.base, "", "does not carry this server's token"},
		{"foreign origin", "", "http://evil.example", s.token, "not from this page"},
		{"foreign host", "evil.example:" + port, "http://evil.example:" + port, s.token, "DNS rebinding"},
	} {
		r, _ := http.NewRequest(http.MethodPost, s.base+"/api/jobs", strings.NewReader(body))
		if tc.host != "" {
			r.Host = tc.host
		}
		r.Header.Set("Origin", tc.origin)
		if tc.token != "" {
			r.Header.Set("X-Usbflash-Token", tc.token)
		}
		resp, err := http.DefaultClient.Do(r)
		if err != nil {
			t.Fatal(err)
		}
		msg, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if resp.StatusCode != http.StatusForbidden || !strings.Contains(string(msg), tc.want) {
			t.Errorf("%s: %d %s", tc.name, resp.StatusCode, msg)
		}
	}
	if j := s.jobs(); len(j) != 0 {
		t.Errorf("jobs after refused requests: %+v", j)
	}
	got, _ := os.ReadFile(c.path)
	if !bytes.Equal(got, make([]byte, 8<<20)) {
		t.Error("the card was written to")
	}
	// Told another address, it prints the token apart and says what that
	// means.
	open := serve(t, append(readers.readers(), "--listen", "0.0.0.0:0")...)
	if !strings.Contains(open.stdout(), "the page is open to the network; requests that change anything need the token "+open.token) {
		t.Errorf("serve --listen 0.0.0.0:0 printed:\n%s", open.stdout())
	}
}

// nonLoopback is an address of this machine other than loopback, "" for
// none.
func nonLoopback() string {
	addrs, _ := net.InterfaceAddrs()
	for _, a := range addrs {
		if n, ok := a.(*net.IPNet); ok && !n.IP.IsLoopback() && n.IP.To4() != nil {
			return n.IP.String()
		}
	}
	return ""
}
