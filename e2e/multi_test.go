//go:build e2e

package e2e

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// reportJSON is the --report file of a many-card write.
type reportJSON struct {
	Cards []struct {
		Target   string `json:"target"`
		Serial   string `json:"serial"`
		Verified bool   `json:"verified"`
		Error    string `json:"error"`
		Code     int    `json:"exit_code"`
	} `json:"cards"`
}

func readReport(t *testing.T, m *Machine, guestPath string) reportJSON {
	t.Helper()
	r := guest(t, m, "cat "+guestPath)
	var rep reportJSON
	if err := json.Unmarshal([]byte(r.Stdout), &rep); err != nil {
		t.Fatalf("report %s: %v\n%s", guestPath, err, r)
	}
	return rep
}

// Many cards at once: four usb-storage readers and a two-slot usb-bot on one
// xHCI controller, one decode. One reader fails every write past sector
// 5000 (blkdebug) and one is unplugged mid-write: the others hold the image
// byte for byte, the report names the two failures, the exit code is 7.
// Then --all writes every reader that still has a card.
func TestManyCards(t *testing.T) {
	const size = 48 << 20
	cards := map[string]string{}
	for _, s := range []string{"MANY1", "MANY2", "MANYBAD", "MANYGONE", "BOT0", "BOT1"} {
		cards[s] = newCard(t, size)
	}
	m := boot(t, MachineSpec{Controller: XHCI, QMP: true, MemMB: 1024, Readers: []Reader{
		{ID: "m1", Serial: "MANY1", LUNs: []LUN{{Backing: cards["MANY1"]}}},
		{ID: "m2", Serial: "MANY2", LUNs: []LUN{{Backing: cards["MANY2"]}}},
		{ID: "m3", Serial: "MANYBAD", LUNs: []LUN{{Backing: cards["MANYBAD"], Fault: &Fault{Sector: 5000}}}},
		{ID: "m4", Serial: "MANYGONE", LUNs: []LUN{{Backing: cards["MANYGONE"]}}},
		{ID: "mb", Serial: "MANYBOT", Bot: true, LUNs: []LUN{{Backing: cards["BOT0"]}, {Backing: cards["BOT1"]}}},
	}})
	img := makeImage(21, 40<<20)
	p := putImage(t, m, "img", img, "zst")
	targets := []string{serialTarget("MANY1"), serialTarget("MANY2"), serialTarget("MANYBAD"), serialTarget("MANYGONE"),
		serialTarget("MANYBOT") + "/0", serialTarget("MANYBOT") + "/1"}
	w := m.Start("usbflash write " + p + " " + strings.Join(targets, " ") +
		" --yes --transfer-size 256KiB --report /tmp/many.json")
	waitLanded(t, cards["MANYGONE"], img, 4<<20, w, 2*time.Minute)
	if _, err := m.QMP.Exec("device_del", map[string]any{"id": "m4"}); err != nil {
		t.Fatal(err)
	}
	r, err := w.Wait(5 * time.Minute)
	if err != nil {
		t.Fatalf("many-card write: %v\n%s", err, r)
	}
	t.Logf("many-card write:\n%s", r)
	wantCode(t, r, 7, "many cards, two failing")
	for _, s := range []string{"MANY1", "MANY2", "BOT0", "BOT1"} {
		checkCard(t, cards[s], img)
	}
	rep := readReport(t, m, "/tmp/many.json")
	failed := map[string]string{}
	for _, c := range rep.Cards {
		if c.Error != "" {
			failed[c.Target] = c.Error
		} else if !c.Verified {
			t.Errorf("%s succeeded but was not verified", c.Target)
		}
	}
	if len(rep.Cards) != len(targets) || len(failed) != 2 {
		t.Fatalf("report: %d cards, failed %q", len(rep.Cards), failed)
	}
	for target, msg := range failed {
		switch {
		case strings.Contains(target, "MANYBAD"):
			if !lbaIn(msg, 4096, 6143, -1) && !strings.Contains(msg, "LBA") {
				t.Errorf("the failing reader's error names no LBA: %s", msg)
			}
		case strings.Contains(target, "MANYGONE"):
		default:
			t.Errorf("unexpected failure %s: %s", target, msg)
		}
	}

	// --all: every reader that holds a card, MANYGONE is gone; MANYBAD still
	// fails, the others get the second image.
	img2 := makeImage(22, 8<<20)
	p2 := putImage(t, m, "img2", img2, "raw")
	r = usbflash(t, m, 5*time.Minute, "write", p2, "--all", "--yes", "--report", "/tmp/all.json")
	t.Logf("--all:\n%s", r)
	wantCode(t, r, 7, "--all with the failing reader among them")
	for _, s := range []string{"MANY1", "MANY2", "BOT0", "BOT1"} {
		checkPrefix(t, cards[s], img2) // the first image is still there after it
	}
	if rep := readReport(t, m, "/tmp/all.json"); len(rep.Cards) != 5 {
		t.Errorf("--all wrote %d cards, want 5", len(rep.Cards))
	}
}

