//go:build e2e

package e2e

import (
	"bufio"
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"
)

// soakCycles is how many insert/remove cycles TestSoak runs: 40 (about
// 1.5 minutes under TCG, the boot besides), or USBFLASH_SOAK_CYCLES, at
// least 12 so that the memory is compared between two rounds after the
// first.
func soakCycles(t *testing.T) int {
	s := os.Getenv("USBFLASH_SOAK_CYCLES")
	if s == "" {
		return 40
	}
	n, err := strconv.Atoi(s)
	if err != nil || n < 12 {
		t.Fatalf("USBFLASH_SOAK_CYCLES=%q: want 12 or more", s)
	}
	return n
}

// soakImage is the size of the image a soak writes.
const soakImage = 16 << 20

// soakRecord is what TestSoak reads of a card's record in the report.
type soakRecord struct {
	Serial   string `json:"serial"`
	Result   string `json:"result"`
	Verified bool   `json:"verified"`
	Error    string `json:"error"`
	Slot     string `json:"slot"`
}

// A flashing station's soak: write --watch with 4 readers hot-plugged by
// QMP device_add and unplugged by device_del, cycle after cycle, one card
// of every four unplugged in the middle of its write; then SIGTERM. Every
// card that completed holds the image byte for byte, every unplugged one is
// recorded as removed (its boot sector still zeroed), the station never stopped on its own, its memory
// after the last round is at most 1.1x what it was after the second, its
// file descriptors and goroutines did not grow, and /metrics, scraped
// while it runs, counts what the report holds.
func TestSoak(t *testing.T) {
	cycles := soakCycles(t)
	const readers = 4
	m := boot(t, MachineSpec{Controller: XHCI, QMP: true, MemMB: 1024})
	img := makeImage(36, soakImage)
	p := putImage(t, m, "img", img, "raw")
	w := m.Start(`ip link set lo up 2>/dev/null || ifconfig lo 127.0.0.1 up
mkdir -p /tmp/logs
usbflash write ` + p + ` --watch --yes --report /host/soak.json --log-dir /tmp/logs --station soak \
	--metrics-listen 127.0.0.1:9123 --stop-timeout 1m >/tmp/w.out 2>&1 & pid=$!
while [ ! -e /host/stop ] && kill -0 $pid 2>/dev/null; do
	for f in /host/scrape.*; do
		[ -e "$f" ] || continue
		n=${f#/host/scrape.}
		wget -q -O /host/.metrics.$n http://127.0.0.1:9123/metrics && mv /host/.metrics.$n /host/metrics.$n
		rm -f "$f"
	done
	usleep 50000
done
kill -0 $pid 2>/dev/null || echo "the station stopped on its own"
kill -TERM $pid; wait $pid; rc=$?; cat /tmp/w.out; ls /tmp/logs | wc -l | sed 's/^/slot logs: /'; exit $rc`)
	report := filepath.Join(m.Share, "soak.json")
	scrapes := 0
	scrape := func() map[string]float64 {
		t.Helper()
		scrapes++
		n := strconv.Itoa(scrapes)
		if err := os.WriteFile(filepath.Join(m.Share, "scrape."+n), nil, 0o644); err != nil {
			t.Fatal(err)
		}
		path := filepath.Join(m.Share, "metrics."+n)
		deadline := time.Now().Add(time.Minute)
		for {
			if b, err := os.ReadFile(path); err == nil {
				return parseMetrics(string(b))
			}
			if w.Done() {
				o, e := w.Output()
				t.Fatalf("the station stopped on its own:\n%s\n%s", o, e)
			}
			if time.Now().After(deadline) {
				t.Fatal("/metrics was not scraped within a minute")
			}
			time.Sleep(100 * time.Millisecond)
		}
	}
	// quiet waits until the station holds no reader and writes no card,
	// and returns /metrics then.
	quiet := func() map[string]float64 {
		t.Helper()
		deadline := time.Now().Add(time.Minute)
		for {
			mt := scrape()
			for _, name := range []string{"usbflash_readers", "usbflash_cards_in_flight", "process_resident_memory_bytes", "process_open_fds", "go_goroutines"} {
				if _, ok := mt[name]; !ok {
					t.Fatalf("/metrics has no %s", name)
				}
			}
			if mt["usbflash_readers"] == 0 && mt["usbflash_cards_in_flight"] == 0 {
				return mt
			}
			if time.Now().After(deadline) {
				t.Fatalf("the station still holds %v readers and %v cards a minute after the last was unplugged", mt["usbflash_readers"], mt["usbflash_cards_in_flight"])
			}
			time.Sleep(500 * time.Millisecond)
		}
	}

	var early map[string]float64 // after the second round
	removed := 0
	start := time.Now()
	for c := 0; c < cycles; {
		type plugged struct {
			n       int
			id      string
			card    string
			unplug  bool // in the middle of its write
			removed bool
		}
		var round []*plugged
		for range readers {
			if c == cycles {
				break
			}
			pl := &plugged{n: c, id: fmt.Sprintf("soak%d", c), card: newCard(t, 24<<20), unplug: c%4 == 1}
			c++
			if _, err := m.QMP.Exec("blockdev-add", map[string]any{"driver": "raw", "node-name": pl.id + "d",
				"file": map[string]any{"driver": "file", "filename": pl.card}}); err != nil {
				t.Fatal(err)
			}
			if _, err := m.QMP.Exec("device_add", map[string]any{"driver": "usb-storage", "id": pl.id, "bus": "xhci.0",
				"drive": pl.id + "d", "serial": strings.ToUpper(pl.id)}); err != nil {
				t.Fatal(err)
			}
			round = append(round, pl)
		}
		// The cards to unplug first: the others are written meanwhile.
		for _, pl := range round {
			if !pl.unplug {
				continue
			}
			waitLanded(t, pl.card, img, 2<<20, w, 2*time.Minute)
			if _, err := m.QMP.Exec("device_del", map[string]any{"id": pl.id}); err != nil {
				t.Fatal(err)
			}
			pl.removed = true
			removed++
		}
		for _, pl := range round {
			rec := waitRecord(t, report, strings.ToUpper(pl.id), w, 3*time.Minute)
			switch {
			case pl.removed && rec.Result != "removed":
				t.Errorf("cycle %d: unplugged mid-write, recorded as %q: %s", pl.n, rec.Result, rec.Error)
			case pl.removed:
				// The first transfer is written last: a card unplugged
				// mid-write holds zeros where its boot sector goes.
				if b, err := os.ReadFile(pl.card); err != nil || !bytes.Equal(b[:512], make([]byte, 512)) {
					t.Errorf("cycle %d: unplugged mid-write, LBA 0 is not zeroed (%v)", pl.n, err)
				}
			case !pl.removed && (rec.Result != "ok" || !rec.Verified):
				t.Errorf("cycle %d: recorded as %q (verified %v): %s", pl.n, rec.Result, rec.Verified, rec.Error)
			case !pl.removed:
				checkCard(t, pl.card, img)
			}
			if !pl.removed {
				if _, err := m.QMP.Exec("device_del", map[string]any{"id": pl.id}); err != nil {
					t.Fatal(err)
				}
			}
		}
		mt := quiet()
		t.Logf("after %d cycles (%v): RSS %.1f MiB, %v fds, %v goroutines", c, time.Since(start).Round(time.Second),
			mt["process_resident_memory_bytes"]/(1<<20), mt["process_open_fds"], mt["go_goroutines"])
		if c == 2*readers {
			early = mt
		}
		if c == cycles {
			checkSoakEnd(t, early, mt, report, cycles, removed)
		}
	}

	if err := os.WriteFile(filepath.Join(m.Share, "stop"), nil, 0o644); err != nil {
		t.Fatal(err)
	}
	r, err := w.Wait(3 * time.Minute)
	if err != nil {
		t.Fatalf("station: %v\n%s", err, r)
	}
	t.Logf("station (%d cycles, %d unplugged mid-write, %v):\n%s", cycles, removed, time.Since(start).Round(time.Second), tail(all(r), 3000))
	if strings.Contains(r.Stdout, "stopped on its own") {
		t.Error("the station stopped before SIGTERM")
	}
	// Cards unplugged mid-write failed: some succeeded, some failed.
	wantCode(t, r, 7, "a station stopped by SIGTERM after cards unplugged mid-write")
}

