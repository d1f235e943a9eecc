package browsertest

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"image"
	"image/color"
	"image/png"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"github.com/usbflash/usbflash/internal/testkit/osimage"
)

// files serves name -> content over HTTP on the loopback, as a
// publisher's server would.
func files(t *testing.T, content map[string][]byte) *httptest.Server {
	t.Helper()
	ts := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b, ok := content[r.URL.Path]
		if !ok {
			http.NotFound(w, r)
			return
		}
		http.ServeContent(w, r, r.URL.Path, time.Time{}, bytes.NewReader(b))
	}))
	t.Cleanup(ts.Close)
	return ts
}

func sha256Hex(b []byte) string {
	s := sha256.Sum256(b)
	return hex.EncodeToString(s[:])
}

// TestWriteFromURL: an image at a URL, with its publisher's SHA-256 beside
// it, written to one card: the page shows the download beside the write,
// the checksum matched, and "Verified"; the card holds the image.
func TestWriteFromURL(t *testing.T) {
	b := newBrowser(t)
	dir := shortDir(t)
	img := osimage.Generate(5<<20, 4)
	srv := files(t, map[string][]byte{"/os.img": img, "/os.img.sha256": []byte(sha256Hex(img) + "  os.img\n")})
	readers := bus{dir: dir, opts: "speed=5MB/s"}
	c := readers.card(t, "card", 16<<20)
	s := serve(t, readers.readers()...)
	p := b.open(s.url)
	p.chooseCards(c.target)
	p.click(`input[name=source][value=url]`)
	p.typeIn("#image-url", srv.URL+"/os.img")
	p.click("#do-write")
	// Answered with the keyboard alone: the question opens on its safe
	// answer, Shift+Tab reaches the one that names the card, Enter.
	p.waitFor(`document.querySelector('#question').open && document.activeElement.id === 'question-no'`, 30*time.Second)
	p.do(chromedp.KeyEvent("\t", chromedp.KeyModifiers(chromedp.ModifierShift)))
	if f := eval[string](p, `document.activeElement.textContent`); f != "Overwrite "+c.name() {
		t.Fatalf("Shift+Tab reached %q", f)
	}
	p.do(chromedp.KeyEvent("\r"))
	id := p.newestJob()
	p.waitFor(fmt.Sprintf(`(document.querySelector('#job-%d .card-download')?.textContent || '').includes('sets the pace')`, id), 30*time.Second)
	if r := p.cardResult(id, c.name(), 60*time.Second); !strings.Contains(r, "Verified") {
		t.Errorf("%s: %s", c.name(), r)
	}
	p.jobEnded(id, 30*time.Second)
	sum := eval[string](p, fmt.Sprintf(`document.querySelector('#job-%d .job-checksum').textContent`, id))
	if !strings.Contains(sum, "Checksum: matched") || !strings.Contains(sum, "os.img.sha256") {
		t.Errorf("checksum state: %q", sum)
	}
	p.screenshot("one-card")
	sameAsImage(t, c.path, img)
	s.events(id)
}