// --watch: a reader hot-plugged through QMP device_add gets written, and so
// does a medium inserted into an empty slot; Ctrl-C ends the watch with the
// report of both.
func TestWatch(t *testing.T) {
	hot, slot := newCard(t, 16<<20), newCard(t, 16<<20)
	m := boot(t, MachineSpec{Controller: XHCI, QMP: true, MemMB: 1024, Readers: []Reader{
		{ID: "wt", Serial: "WATCHSLOT", Bot: true, LUNs: []LUN{{Backing: slot, Removable: true}}},
	}})
	// The slot starts empty: scsi-hd needs a drive to start with, so take
	// its medium out before usbflash runs.
	for _, cmd := range []string{"blockdev-open-tray", "blockdev-remove-medium"} {
		args := map[string]any{"id": "wt-l0"}
		if cmd == "blockdev-open-tray" {
			args["force"] = true
		}
		if _, err := m.QMP.Exec(cmd, args); err != nil {
			t.Fatal(err)
		}
	}
	img := makeImage(23, 6<<20)
	p := putImage(t, m, "img", img, "raw")
	report := filepath.Join(m.Share, "watch.json")
	w := m.Start(`usbflash write ` + p + ` --watch --yes --report /host/watch.json >/tmp/w.out 2>&1 & pid=$!
while [ ! -e /host/stop ] && kill -0 $pid 2>/dev/null; do usleep 50000; done
kill -INT $pid; wait $pid; rc=$?; cat /tmp/w.out; exit $rc`)
	time.Sleep(3 * time.Second) // the watcher holds the empty reader

	if _, err := m.QMP.Exec("blockdev-change-medium", map[string]any{"id": "wt-l0", "filename": slot, "format": "raw"}); err != nil {
		t.Fatal(err)
	}
	waitReport(t, report, 1, w, 2*time.Minute)

	if _, err := m.QMP.Exec("blockdev-add", map[string]any{"driver": "raw", "node-name": "hotd",
		"file": map[string]any{"driver": "file", "filename": hot}}); err != nil {
		t.Fatal(err)
	}
	if _, err := m.QMP.Exec("device_add", map[string]any{"driver": "usb-storage", "id": "hot", "bus": "xhci.0",
		"drive": "hotd", "serial": "WATCHHOT"}); err != nil {
		t.Fatal(err)
	}
	waitReport(t, report, 2, w, 2*time.Minute)
	time.Sleep(3 * time.Second) // a card that stays in is not written again: give it a few scans

	os.WriteFile(filepath.Join(m.Share, "stop"), nil, 0o644)
	r, err := w.Wait(2 * time.Minute)
	if err != nil {
		t.Fatalf("watch: %v\n%s", err, r)
	}
	t.Logf("watch:\n%s", r)
	wantCode(t, r, 0, "watch ended by Ctrl-C after two good cards")
	checkCard(t, slot, img)
	checkCard(t, hot, img)
	rep := waitReport(t, report, 2, w, time.Second)
	if len(rep.Cards) != 2 {
		t.Errorf("watch report has %d cards, want 2 (each card once)", len(rep.Cards))
	}
}

// waitReport waits until the --report file on the host names n cards.
func waitReport(t *testing.T, path string, n int, p *Pending, timeout time.Duration) reportJSON {
	t.Helper()
	deadline := time.Now().Add(timeout)
	for {
		var rep reportJSON
		if b, err := os.ReadFile(path); err == nil && json.Unmarshal(b, &rep) == nil && len(rep.Cards) >= n {
			return rep
		}
		if p.Done() && n > 0 {
			o, e := p.Output()
			t.Fatalf("watch ended before %d cards were written:\n%s\n%s", n, o, e)
		}
		if time.Now().After(deadline) {
			t.Fatalf("the report did not name %d cards within %v", n, timeout)
		}
		time.Sleep(100 * time.Millisecond)
	}
}