// checkSoakEnd holds the station's resources after the last round to
// those after the second, and its /metrics to its report.
func checkSoakEnd(t *testing.T, early, late map[string]float64, report string, cycles, removed int) {
	t.Helper()
	const imageBytes = float64(soakImage)
	if rss := late["process_resident_memory_bytes"]; rss > 1.1*early["process_resident_memory_bytes"] {
		t.Errorf("RSS grew from %.1f MiB after 8 cycles to %.1f MiB after %d", early["process_resident_memory_bytes"]/(1<<20), rss/(1<<20), cycles)
	}
	for _, name := range []string{"process_open_fds", "go_goroutines"} {
		if late[name] > early[name] {
			t.Errorf("%s grew from %v after 8 cycles to %v after %d", name, early[name], late[name], cycles)
		}
	}
	b, err := os.ReadFile(report)
	if err != nil {
		t.Fatal(err)
	}
	var rep struct{ Cards []soakRecord }
	if err := json.Unmarshal(b, &rep); err != nil {
		t.Fatal(err)
	}
	count := map[string]float64{}
	for _, c := range rep.Cards {
		count[c.Result]++
	}
	for _, c := range []struct {
		what      string
		got, want float64
	}{
		{"report: cards", float64(len(rep.Cards)), float64(cycles)},
		{"report: removed", count["removed"], float64(removed)},
		{"report: ok", count["ok"], float64(cycles - removed)},
		{"usbflash_cards_started_total", late["usbflash_cards_started_total"], float64(len(rep.Cards))},
		{`usbflash_cards_finished_total{result="ok"}`, late[`usbflash_cards_finished_total{result="ok"}`], count["ok"]},
		{`usbflash_cards_finished_total{result="removed"}`, late[`usbflash_cards_finished_total{result="removed"}`], count["removed"]},
		{"usbflash_written_bytes_total, at least the cards written", min(late["usbflash_written_bytes_total"], count["ok"]*imageBytes), count["ok"] * imageBytes},
		{"usbflash_verified_bytes_total", late["usbflash_verified_bytes_total"], count["ok"] * imageBytes},
	} {
		if c.got != c.want {
			t.Errorf("%s: %v, want %v", c.what, c.got, c.want)
		}
	}
}