// TestCatalogCustomised: an entry of an OS list (with its icon, its
// description and sizes) written to two cards at once with first-boot
// settings whose hostname is pi-{n}: each card gets its own name in its
// boot partition, and every byte outside that partition is the image's.
func TestCatalogCustomised(t *testing.T) {
	for _, tool := range []string{"mkfs.fat", "mcopy", "mtype"} {
		if _, err := exec.LookPath(tool); err != nil {
			skipOrFail(t, "%s is missing (apt-get install dosfstools mtools)", tool)
		}
	}
	b := newBrowser(t)
	dir := t.TempDir()
	const bootStart, bootSize = 1 << 20, 4 << 20
	img, err := osimage.BootableAs(t.TempDir(), osimage.Layout{FAT: "12"}, bootStart, bootSize, 1<<20, osimage.RaspiosBoot, 5)
	if err != nil {
		t.Fatal(err)
	}
	var icon bytes.Buffer
	pic := image.NewRGBA(image.Rect(0, 0, 8, 8))
	for i := range 8 {
		pic.Set(i, i, color.RGBA{200, 30, 60, 255})
	}
	png.Encode(&icon, pic)
	list := fmt.Sprintf(`{"os_list": [{"name": "Test OS", "description": "A system made for this test", "url": "os.img",
		"icon": "icons/test.png", "release_date": "2026-12-01", "extract_size": %d, "extract_sha256": %q,
		"image_download_size": %d, "image_download_sha256": %q, "init_format": "systemd"}]}`, len(img), sha256Hex(img), len(img), sha256Hex(img))
	srv := files(t, map[string][]byte{"/os_list.json": []byte(list), "/os.img": img, "/icons/test.png": icon.Bytes()})
	readers := bus{dir: dir}
	a, c := readers.card(t, "a", 16<<20), readers.card(t, "b", 16<<20)
	s := serve(t, append(readers.readers(), "--catalog", srv.URL+"/os_list.json")...)
	p := b.open(s.url)
	p.chooseCards(a.target, c.target)
	p.click("#source-os")
	p.waitFor(`!!document.querySelector('#catalog .entry')`, 30*time.Second)
	entry := eval[string](p, `document.querySelector('#catalog .entry').innerText`)
	if !strings.Contains(entry, "A system made for this test") || !strings.Contains(entry, fmt.Sprintf("image %.2f MB", float64(len(img))/1e6)) {
		t.Errorf("the entry reads %q", entry)
	}
	p.waitFor(`document.querySelector('#catalog .entry img').naturalWidth === 8`, 20*time.Second)
	p.click("#catalog .entry")
	p.click("#custom summary")
	p.typeIn("#c-hostname", "pi-{n}")
	p.typeIn("#c-user", "maker")
	p.typeIn("#c-password", "correct horse")
	p.waitFor(`document.querySelector('#custom-preview').textContent.includes('pi-2 on')`, 10*time.Second)
	p.click("#do-write")
	p.answerYes(a.name(), c.name())
	id := p.newestJob()
	for _, cd := range []card{a, c} {
		if r := p.cardResult(id, cd.name(), 60*time.Second); !strings.Contains(r, "Verified") {
			t.Errorf("%s: %s", cd.name(), r)
		}
	}
	if state, _ := p.jobEnded(id, 30*time.Second); state != "ok" {
		t.Errorf("job: %s", state)
	}
	if sum := eval[string](p, fmt.Sprintf(`document.querySelector('#job-%d .job-checksum').textContent`, id)); !strings.Contains(sum, "matched the catalog's entry Test OS") {
		t.Errorf("checksum state: %q", sum)
	}
	for i, cd := range []card{a, c} {
		got, err := os.ReadFile(cd.path)
		if err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(got[:bootStart], img[:bootStart]) || !bytes.Equal(got[bootStart+bootSize:len(img)], img[bootStart+bootSize:]) {
			t.Errorf("%s differs from the image outside its boot partition", cd.path)
		}
		cmd := exec.Command("mtype", "-i", fmt.Sprintf("%s@@%d", cd.path, bootStart), "::firstrun.sh")
		cmd.Env = append(os.Environ(), "MTOOLS_SKIP_CHECK=1")
		out, err := cmd.CombinedOutput()
		name, other := fmt.Sprintf("pi-%d", i+1), fmt.Sprintf("pi-%d", 2-i)
		if err != nil || !strings.Contains(string(out), name) || strings.Contains(string(out), other) || !strings.Contains(string(out), "maker") {
			t.Errorf("%s's firstrun.sh (%v) does not name it %s alone, with the user maker:\n%s", cd.path, err, name, out)
		}
	}
	s.events(id)
}

// TestDroppedFile: a file dragged from the desktop and dropped on the page
// is streamed to the session as it is written, a piece at a time, never
// stored, and the card holds it; one chosen with the page's file input
// too.
func TestDroppedFile(t *testing.T) {
	b := newBrowser(t)
	dir := t.TempDir()
	img, imgPath := osImage(t, filepath.Join(t.TempDir(), "dropped.img"), 3<<20+512, 6)
	readers := bus{dir: dir}
	c := readers.card(t, "card", 16<<20)
	s := serve(t, readers.readers()...)
	p := b.open(s.url)
	p.chooseCards(c.target)
	p.click(`input[name=source][value=stream]`)
	for _, how := range []string{"dropped", "chosen"} {
		blankCard(t, c.path, 16<<20)
		if how == "dropped" {
			p.dropFile("#drop", imgPath)
		} else {
			p.do(chromedp.SetUploadFiles(chromedp.CSS("#image-file"), []string{imgPath}))
		}
		p.waitFor(`document.querySelector('#stream-chosen').textContent.startsWith('dropped.img')`, 10*time.Second)
		p.click("#do-write")
		p.answerYes(c.name())
		id := p.newestJob()
		if r := p.cardResult(id, c.name(), 60*time.Second); !strings.Contains(r, "Verified") {
			t.Errorf("%s: %s: %s", how, c.name(), r)
		}
		p.jobEnded(id, 30*time.Second)
		sameAsImage(t, c.path, img)
		for _, e := range s.events(id) {
			if e["event"] == "start" && e["image"] != "-" {
				t.Errorf("%s: the session read %v, not the stream", how, e["image"])
			}
		}
	}
}
