//go:build e2e

package e2e

import (
	"bufio"
	"encoding/json"
	"fmt"
	"maps"
	"os"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"
)

// uasTarget names a QEMU usb-uas reader (46f4:0003) by serial.
func uasTarget(serial string) string { return "usb:" + qemuVID + ":0003:" + serial }

// envInt is the positive integer in the environment variable name, or def
// when it is not set.
func envInt(t *testing.T, name string, def int) int {
	t.Helper()
	v := os.Getenv(name)
	if v == "" {
		return def
	}
	n, err := strconv.Atoi(v)
	if err != nil || n < 1 {
		t.Fatalf("%s=%q: want a positive integer", name, v)
	}
	return n
}

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
// LUN; check finds the second LUN genuine and leaves it as it was;
// --transport bot is refused for a UAS-only reader. Then 96 MiB from
// guest RAM is written to the UAS and the BOT reader on xHCI, at 1 MiB and
// 4 MiB transfers, and the rates are logged (RATE lines).
func TestUAS(t *testing.T) {
	// USBFLASH_UAS_MIB and USBFLASH_UAS_ROUNDS size the speed runs (96 MiB,
	// 3 rounds in CI; the table takes 384 MiB): the guest's RAM
	// grows with the image, which it holds in /tmp.
	big, rounds := envInt(t, "USBFLASH_UAS_MIB", 96)<<20, envInt(t, "USBFLASH_UAS_ROUNDS", 3)
	x0, x1, x2 := newCard(t, int64(big)+(8<<20)), newCard(t, 16<<20), newCard(t, 16<<20)
	e0, b0, be := newCard(t, int64(big)+(8<<20)), newCard(t, int64(big)+(8<<20)), newCard(t, int64(big)+(8<<20))
	m := boot(t, MachineSpec{Controller: XHCI, MemMB: max(1024, 3*big>>20), QMP: true, Readers: []Reader{
		// LUN 2 fails writes at writeFaultSector (blkdebug EIO).
		{Serial: "UASX", UAS: true, LUNs: []LUN{{Backing: x0}, {Backing: x1}, {Backing: x2, Fault: &Fault{Sector: writeFaultSector}}}},
		{ID: "uase", Serial: "UASE", UAS: true, Controller: EHCI, LUNs: []LUN{{Backing: e0}}},
		{Serial: "BOTX", LUNs: []LUN{{Backing: b0}}},
		{Serial: "BOTE", Controller: EHCI, LUNs: []LUN{{Backing: be}}},
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
		}{"UASX": {3, "UAS", true}, "UASE": {1, "UAS", false}, "BOTX": {1, "BOT", false}, "BOTE": {1, "BOT", false}}[d.Serial]
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
	for _, s := range []string{"UASX", "UASE", "BOTX", "BOTE"} {
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
	// read gives the written card back, byte for byte, over UAS.
	readImg := makeImage(301, 6<<20+3*512)
	r = usbflash(t, m, 3*time.Minute, "read", "--size", "6MiB", uasTarget("UASX")+"/1", "/tmp/back.img")
	wantCode(t, r, 0, "read over UAS")
	if r.Code == 0 {
		guest(t, m, "cp /tmp/back.img /host/img/back.img")
		checkPrefix(t, m.Share+"/img/back.img", readImg[:6<<20])
	}
	// check over UAS: the 16 MiB LUN is genuine, every block it wrote put
	// back (the image read above is still there, byte for byte).
	r = usbflash(t, m, 5*time.Minute, "check", "--json", uasTarget("UASX")+"/1")
	wantCode(t, r, 0, "check over UAS")
	if r.Code == 0 {
		if c := checkSummaryOf(t, r); c.Kind != "genuine" || c.UsableSize != 16<<20 || !c.Restored {
			t.Errorf("check over UAS: %+v, want genuine, 16 MiB usable, restored", c)
		}
		checkPrefix(t, x1, readImg[:6<<20])
	}
	// A backend write error comes back in a SENSE IU: exit 5 naming the
	// failing command's LBA range, no hang.
	pf := putImage(t, m, "fault", makeImage(6, 8<<20), "raw")
	r = usbflash(t, m, 2*time.Minute, "write", pf, uasTarget("UASX")+"/2", "--yes", "--transfer-size", "1MiB")
	wantCode(t, r, 5, "write over a failing sector, UAS")
	if !lbaIn(all(r), 4096, 6143, writeFaultSector) {
		t.Errorf("UAS write error: output names no LBA in 4096..6143 (bad sector %d)\n%s", writeFaultSector, r)
	}

	r = usbflash(t, m, time.Minute, "info", "--transport", "bot", uasTarget("UASE"))
	wantCode(t, r, 2, "info --transport bot of a UAS-only reader")
	wantText(t, r, "info --transport bot", "only UAS")

	// Write speed from guest RAM, per controller: usbflash over UAS and
	// over BOT (alternating, three rounds), then the guest kernel's uas
	// and usb-storage with dd oflag=direct (three rounds). Wall-clock
	// MB/s of the whole command; usbflash's own rate in parentheses.
	img := makeImage(400, big)
	p := putImage(t, m, "big", img, "raw")
	guest(t, m, "cp "+p+" /tmp/big.img")
	// USBFLASH_UAS_BASE_BIN, when set, is another build (the one before a
	// change) run beside this one in the same boot: rows "base ...".
	base := os.Getenv("USBFLASH_UAS_BASE_BIN")
	if base != "" {
		shipProbe(t, m, "usbflash-base", base)
		guest(t, m, "cp /host/bin/usbflash-base /bin/")
	}
	// USBFLASH_UAS_PROBE=1 adds e2e/testdata/uasprobe.c, the least a
	// userspace UAS writer without streams does per command, on EHCI:
	// the ceiling of any such writer in this emulator.
	probe := os.Getenv("USBFLASH_UAS_PROBE") == "1"
	if probe {
		shipProbe(t, m, "uasprobe", buildCProbe(t, "uasprobe"))
	}
	type method struct {
		name, ctrl, script, card string
		usbflash, probe          bool
	}
	var methods []method
	for _, ts := range []string{"1M", "4M"} {
		for _, c := range []struct{ ctrl, uas, bot, uasCard, botCard string }{
			{"xhci", uasTarget("UASX") + "/0", serialTarget("BOTX"), x0, b0},
			{"ehci", uasTarget("UASE"), serialTarget("BOTE"), e0, be},
		} {
			xs := []struct{ name, bin, flags, target, card string }{
				{"usbflash UAS qd1", "usbflash", "", c.uas, c.uasCard},
				{"usbflash UAS qd4", "usbflash", "--queue-depth 4 ", c.uas, c.uasCard},
				{"usbflash BOT", "usbflash", "", c.bot, c.botCard},
			}
			if base != "" {
				xs = append(xs, struct{ name, bin, flags, target, card string }{"base UAS qd1", "usbflash-base", "", c.uas, c.uasCard})
			}
			for _, x := range xs {
				methods = append(methods, method{name: x.name + " " + ts + "iB", ctrl: c.ctrl, card: x.card, usbflash: true,
					script: x.bin + " write --json -q --no-verify " + x.flags + "--transfer-size " + ts + "iB /tmp/big.img " + x.target + " --yes"})
			}
		}
	}
	if probe {
		for _, kib := range []int{1024, 4096} {
			methods = append(methods, method{name: fmt.Sprintf("C loop UAS %dMiB", kib>>10), ctrl: "ehci", probe: true,
				script: fmt.Sprintf("/host/bin/uasprobe %d %d", kib, big>>20)})
			methods = append(methods, method{name: fmt.Sprintf("C loop UAS + read %dMiB", kib>>10), ctrl: "ehci", probe: true,
				script: fmt.Sprintf("/host/bin/uasprobe %d %d /tmp/big.img", kib, big>>20)})
		}
	}
	for _, ts := range []string{"1M", "4M"} {
		for _, c := range []struct{ ctrl, uas, bot string }{{"xhci", "UASX", "BOTX"}, {"ehci", "UASE", "BOTE"}} {
			for _, x := range []struct{ name, serial string }{{"kernel uas + dd", c.uas}, {"kernel usb-storage + dd", c.bot}} {
				methods = append(methods, method{name: x.name + " bs=" + ts, ctrl: c.ctrl,
					script: "DEV=/dev/$(sdbyserial " + x.serial + ") || exit 99\ndd if=/tmp/big.img of=$DEV bs=" + ts + " oflag=direct conv=fsync 2>&1"})
			}
		}
	}
	// Beside MB/s each row has the command's user+system CPU seconds per
	// GiB (the shell's `times`) and, for usbflash, the seconds outside its
	// write phase (wall time less the summary's elapsed_s: the process's
	// start, the reader's open and close, the first and last commands).
	wall, own, cpu, fixed := map[string][]float64{}, map[string][]float64{}, map[string][]float64{}, map[string][]float64{}
	run := func(x method) bool {
		script := "t0=$(cut -d' ' -f1 /proc/uptime)\n" + x.script + "\nrc=$?; t1=$(cut -d' ' -f1 /proc/uptime); echo \"ELAPSED $t0 $t1\"; times; exit $rc"
		res, err := m.Run(script, 10*time.Minute)
		if err != nil || res.Code != 0 {
			t.Errorf("%s on %s: %v\n%s", x.name, x.ctrl, err, res)
			return false
		}
		key := x.ctrl + " " + x.name
		secs := elapsedOf(res.Stdout)
		if secs > 0 {
			wall[key] = append(wall[key], float64(big)/1e6/secs)
		}
		cpu[key] = append(cpu[key], childCPU(res.Stdout)/(float64(big)/(1<<30)))
		if m := ownRateRe.FindStringSubmatch(res.Stdout); x.probe && m != nil {
			rate, _ := strconv.ParseFloat(m[1], 64)
			own[key] = append(own[key], rate)
		}
		if x.usbflash {
			sum := jsonEvent(t, res, "summary")
			rate, _ := sum["rate"].(float64)
			own[key] = append(own[key], rate/1e6)
			el, _ := sum["elapsed_s"].(float64)
			fixed[key] = append(fixed[key], secs-el)
		}
		return true
	}
	for round := range rounds {
		for _, x := range methods {
			if !x.usbflash && !x.probe {
				continue
			}
			if run(x) && round == 0 && x.card != "" {
				checkPrefix(t, x.card, img)
			}
		}
	}
	guest(t, m, "loadmod usb-storage sd_mod uas && sdbyserial UASX && sdbyserial UASE && sdbyserial BOTX && sdbyserial BOTE")
	for range rounds {
		for _, x := range methods {
			if !x.usbflash && !x.probe {
				run(x)
			}
		}
	}
	// The fixed cost of a command, per UAS reader: the process alone
	// (version), and the process with the reader's open, identification
	// and close (info), wall and CPU seconds, median of the rounds.
	fixedRuns := map[string][][2]float64{}
	for range rounds {
		for _, f := range []struct{ name, script string }{
			{"version", "usbflash version >/dev/null"},
			{"info xhci UAS", "usbflash info " + uasTarget("UASX") + "/0 >/dev/null"},
			{"info ehci UAS", "usbflash info " + uasTarget("UASE") + " >/dev/null"},
			{"info xhci BOT", "usbflash info " + serialTarget("BOTX") + " >/dev/null"},
		} {
			res, err := m.Run("t0=$(cut -d' ' -f1 /proc/uptime)\n"+f.script+"\nrc=$?; t1=$(cut -d' ' -f1 /proc/uptime); echo \"ELAPSED $t0 $t1\"; times; exit $rc", 2*time.Minute)
			if err != nil || res.Code != 0 {
				t.Errorf("%s: %v\n%s", f.name, err, res)
				continue
			}
			fixedRuns[f.name] = append(fixedRuns[f.name], [2]float64{elapsedOf(res.Stdout), childCPU(res.Stdout)})
		}
	}
	median := func(v []float64) float64 {
		v = slices.Clone(v)
		slices.Sort(v)
		if len(v) == 0 {
			return 0
		}
		return v[len(v)/2]
	}
	for _, name := range slices.Sorted(maps.Keys(fixedRuns)) {
		var w, c []float64
		for _, r := range fixedRuns[name] {
			w, c = append(w, r[0]), append(c, r[1])
		}
		t.Logf("FIXED %-14s median %.2f s wall, %.2f CPU s (wall %v)", name, median(w), median(c), w)
	}
	for _, x := range methods {
		key := x.ctrl + " " + x.name
		line := fmt.Sprintf("RATE %-4s %-28s median %6.1f MB/s wall %v, %.2f CPU s/GiB", x.ctrl, x.name, median(wall[key]), wall[key], median(cpu[key]))
		switch {
		case x.usbflash:
			line += fmt.Sprintf(" (own %.1f MB/s, %.2f s outside the write phase)", median(own[key]), median(fixed[key]))
		case x.probe:
			line += fmt.Sprintf(" (own %.1f MB/s)", median(own[key]))
		}
		t.Log(line)
	}

	// The UAS reader on EHCI is unplugged during a write: exit 5 naming
	// the disconnect, quickly.
	unplugTargetMidWrite(t, m, "uase", uasTarget("UASE"), "UASE", e0, 80<<20)
}
