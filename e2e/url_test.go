//go:build e2e

package e2e

import (
	"crypto/sha256"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/usbflash/usbflash/internal/image/bmap"
)

// TestWriteURL: a real HTTP server on the guest's loopback (e2e/httpserve,
// internal/flakyhttp behind net/http) serves an xz image, its SHA256SUMS and
// its block map. usbflash writes from the URL to an emulated reader while
// the server cuts the connection twice mid-body: the write resumes (each
// resume said), checks the download against SHA256SUMS, uses the map, and
// the backing file holds the image byte for byte; verify from the URL
// matches; a server that replaces the file between the cut and the resume
// fails the write with the first transfer zeroed. One boot.
func TestWriteURL(t *testing.T) {
	needCLI(t)
	server := buildProbe(t, "httpserve")
	card := zeroCard(t, 16<<20)
	const serial = "URLCARD"
	m := boot(t, MachineSpec{Controller: XHCI, Readers: []Reader{{Serial: serial, LUNs: []LUN{{Backing: card}}}}})
	shipProbe(t, m, "httpserve", server)

	img := makeImage(901, 8<<20+5*512)
	xzImg := encode(t, img, "xz")
	dir := filepath.Join(m.Share, "img", "url")
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	b := bmap.NewBuilder(4096)
	b.Write(img)
	mapped, err := bmap.Marshal(b.Map())
	if err != nil {
		t.Fatal(err)
	}
	files := map[string][]byte{
		"os.img.xz":   xzImg,
		"SHA256SUMS":  fmt.Appendf(nil, "%x  os.img.xz\n", sha256.Sum256(xzImg)),
		"os.img.bmap": mapped,
	}
	for name, data := range files {
		if err := os.WriteFile(filepath.Join(dir, name), data, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	target := serialTarget(serial)
	url := "http://127.0.0.1:8080/os.img.xz"
	drops := fmt.Sprintf("%d,%d", len(xzImg)/3, 2*len(xzImg)/3)

	r := serveAndRun(t, m, "-drop "+drops, "usbflash "+sh("write", url, target, "--yes"))
	wantCode(t, r, 0, "write from a URL")
	out := all(r)
	if n := strings.Count(out, "resuming in"); n != 2 {
		t.Errorf("%d resumes said, want 2", n)
	}
	for _, want := range []string{"matches the SHA-256 in http://127.0.0.1:8080/SHA256SUMS", "http://127.0.0.1:8080/os.img.bmap",
		"Range=\"bytes=" + fmt.Sprint(len(xzImg)/3) + "-\"", "Range=\"bytes=" + fmt.Sprint(2*len(xzImg)/3) + "-\""} {
		if !strings.Contains(out, want) {
			t.Errorf("output lacks %q", want)
		}
	}
	checkPrefix(t, card, img)

	r = serveAndRun(t, m, "", "usbflash "+sh("verify", url, target))
	wantCode(t, r, 0, "verify from a URL")

	// The file is replaced on the server between the cut and the resume:
	// the If-Range no longer matches and the server sends the new file
	// whole (200), which must never be spliced onto the old one.
	other := encode(t, makeImage(902, 8<<20+5*512), "xz")
	if err := os.MkdirAll(filepath.Join(m.Share, "img", "url2"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(m.Share, "img", "url2", "os.img.xz"), other, 0o644); err != nil {
		t.Fatal(err)
	}
	r = serveAndRun(t, m, "-drop "+fmt.Sprint(len(xzImg)/2)+" -replace /host/img/url2/os.img.xz",
		"usbflash "+sh("write", url, target, "--yes", "--no-sha256", "--no-bmap"))
	wantCode(t, r, 4, "write from a URL whose file changed")
	if !strings.Contains(all(r), "whole file (200)") {
		t.Errorf("output does not say the server sent the whole file")
	}
	got, err := os.ReadFile(card)
	if err != nil {
		t.Fatal(err)
	}
	if string(got[:512]) != string(make([]byte, 512)) {
		t.Error("the first transfer is not zeroed after the failed write")
	}

	// --cache across runs: a write killed (SIGKILL) once 1 MB is in the
	// cache's .part is resumed from there by the next run, which leaves
	// the file in the cache; a third reads it from the cache alone.
	const cache = "/tmp/ucache"
	killed := "usbflash " + sh("write", url, target, "--yes", "--cache", cache) + " & p=$!\n" +
		"i=0; while [ \"$(cat " + cache + "/url-*.part 2>/dev/null | wc -c)\" -lt 1000000 ] && [ $i -lt 600 ]; do sleep 0.05; i=$((i+1)); done\n" +
		"kill -9 $p; wait $p; echo killed at $(cat " + cache + "/url-*.part | wc -c) bytes; " +
		"usbflash " + sh("write", url, target, "--yes", "--cache", cache)
	r = serveAndRun(t, m, "-rate 1000000", killed)
	wantCode(t, r, 0, "write resumed from the cache's .part")
	for _, want := range []string{"killed at", "from the cache's " + cache + "/url-", "Cached http://127.0.0.1:8080/os.img.xz as " + cache + "/sha256-"} {
		if !strings.Contains(all(r), want) {
			t.Errorf("output lacks %q", want)
		}
	}
	checkPrefix(t, card, img)
	r = serveAndRun(t, m, "", "usbflash "+sh("write", url, target, "--yes", "--cache", cache))
	wantCode(t, r, 0, "write from the cache")
	if out := all(r); !strings.Contains(out, "from the cache: "+cache+"/sha256-") || strings.Contains(out, "GET /os.img.xz Range") {
		t.Errorf("the third write did not read the cache alone")
	}
	checkPrefix(t, card, img)
}

// zeroCard is a backing file of zeros: the block map's unmapped (zero)
// blocks are left as they are, so the card still equals the image.
func zeroCard(t *testing.T, size int64) string {
	t.Helper()
	p := filepath.Join(t.TempDir(), "card.img")
	if err := os.WriteFile(p, make([]byte, size), 0o644); err != nil {
		t.Fatal(err)
	}
	return p
}

// serveAndRun starts httpserve on the guest's loopback with flags,
// serving /host/img/url/os.img.xz and the files beside it, runs cmd, stops
// the server, and returns cmd's result with the server's log appended to
// its stderr.
func serveAndRun(t *testing.T, m *Machine, flags, cmd string) Result {
	t.Helper()
	script := strings.Join([]string{
		"ip link set lo up 2>/dev/null || ifconfig lo 127.0.0.1 up",
		"rm -f /tmp/ready /tmp/srv.log",
		"/host/bin/httpserve -addr 127.0.0.1:8080 -image /host/img/url/os.img.xz -ready /tmp/ready " + flags + " >/tmp/srv.log 2>&1 &",
		"srv=$!",
		"i=0; while [ ! -e /tmp/ready ] && [ $i -lt 300 ]; do sleep 0.1; i=$((i+1)); done",
		"timeout -s TERM 240 " + cmd,
		"rc=$?",
		"kill $srv",
		"cat /tmp/srv.log >&2",
		"exit $rc",
	}, "\n")
	r, err := m.Run(script, 300*time.Second)
	if err != nil {
		t.Fatalf("%s: %v\n%s", cmd, err, r)
	}
	t.Logf("$ %s\n%s", cmd, r)
	return r
}
