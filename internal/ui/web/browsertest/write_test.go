package browsertest

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// card is a reader of a test's bus with its card: the card's file and
// the target that names the reader.
type card struct {
	path, target string
}

// name is the card as the session's events and question name it.
func (c card) name() string { return c.target }

// bus is a directory of simulated readers (--readers sim:DIR): each
// NAME.img a reader plugged in while the file exists, the file the card in
// its slot (0 bytes: none); opts are the sim: options of every reader.
type bus struct{ dir, opts string }

// readers is the serve flag that shows the bus.
func (b bus) readers() []string {
	spec := "sim:" + b.dir
	if b.opts != "" {
		spec += "?" + b.opts
	}
	return []string{"--readers", spec}
}

// card plugs in reader name with a blank card of size bytes (0: its slot
// empty).
func (b bus) card(t *testing.T, name string, size int64) card {
	t.Helper()
	c := card{path: filepath.Join(b.dir, name+".img"), target: "usb:0000:0000:" + name}
	blankCard(t, c.path, size)
	return c
}

// TestWriteTwoCardsFromFile: an image by its path on this machine,
// written to two cards at once; the page asks the terminal's question and
// writes only once the button naming both cards is pressed; both cards
// show their progress, then "Verified", and hold the image byte for byte;
// a verify of one then says it matches.
func TestWriteTwoCardsFromFile(t *testing.T) {
	b := newBrowser(t)
	img, imgPath := osImage(t, filepath.Join(t.TempDir(), "os.img"), 6<<20, 1)
	readers := bus{dir: t.TempDir(), opts: "speed=6MB/s"}
	a, c := readers.card(t, "a", 16<<20), readers.card(t, "b", 16<<20)
	s := serve(t, readers.readers()...)
	p := b.open(s.url)

	id := p.writeImage(imgPath, a, c)
	// Progress shows, below the whole image, before the result.
	p.waitFor(`[...document.querySelectorAll('#jobs .card progress')].some(b => b.value > 0 && b.value < b.max)`, 30*time.Second)
	for _, cd := range []card{a, c} {
		if r := p.cardResult(id, cd.name(), 60*time.Second); !strings.Contains(r, "Verified") {
			t.Errorf("%s: %s", cd.name(), r)
		}
	}
	if state, status := p.jobEnded(id, 30*time.Second); state != "ok" || status != "Done" {
		t.Errorf("job: %s, %q", state, status)
	}
	sameAsImage(t, a.path, img)
	sameAsImage(t, c.path, img)
	events := s.events(id)
	// The first card verified against the image on its own.
	p.click(fmt.Sprintf(`#slots input[data-target=%s]`, jsString(c.target)))
	p.click("#do-verify")
	vid := p.newestJob()
	if r := p.cardResult(vid, a.name(), 30*time.Second); !strings.Contains(r, "Matches") {
		t.Errorf("verify %s: %s", a.name(), r)
	}
	s.events(vid)
	seen := map[string]int{}
	for _, e := range events {
		seen[e["event"].(string)]++
	}
	if seen["card"] != 2 || seen["card_progress"] == 0 || seen["summary"] != 1 || seen["error"] != 0 {
		t.Errorf("events: %v", seen)
	}
}

// TestUnplugMidWrite: of two cards written at once, one whose reader is
// unplugged mid-write fails alone, with the words and advice of the
// command line; the other is verified and holds the image; the one that
// failed keeps its first transfer zeroed, so it boots no half image.
func TestUnplugMidWrite(t *testing.T) {
	b := newBrowser(t)
	dir := shortDir(t)
	img, imgPath := osImage(t, filepath.Join(shortDir(t), "os.img"), 6<<20, 2)
	readers := bus{dir: dir, opts: "speed=4MB/s"}
	good, gone := readers.card(t, "good", 16<<20), readers.card(t, "gone", 0)
	old := bytes.Repeat([]byte{0xa5}, 16<<20) // what the card held before
	if err := os.WriteFile(gone.path, old, 0o644); err != nil {
		t.Fatal(err)
	}
	s := serve(t, readers.readers()...)
	p := b.open(s.url)
	id := p.writeImage(imgPath, good, gone)
	// Unplugged once its write is under way: its card file gone from
	// the bus (kept aside, to look at what it holds).
	p.waitFor(fmt.Sprintf(`(() => { const c = document.querySelector('#job-%d .card[data-target=%s] progress'); return !!c && c.value > 0 })()`, id, jsString(gone.name())), 30*time.Second)
	aside := filepath.Join(dir, "gone.unplugged")
	if err := os.Rename(gone.path, aside); err != nil {
		t.Fatal(err)
	}
	if r := p.cardResult(id, gone.name(), 60*time.Second); !strings.Contains(r, "Removed") && !strings.Contains(r, "Failed") {
		t.Errorf("%s: %s", gone.name(), r)
	} else if !strings.Contains(r, "reconnect the reader") && !strings.Contains(r, "insert") {
		t.Errorf("%s: no advice: %s", gone.name(), r)
	}
	if r := p.cardResult(id, good.name(), 60*time.Second); !strings.Contains(r, "Verified") {
		t.Errorf("%s: %s", good.name(), r)
	}
	state, status := p.jobEnded(id, 30*time.Second)
	if state != "failed" || !strings.Contains(status, "partial (exit code 7)") {
		t.Errorf("job: %s, %q", state, status)
	}
	summary := eval[string](p, fmt.Sprintf(`document.querySelector('#job-%d .job-result').innerText`, id))
	if !strings.Contains(summary, "2 cards: 1 written and verified, 1 failed") {
		t.Errorf("summary: %s", summary)
	}
	p.screenshot("failure")
	sameAsImage(t, good.path, img)
	got, err := os.ReadFile(aside)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(got[:1<<20], make([]byte, 1<<20)) {
		t.Errorf("%s: its first transfer is not zeroed", gone.path)
	}
	s.events(id)
}

// TestStopWrite: the Stop button stops a write as one SIGTERM stops the
// command: after the command in flight, synced, exit 130, the card's
// first transfer left zeroed, and the advice to run the write again.
func TestStopWrite(t *testing.T) {
	b := newBrowser(t)
	img, imgPath := osImage(t, filepath.Join(t.TempDir(), "os.img"), 8<<20, 3)
	readers := bus{dir: t.TempDir(), opts: "speed=1MB/s"}
	c := readers.card(t, "slow", 0)
	if err := os.WriteFile(c.path, bytes.Repeat([]byte{0x5a}, 16<<20), 0o644); err != nil {
		t.Fatal(err)
	}
	s := serve(t, readers.readers()...)
	p := b.open(s.url)
	id := p.writeImage(imgPath, c)
	p.waitFor(`[...document.querySelectorAll('#jobs .card progress')].some(b => b.value >= 2*1024*1024)`, 30*time.Second)
	p.click(fmt.Sprintf("#job-%d .job-stop", id))
	state, status := p.jobEnded(id, 60*time.Second)
	if state != "failed" || !strings.Contains(status, "cancelled (exit code 130)") {
		t.Errorf("job: %s, %q", state, status)
	}
	result := eval[string](p, fmt.Sprintf(`document.querySelector('#job-%d .job-result').innerText`, id))
	if !strings.Contains(result, "run the write again") {
		t.Errorf("result: %s", result)
	}
	got, err := os.ReadFile(c.path)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(got[:1<<20], make([]byte, 1<<20)) || bytes.Equal(got[:len(img)], img) {
		t.Errorf("the stopped card's first transfer is not zeroed, or it holds the whole image")
	}
	s.events(id)
}