// waitRecord waits until the report holds the record of the reader with
// USB serial serial.
func waitRecord(t *testing.T, path, serial string, p *Pending, timeout time.Duration) soakRecord {
	t.Helper()
	deadline := time.Now().Add(timeout)
	for {
		var rep struct{ Cards []soakRecord }
		if b, err := os.ReadFile(path); err == nil && json.Unmarshal(b, &rep) == nil {
			for _, c := range rep.Cards {
				if c.Serial == serial {
					return c
				}
			}
		}
		if p.Done() {
			o, e := p.Output()
			t.Fatalf("the station stopped before %s was recorded:\n%s\n%s", serial, o, e)
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s was not recorded within %v", serial, timeout)
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// parseMetrics reads the Prometheus text format: each sample by its name
// and labels as written, but for the station label (--station soak).
func parseMetrics(text string) map[string]float64 {
	text = strings.NewReplacer(`{station="soak"}`, "", `station="soak",`, "", `,station="soak"`, "").Replace(text)
	out := map[string]float64{}
	sc := bufio.NewScanner(strings.NewReader(text))
	for sc.Scan() {
		line := sc.Text()
		if line == "" || line[0] == '#' {
			continue
		}
		i := strings.LastIndexByte(line, ' ')
		if i < 0 {
			continue
		}
		if v, err := strconv.ParseFloat(line[i+1:], 64); err == nil {
			out[line[:i]] = v
		}
	}
	return out
}
