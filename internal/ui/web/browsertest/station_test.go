package browsertest

import (
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
)

// TestStation: a station of four simulated readers (--readers sim:DIR),
// two with a card in and two empty, started by the page's explicit choice
// (every card inserted is overwritten): the page shows the four slots at
// once, writes the cards that are in, then each card inserted while it
// runs, a card taken out (its slot shown empty) and the next put in its
// slot; it counts them, lists the last results and each slot's; Stop ends
// it; every card holds the image.
func TestStation(t *testing.T) {
	b := newBrowser(t)
	img, imgPath := osImage(t, filepath.Join(shortDir(t), "os.img"), 2<<20, 7)
	readers := bus{dir: shortDir(t), opts: "speed=20MB/s"}
	var slots []card
	for i := 1; i <= 4; i++ {
		size := int64(8 << 20)
		if i > 2 {
			size = 0 // plugged in, its slot empty
		}
		slots = append(slots, readers.card(t, fmt.Sprintf("slot%d", i), size))
	}
	s := serve(t, readers.readers()...)
	p := b.open(s.url)
	p.waitFor(`document.querySelectorAll('#slots tbody tr').length === 4`, 20*time.Second)
	p.typeIn("#image-path", imgPath)
	p.click("#do-station")
	p.waitFor(`document.querySelector('#station-question').open`, 10*time.Second)
	if q := eval[string](p, `document.querySelector('#station-question').innerText`); !strings.Contains(q, "overwritten without another question") {
		t.Errorf("the station's question: %s", q)
	}
	p.click("#station-yes")
	id := p.newestJob()
	// Every slot at once: two with a card, two empty.
	p.waitFor(fmt.Sprintf(`document.querySelectorAll('#job-%d .card[data-slot]').length === 4`, id), 20*time.Second)
	verified := func(c card) {
		t.Helper()
		if r := p.cardResult(id, c.name(), 60*time.Second); !strings.Contains(r, "Verified") {
			t.Fatalf("%s: %s", c.name(), r)
		}
	}
	count := func(n int) {
		t.Helper()
		p.waitFor(fmt.Sprintf(`document.querySelector('#job-%d .n-ok').textContent === '%d'`, id, n), 60*time.Second)
	}
	verified(slots[0])
	verified(slots[1])
	count(2)
	// A card inserted into the third reader while the station runs.
	blankCard(t, slots[2].path, 8<<20)
	verified(slots[2])
	count(3)
	// The first card taken out (kept aside, to look at), and another one
	// put in its slot.
	aside := filepath.Join(t.TempDir(), "first.img")
	if err := os.Rename(slots[0].path, aside); err != nil {
		t.Fatal(err)
	}
	blankCard(t, slots[0].path, 0)
	sameAsImage(t, aside, img)
	first := fmt.Sprintf(`document.querySelector('#job-%d .card[data-target=%s]')`, id, jsString(slots[0].name()))
	p.waitFor(first+`?.dataset.slot === 'empty'`, 20*time.Second)
	if line := eval[string](p, first+`.querySelector('.card-slot').textContent`); !strings.Contains(line, "taken out") {
		t.Errorf("the emptied slot says %q", line)
	}
	blankCard(t, slots[0].path, 8<<20)
	count(4)
	blankCard(t, slots[3].path, 8<<20)
	verified(slots[3])
	count(5)
	rows := eval[int](p, fmt.Sprintf(`document.querySelectorAll('#job-%d .job-recent tbody tr').length`, id))
	if rows != 5 {
		t.Errorf("the last results list %d cards, want 5", rows)
	}
	p.screenshot("station")
	p.click(fmt.Sprintf("#job-%d .job-stop", id))
	state, status := p.jobEnded(id, 60*time.Second)
	if state != "ok" || status != "Done" {
		t.Errorf("the station ended %s: %q", state, status)
	}
	for _, c := range slots {
		sameAsImage(t, c.path, img)
	}
	j := s.waitJob(id, 10*time.Second)
	if j.Cards != 5 || j.Succeeded != 5 || j.Failed != 0 || *j.ExitCode != 0 {
		t.Errorf("the station's job: %+v", j)
	}
	n := 0
	for _, e := range s.events(id) {
		if e["event"] == "card" {
			n++
		}
	}
	if n != 5 {
		t.Errorf("%d card events, want 5", n)
	}
}

// TestRejoin: a reload and a second tab rejoin a write under way and see
// it go on; closing every page stops nothing: the write ends, verified,
// and a page opened later shows how.
func TestRejoin(t *testing.T) {
	b := newBrowser(t)
	img, imgPath := osImage(t, filepath.Join(t.TempDir(), "os.img"), 6<<20, 8)
	readers := bus{dir: t.TempDir(), opts: "speed=2MB/s"}
	c := readers.card(t, "card", 16<<20)
	s := serve(t, readers.readers()...)
	p := b.open(s.url)
	id := p.writeImage(imgPath, c)
	bar := fmt.Sprintf(`document.querySelector('#job-%d .card progress')`, id)
	p.waitFor(bar+` && `+bar+`.value > 0`, 30*time.Second)
	p.do(chromedp.Reload())
	p.waitFor(`document.querySelector('#connection').textContent === 'Connected'`, 20*time.Second)
	p.waitFor(bar+` && `+bar+`.value > 1024*1024`, 30*time.Second)
	before := eval[float64](p, bar+`.value`)
	second := b.open(s.url)
	second.waitFor(bar+` && `+bar+`.value >= `+strconv.FormatFloat(before, 'f', 0, 64), 30*time.Second)
	if j := s.jobs(); len(j) != 1 || !j[0].Running {
		t.Fatalf("jobs after a reload and a second tab: %+v", j)
	}
	second.close()
	p.close()
	j := s.waitJob(id, 60*time.Second)
	if *j.ExitCode != 0 || j.Cards != 1 || j.Succeeded != 1 {
		t.Errorf("the write with no page open: %+v", j)
	}
	sameAsImage(t, c.path, img)
	late := b.open(s.url)
	if r := late.cardResult(id, c.name(), 20*time.Second); !strings.Contains(r, "Verified") {
		t.Errorf("a page opened later: %s", r)
	}
}
