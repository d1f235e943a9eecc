//go:build e2e

package e2e

import (
	"cmp"
	"encoding/json"
	"fmt"
	"os"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"
)

// TestSlowHostAB compares usbflash builds in one boot of the slow host
// (the one-vCPU TCG guest), taking turns write by write so that a shared
// host's load falls on all of them alike, and says where each write's time
// went, from its --json events. Issue 21's harness (TestSlowHostBench)
// runs every method three times; this runs a few builds many times (each
// write's bytes checked on the card's backing file, as there), which
// the guest's spread (a third between runs of one binary) needs before a
// change of 5-10% shows.
//
//	USBFLASH_E2E_AB             "label=path label=path ...": the builds, for the guest's
//	                            architecture (default: the one under test, "usbflash")
//	USBFLASH_E2E_AB_ARCH        amd64 (default) or arm64
//	USBFLASH_E2E_AB_CONTROLLER  xhci (default) or ehci
//	USBFLASH_E2E_AB_MIB         image sizes in MiB, comma-separated (default 96,384)
//	USBFLASH_E2E_AB_FLAGS       write's flags (default --no-verify; --no-verify=false verifies)
//	USBFLASH_E2E_BENCH_ROUNDS   rounds after an untimed first one (default 6)
//	USBFLASH_E2E_AB_PRE         shell the guest runs once before the rounds
//
// Each line: guest wall seconds (mean, median, every round), the command's
// CPU seconds, its context switches (busybox time -v), the guest's
// (/proc/stat), its minor faults, and its own counts per command (the
// --json summary's cost: the backend's system calls and waits), then the
// means of the parts: outside the start and summary
// events (process start, flags, the image opened; handing the reader back,
// exit), start to the device event (finding the reader, taking it from
// usb-storage, the first commands), to the write phase (buffers), the
// write, SYNCHRONIZE CACHE, and the verify. Opt-in: `make
// bench-slowhost-ab` or -run SlowHostAB.
func TestSlowHostAB(t *testing.T) {
	optIn(t, "SlowHostAB", "USBFLASH_E2E_BENCH_AB")
	arch := ArchAMD64
	if os.Getenv("USBFLASH_E2E_AB_ARCH") == "arm64" {
		arch = ArchARM64
	}
	ctl := XHCI
	if os.Getenv("USBFLASH_E2E_AB_CONTROLLER") == "ehci" {
		ctl = EHCI
	}
	rounds := 6
	if v, err := strconv.Atoi(os.Getenv("USBFLASH_E2E_BENCH_ROUNDS")); err == nil && v > 0 {
		rounds = v
	}
	flags := cmp.Or(os.Getenv("USBFLASH_E2E_AB_FLAGS"), "--no-verify")
	sizes := []int{96, 384}
	if v := os.Getenv("USBFLASH_E2E_AB_MIB"); v != "" {
		sizes = nil
		for _, f := range strings.Split(v, ",") {
			mib, err := strconv.Atoi(strings.TrimSpace(f))
			if err != nil || mib <= 0 {
				t.Fatalf("USBFLASH_E2E_AB_MIB=%q: want sizes in MiB, as in 96,384", v)
			}
			sizes = append(sizes, mib)
		}
	}
	type build struct{ label, path string }
	var builds []build
	for _, f := range strings.Fields(os.Getenv("USBFLASH_E2E_AB")) {
		label, path, ok := strings.Cut(f, "=")
		if !ok || label == "" || path == "" {
			t.Fatalf("USBFLASH_E2E_AB: %q is not label=path", f)
		}
		checkELFArch(t, path, arch)
		builds = append(builds, build{label, path})
	}

	e := setupArch(t, arch)
	needBinary(t, e)
	largest := slices.Max(sizes)
	card := newCard(t, int64(largest+16)<<20)
	total := 0
	for _, mib := range sizes {
		total += mib
	}
	m := bootEnv(t, e, MachineSpec{Controller: ctl, MemMB: 768 + total,
		Readers: []Reader{{Serial: "SLOWAB", LUNs: []LUN{{Backing: card}}}}})
	if len(builds) == 0 {
		builds = []build{{"usbflash", ""}}
	}
	for i, b := range builds {
		if b.path != "" {
			name := fmt.Sprintf("usbflash-ab%d", i)
			shipProbe(t, m, name, b.path)
			guest(t, m, "cp /host/bin/"+name+" /bin/")
		}
	}
	huge := tmpfsHuge(t, m)
	imgs := map[int][]byte{}
	for _, mib := range sizes {
		imgs[mib] = makeImage(int64(mib), mib<<20)
		p := putImage(t, m, fmt.Sprintf("ab%d.img", mib), imgs[mib], "raw")
		guest(t, m, fmt.Sprintf("cp %s /tmp/ab%d.img && rm %s", p, mib, p))
	}
	guest(t, m, "loadmod usb-storage sd_mod")
	if pre := os.Getenv("USBFLASH_E2E_AB_PRE"); pre != "" {
		// What the guest does before the runs (a state to compare in).
		t.Logf("before the runs: %s\n%s", pre, guest(t, m, pre).Stdout)
	}
	tgt := serialTarget("SLOWAB")

	type runs struct {
		wall, cpu []float64
		parts     [len(abParts)]float64 // sums
		cost      costs
	}
	res := map[string]*runs{}
	key := func(b build, mib int) string { return fmt.Sprintf("%s %d MiB", b.label, mib) }
	for r := 0; r <= rounds; r++ {
		for _, mib := range sizes {
			for i, b := range builds {
				bin := "usbflash"
				if b.path != "" {
					bin = fmt.Sprintf("usbflash-ab%d", i)
				}
				// As in TestSlowHostBench: the kernel has its disk back
				// from the last run before this one takes it.
				guest(t, m, "i=0; while ! sdbyserial SLOWAB >/dev/null 2>&1 && [ $i -lt 50 ]; do sleep 0.1; i=$((i+1)); done; sleep 1")
				script := costScript("", fmt.Sprintf("%s write --yes --json /tmp/ab%d.img %s %s", bin, mib, tgt, flags), "") + "exit $rc"
				out, err := m.Run(script, 15*time.Minute)
				if err != nil || out.Code != 0 {
					t.Fatalf("%s: %v\n%s", key(b, mib), err, out)
				}
				// A build that is fast because it writes the wrong bytes
				// is no result: the card holds the image after each run.
				checkPrefix(t, card, imgs[mib])
				if r == 0 {
					continue // the first round warms the guest up
				}
				cost, err := parseCost(out.Stdout)
				if err != nil {
					t.Fatalf("%s: %v\n%s", key(b, mib), err, out)
				}
				parts, err := abSplit(out.Stdout, cost.wall)
				if err != nil {
					t.Fatalf("%s: %v\n%s", key(b, mib), err, out)
				}
				x := res[key(b, mib)]
				if x == nil {
					x = &runs{}
					res[key(b, mib)] = x
				}
				x.wall = append(x.wall, cost.wall)
				x.cpu = append(x.cpu, cost.user+cost.sys)
				x.cost.add(cost)
				for i, p := range parts {
					x.parts[i] += p
				}
			}
		}
	}
	var report strings.Builder
	fmt.Fprintf(&report, "\n### %s %s, %s, %d rounds (guest seconds; parts are means) %s\n\n", arch.Name, ctl, flags, rounds, huge)
	fmt.Fprintf(&report, "| build | mean | median | CPU | switches | guest switches | minor faults | syscalls/command | waits/command | %s | rounds |\n|---|---|---|---|---|---|---|---|---|%s---|\n",
		strings.Join(abParts[:], " | "), strings.Repeat("---|", len(abParts)))
	for _, mib := range sizes {
		for _, b := range builds {
			x := res[key(b, mib)]
			n := float64(len(x.wall))
			sorted := slices.Clone(x.wall)
			slices.Sort(sorted)
			var each []string
			for _, w := range x.wall {
				each = append(each, fmt.Sprintf("%.2f", w))
			}
			c := &x.cost
			perCmd, waits := "-", "-"
			if c.ioRuns > 0 && c.commands > 0 {
				perCmd = fmt.Sprintf("%.1f", float64(c.ioSyscalls)/float64(c.commands))
				waits = fmt.Sprintf("%.2f", float64(c.waits)/float64(c.commands))
			}
			fmt.Fprintf(&report, "| %s | %.2f | %.2f | %.2f | %.0f | %.0f | %.0f | %s | %s |", key(b, mib), mean(x.wall), sorted[len(sorted)/2], mean(x.cpu),
				float64(c.switches)/n, float64(c.sysSwitches)/n, float64(c.minFaults)/n, perCmd, waits)
			for _, p := range x.parts {
				fmt.Fprintf(&report, " %.3f |", p/n)
			}
			fmt.Fprintf(&report, " %s |\n", strings.Join(each, " "))
		}
	}
	fmt.Print(report.String())
	t.Log(report.String())
}

