//go:build e2e

package e2e

import (
	"bufio"
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"
)

// uasTarget names a QEMU usb-uas reader (46f4:0003) by serial.
func uasTarget(serial string) string { return "usb:" + qemuVID + ":0003:" + serial }

// jsonEvent is the last event of that name a --json command printed.
func jsonEvent(t *testing.T, r Result, name string) map[string]any {
	t.Helper()
	var last map[string]any
	sc := bufio.NewScanner(strings.NewReader(r.Stdout))
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	for sc.Scan() {
		var e map[string]any
		if json.Unmarshal(sc.Bytes(), &e) == nil && e["event"] == name {
			last = e
		}
	}
	if last == nil {
		t.Fatalf("no %s event in\n%s", name, r)
	}
	return last
}

// Scenario: USB Attached SCSI. One boot holds QEMU's usb-uas on qemu-xhci
// (SuperSpeed: bulk streams) with two LUNs, usb-uas on usb-ehci (high
// speed: READ/WRITE READY IUs, no streams), and a usb-storage (BOT) reader
// on qemu-xhci beside them. list sees both UAS readers as supported and
// says how each is driven; write and verify are byte for byte on every
// LUN; --transport bot is refused for a UAS-only reader. Then 96 MiB from
// guest RAM is written to the UAS and the BOT reader on xHCI, at 1 MiB and
// 4 MiB transfers, and the rates are logged (RATE lines).
func TestUAS(t *testing.T) {
	const big = 96 << 20
	x0, x1 := newCard(t, big+(8<<20)), newCard(t, 16<<20)
	e0, b0 := newCard(t, 64<<20), newCard(t, big+(8<<20))
	m := boot(t, MachineSpec{Controller: XHCI, MemMB: 1024, QMP: true, Readers: []Reader{
		{Serial: "UASX", UAS: true, LUNs: []LUN{{Backing: x0}, {Backing: x1}}},
		{ID: "uase", Serial: "UASE", UAS: true, Controller: EHCI, LUNs: []LUN{{Backing: e0}}},
		{Serial: "BOTX", LUNs: []LUN{{Backing: b0}}},
	}})

	r := usbflash(t, m, 2*time.Minute, "list", "--json")
	wantCode(t, r, 0, "list --json")
	var l struct {
		Devices []struct {
			Serial    string `json:"serial"`
			PID       string `json:"pid"`
			Speed     string `json:"speed"`
			Supported bool   `json:"supported"`
			Reason    string `json:"reason"`
			LUNs      []struct {
				Blocks     int64  `json:"blocks"`
				Transport  string `json:"transport"`
				UASStreams int    `json:"uas_streams"`
			} `json:"luns"`
		} `json:"devices"`
	}
	if err := json.Unmarshal([]byte(r.Stdout), &l); err != nil {
		t.Fatalf("list --json: %v\n%s", err, r)
	}
	seen := map[string]bool{}
	for _, d := range l.Devices {
		seen[d.Serial] = true
		want := map[string]struct {
			luns      int
			transport string
			streams   bool
		}{"UASX": {2, "UAS", true}, "UASE": {1, "UAS", false}, "BOTX": {1, "BOT", false}}[d.Serial]
		if !d.Supported || len(d.LUNs) != want.luns {
			t.Errorf("list: %s supported %v (%s), %d LUNs; want supported, %d LUNs", d.Serial, d.Supported, d.Reason, len(d.LUNs), want.luns)
			continue
		}
		for i, lun := range d.LUNs {
			if lun.Transport != want.transport || (lun.UASStreams > 0) != want.streams {
				t.Errorf("list: %s LUN %d driven by %s with %d streams; want %s, streams %v (%s)", d.Serial, i, lun.Transport, lun.UASStreams, want.transport, want.streams, d.Speed)
			}
		}
		if d.Serial == "UASX" && d.LUNs[1].Blocks != 16<<20/512 {
			t.Errorf("list: UASX LUN 1 has %d blocks, want %d", d.LUNs[1].Blocks, 16<<20/512)
		}
	}
	for _, s := range []string{"UASX", "UASE", "BOTX"} {
		if !seen[s] {
			t.Errorf("list: no reader %s\n%s", s, r)
		}
	}

	// Write and verify every UAS LUN, byte for byte.
	for i, c := range []struct {
		target, card string
		streams      bool
	}{
		{uasTarget("UASX") + "/0", x0, true},
		{uasTarget("UASX") + "/1", x1, true},
		{uasTarget("UASE"), e0, false},
	} {
		img := makeImage(int64(300+i), 6<<20+3*512)
		p := putImage(t, m, fmt.Sprintf("u%d", i), img, "gz")
		r := usbflash(t, m, 5*time.Minute, "write", "--json", p, c.target, "--yes")
		wantCode(t, r, 0, "write "+c.target)
		if r.Code != 0 {
			continue
		}
		d := jsonEvent(t, r, "device")
		if d["transport"] != "UAS" || (d["uas_streams"] != nil) != c.streams {
			t.Errorf("write %s: device event %v; want UAS, streams %v", c.target, d, c.streams)
		}
		checkCard(t, c.card, img)
		r = usbflash(t, m, 5*time.Minute, "verify", p, c.target)
		wantCode(t, r, 0, "verify "+c.target)
	}
	r = usbflash(t, m, time.Minute, "info", "--transport", "bot", uasTarget("UASE"))
	wantCode(t, r, 2, "info --transport bot of a UAS-only reader")
	wantText(t, r, "info --transport bot", "only UAS")

	// Write speed, UAS against BOT, same controller, same boot, from RAM,
	// alternating, three rounds each.
	img := makeImage(400, big)
	p := putImage(t, m, "big", img, "raw")
	guest(t, m, "cp "+p+" /tmp/big.img")
	for _, ts := range []string{"1MiB", "4MiB"} {
		rates := map[string][]float64{}
		for round := range 3 {
			for _, c := range []struct{ name, target, card string }{
				{"UAS", uasTarget("UASX") + "/0", x0},
				{"BOT", serialTarget("BOTX"), b0},
			} {
				r := usbflash(t, m, 10*time.Minute, "write", "--json", "-q", "--no-verify", "--transfer-size", ts, "/tmp/big.img", c.target, "--yes")
				wantCode(t, r, 0, "write 96 MiB "+c.name+" "+ts)
				if r.Code != 0 {
					continue
				}
				s := jsonEvent(t, r, "summary")
				rate, _ := s["rate"].(float64)
				rates[c.name] = append(rates[c.name], rate/1e6)
				if round == 0 {
					checkPrefix(t, c.card, img)
				}
			}
		}
		for _, name := range []string{"UAS", "BOT"} {
			v := slices.Clone(rates[name])
			slices.Sort(v)
			if len(v) == 3 {
				t.Logf("RATE xhci %s transfer %s: median %.1f MB/s (rounds %.1f)", name, ts, v[1], rates[name])
			}
		}
	}

	// The UAS reader on EHCI is unplugged during a write: exit 5 naming
	// the disconnect, quickly.
	unplugTargetMidWrite(t, m, "uase", uasTarget("UASE"), "UASE", e0, 48<<20)
}
