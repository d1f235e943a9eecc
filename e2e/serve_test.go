//go:build e2e

package e2e

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
)

// TestServePage: `usbflash serve` in the guest, its page opened by a
// headless Chromium on the host through a port QEMU forwards to the
// guest, writes an image to an emulated reader over usb-storage as a
// person would: the card chosen on the page, the image's path typed, the
// terminal's question answered by the button naming the card; the page
// says "Verified", and the reader's backing file holds the image byte for
// byte. One boot.
func TestServePage(t *testing.T) {
	needCLI(t)
	browser := hostChromium(t)
	port := freePort(t)
	card := zeroCard(t, 16<<20)
	const serial = "PAGECARD"
	m := boot(t, MachineSpec{Controller: XHCI, Readers: []Reader{{Serial: serial, LUNs: []LUN{{Backing: card}}}},
		Forward: []Forward{{Host: port, Guest: 8080}}})
	img := makeImage(404, 6<<20+3*512)
	dir := filepath.Join(m.Share, "img", "serve")
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "os.img"), img, 0o644); err != nil {
		t.Fatal(err)
	}
	guest(t, m, guestNet)
	// The page listens on the guest's network (QEMU forwards to
	// 10.0.2.15), so --listen, and prints its token for that.
	server := m.Start("timeout -s TERM 600 usbflash serve --listen 0.0.0.0:8080")
	var url string
	for deadline := time.Now().Add(60 * time.Second); url == "" && time.Now().Before(deadline); time.Sleep(100 * time.Millisecond) {
		out, _ := server.Output()
		if m := regexp.MustCompile(`open http://\S+?/#token=([0-9a-f]+)`).FindStringSubmatch(out); m != nil {
			url = fmt.Sprintf("http://127.0.0.1:%d/#token=%s", port, m[1])
		}
		if server.Done() {
			break
		}
	}
	if url == "" {
		out, errOut := server.Output()
		t.Fatalf("usbflash serve printed no address:\n%s\n%s", out, errOut)
	}
	target := serialTarget(serial)

	ctx := hostPage(t, browser)
	run := func(what string, within time.Duration, steps ...chromedp.Action[chromedp.Void]) {
		t.Helper()
		c, cancel := context.WithTimeout(ctx, within)
		defer cancel()
		if err := chromedp.Do(c, steps...); err != nil {
			text, _ := chromedp.Run(ctx, chromedp.Evaluate[string](`document.querySelector('main').innerText`))
			out, errOut := server.Output()
			t.Fatalf("%s: %v\nthe page reads:\n%s\nserve:\n%s\n%s", what, err, text, out, errOut)
		}
	}
	poll := func(js string) chromedp.Action[chromedp.Void] {
		return func(ctx context.Context, tg *chromedp.Target) (chromedp.Void, error) {
			_, err := chromedp.Poll[bool](js, chromedp.WithPollingTimeout(0), chromedp.WithPollingInterval(100*time.Millisecond))(ctx, tg)
			return chromedp.Void{}, err
		}
	}
	box := fmt.Sprintf(`#slots input[data-target=%s]`, jsonString(target))
	run("the page lists the reader", 90*time.Second,
		chromedp.Navigate(url),
		poll(`document.querySelector('#connection').textContent === 'Connected'`),
		poll(fmt.Sprintf(`!!document.querySelector(%s)`, jsonString(box))))
	run("choosing the card and the image", 30*time.Second,
		chromedp.Click(chromedp.CSS(box)),
		chromedp.Click(chromedp.CSS("#image-path")),
		chromedp.SendKeys(chromedp.CSS("#image-path"), "/host/img/serve/os.img"),
		chromedp.Click(chromedp.CSS("#do-write")),
		poll(`document.querySelector('#question').open`))
	question, _ := chromedp.Run(ctx, chromedp.Evaluate[string](`document.querySelector('#question').innerText`))
	if !strings.Contains(question, target) || !strings.Contains(question, "ALL DATA ON IT WILL BE LOST") {
		t.Fatalf("the question:\n%s", question)
	}
	run("the write", 240*time.Second,
		chromedp.Click(chromedp.CSS("#question-yes")),
		poll(`(() => { const j = document.querySelector('#jobs .job'); return !!j && j.dataset.state && j.dataset.state !== 'running' })()`))
	result, _ := chromedp.Run(ctx, chromedp.Evaluate[string](`document.querySelector('#jobs .job').innerText`))
	if !strings.Contains(result, "Verified") || !strings.Contains(result, "Done") {
		t.Errorf("the page says:\n%s", result)
	}
	got, err := os.ReadFile(card)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(got[:len(img)], img) {
		t.Errorf("the reader's backing file does not hold the image")
	}
}

// hostChromium is the host's Chromium, for the tests that drive a page.
func hostChromium(t *testing.T) string {
	t.Helper()
	for _, name := range []string{"chromium", "chromium-browser", "google-chrome"} {
		if p, err := exec.LookPath(name); err == nil {
			return p
		}
	}
	skipOrFail(t, "no Chromium on the host (apt-get install chromium)")
	return ""
}

// hostPage is a tab of a headless Chromium of its own, which calls
// nothing on the network but the page.
func hostPage(t *testing.T, exe string) context.Context {
	t.Helper()
	alloc, cancelAlloc := chromedp.NewExecAllocator(context.Background(), chromedp.ExecPath(exe), chromedp.UserDataDir(t.TempDir()),
		chromedp.Headless, chromedp.NoSandbox, chromedp.DisableGPU,
		chromedp.Flag("disable-background-networking", true), chromedp.Flag("disable-component-update", true),
		chromedp.Flag("disable-sync", true), chromedp.Flag("no-first-run", true), chromedp.Flag("disable-dev-shm-usage", true))
	ctx, cancel := chromedp.NewContext(alloc)
	t.Cleanup(func() {
		cancel()
		cancelAlloc()
	})
	if err := chromedp.Do(ctx); err != nil {
		skipOrFail(t, "Chromium %s does not start: %v", exe, err)
	}
	return ctx
}

// freePort is a TCP port free on the host's loopback.
func freePort(t *testing.T) int {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port
}

// jsonString is s as a JavaScript (and CSS) string literal.
func jsonString(s string) string {
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	enc.Encode(s)
	return strings.TrimSpace(b.String())
}