// abParts names the parts of a write abSplit measures.
var abParts = [...]string{"outside", "to device", "to write", "write", "sync", "verify"}

// abSplit splits a write's wall seconds into abParts from its --json
// events (the first of each kind; a phase event by its phase).
func abSplit(out string, wall float64) ([len(abParts)]float64, error) {
	var parts [len(abParts)]float64
	at := map[string]float64{}
	for _, l := range strings.Split(out, "\n") {
		var ev struct{ Event, Phase, Time string }
		if !strings.HasPrefix(l, "{") || json.Unmarshal([]byte(l), &ev) != nil {
			continue
		}
		ts, err := time.Parse(time.RFC3339Nano, ev.Time)
		if err != nil {
			return parts, fmt.Errorf("event time %q: %v", ev.Time, err)
		}
		name := ev.Event
		if name == "phase" {
			name = ev.Phase
		}
		if _, seen := at[name]; !seen {
			at[name] = float64(ts.UnixNano()) / 1e9
		}
	}
	for _, need := range []string{"start", "device", "write", "sync", "summary"} {
		if _, ok := at[need]; !ok {
			return parts, fmt.Errorf("no %s event", need)
		}
	}
	syncEnd := at["summary"]
	if v, ok := at["verify"]; ok {
		syncEnd = v
		parts[5] = at["summary"] - v
	}
	parts[1] = at["device"] - at["start"]
	parts[2] = at["write"] - at["device"]
	parts[3] = at["sync"] - at["write"]
	parts[4] = syncEnd - at["sync"]
	// The events' clock is not the one wall was read from (the guest's
	// uptime), so what lies outside start..summary is one part.
	parts[0] = wall - (at["summary"] - at["start"])
	return parts, nil
}

// mean is the arithmetic mean of v.
func mean(v []float64) float64 {
	var s float64
	for _, x := range v {
		s += x
	}
	return s / float64(len(v))
}
