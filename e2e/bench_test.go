//go:build e2e

package e2e

import (
	"flag"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"
)

// TestBenchE2E compares, in one boot per controller, on the same emulated
// reader and the same image, usbflash against writing through the guest
// kernel's usb-storage with dd. It runs only when asked for by name
// (`-run BenchE2E`, as `make bench-e2e` does) or with USBFLASH_E2E_BENCH=1.
//
// Under TCG the numbers measure the emulation (CPU-bound, one vCPU), not a
// USB bus: QEMU completes every command at once. What carries over to
// hardware is the per-command overhead and the pipe/page-cache effects.
//
// The device-side rows write a zero image from memory without reading or
// decoding anything: e2e/devbench through usbms and this backend with
// AllocBuffers, and e2e/testdata/zcprobe.c, the bare synchronous C loop
// over libusb, built on the host and shipped like usbflash. (own) is then
// the rate the program reports for its write loop.
var (
	wroteRe      = regexp.MustCompile(`Wrote [^\n]* in ([0-9hmsµun.]+) \(`)
	bottleneckRe = regexp.MustCompile(`Bottleneck: ([^\n]*)`)
	// ownRateRe is devbench's, zcprobe's and uasprobe's own rate.
	ownRateRe = regexp.MustCompile(`(?m)^(?:DEVBENCH|ZC|UASZC) .*: ([0-9.]+) MB/s`)
	// timesRe is a line of the shell's `times`: user and system time; the
	// last one is the children's.
	timesRe = regexp.MustCompile(`(?m)^(\d+)m([0-9.]+)s (\d+)m([0-9.]+)s$`)
	kindRe  = regexp.MustCompile(`kind="([^"]*)"`)
)

// childCPU is the user+system seconds of the last `times` line in out.
func childCPU(out string) float64 {
	ms := timesRe.FindAllStringSubmatch(out, -1)
	if len(ms) == 0 {
		return 0
	}
	m := ms[len(ms)-1]
	f := func(s string) float64 { v, _ := strconv.ParseFloat(s, 64); return v }
	return 60*f(m[1]) + f(m[2]) + 60*f(m[3]) + f(m[4])
}

// elapsedOf is the seconds between the two /proc/uptime readings of a
// script's "ELAPSED t0 t1" line (0: none).
func elapsedOf(out string) float64 {
	for _, l := range strings.Split(out, "\n") {
		if f := strings.Fields(l); len(f) == 3 && f[0] == "ELAPSED" {
			t0, _ := strconv.ParseFloat(f[1], 64)
			t1, _ := strconv.ParseFloat(f[2], 64)
			return max(t1-t0, 0)
		}
	}
	return 0
}

// buildCProbe compiles e2e/testdata/name.c (a C loop over libusb) on the
// host.
func buildCProbe(t *testing.T, name string) string {
	t.Helper()
	bin := filepath.Join(t.TempDir(), name)
	out, err := exec.Command("gcc", "-O2", "-o", bin, filepath.Join(moduleRoot(), "e2e", "testdata", name+".c"), "-lusb-1.0").CombinedOutput()
	if err != nil {
		skipOrFail(t, "%s.c does not build: %v\n%s", name, err, out)
	}
	return bin
}

func TestBenchE2E(t *testing.T) {
	optIn(t, "Bench", "USBFLASH_E2E_BENCH")
	mb := 48
	if v, err := strconv.Atoi(os.Getenv("USBFLASH_E2E_BENCH_MB")); err == nil && v > 0 {
		mb = v
	}
	img := makeImage(77, mb<<20)
	devbench, zcprobe := buildProbe(t, "devbench"), buildCProbe(t, "zcprobe")
	type row struct {
		name   string
		script string
		mbps   map[Controller]float64 // wall clock in the guest, process start to exit
		own    map[Controller]float64 // the program's own rate for its write phase
		cpu    map[Controller]float64 // user+system s/GiB of the whole command
		note   map[Controller]string
	}
	var rows []*row
	add := func(name, script string) {
		rows = append(rows, &row{name: name, script: script, mbps: map[Controller]float64{}, own: map[Controller]float64{},
			cpu: map[Controller]float64{}, note: map[Controller]string{}})
	}
	tgt := serialTarget("BENCH1")
	// Kernel path first: usbflash detaches usb-storage from the reader.
	add("dd bs=1M conv=fsync", "dd if=/tmp/b.img of=$DEV bs=1M conv=fsync 2>/dev/null")
	add("dd bs=1M oflag=direct", "dd if=/tmp/b.img of=$DEV bs=1M oflag=direct 2>/dev/null")
	add("dd bs=4M oflag=direct", "dd if=/tmp/b.img of=$DEV bs=4M oflag=direct 2>/dev/null")
	add("zcat .gz | dd bs=1M conv=fsync", "zcat /tmp/b.img.gz | dd of=$DEV bs=1M conv=fsync 2>/dev/null")
	add("usbflash (defaults)", "usbflash write /tmp/b.img "+tgt+" --yes --no-verify")
	add("usbflash .gz (defaults)", "usbflash write /tmp/b.img.gz "+tgt+" --yes --no-verify")
	for _, ts := range []string{"64KiB", "1MiB", "4MiB", "8MiB", "16MiB", "32MiB"} {
		add("usbflash --transfer-size "+ts, "usbflash write /tmp/b.img "+tgt+" --yes --no-verify --transfer-size "+ts)
	}
	// The device side alone, a zero image from memory.
	for _, x := range []int{1, 4, 8} {
		add(fmt.Sprintf("device side: usbms %d MiB", x), fmt.Sprintf("/host/bin/devbench -serial BENCH1 -mib %d -xfer %d", mb, x))
	}
	for _, x := range []int{1, 4} {
		add(fmt.Sprintf("device side: C loop devmem %d MiB", x), fmt.Sprintf("/host/bin/zcprobe devmem %d %d", x<<10, mb))
	}
	add("device side: C loop malloc 1 MiB", fmt.Sprintf("/host/bin/zcprobe malloc 1024 %d", mb))
	boots := map[Controller]time.Duration{}
	for _, c := range []Controller{EHCI, XHCI} {
		t.Run(string(c), func(t *testing.T) {
			card := newCard(t, int64(mb+16)<<20)
			m := boot(t, MachineSpec{Controller: c, MemMB: 512 + 3*mb, Readers: []Reader{{Serial: "BENCH1", LUNs: []LUN{{Backing: card}}}}})
			boots[c] = m.Booted
			shipProbe(t, m, "devbench", devbench)
			shipProbe(t, m, "zcprobe", zcprobe)
			p := putImage(t, m, "b.img", img, "raw")
			pgz := putImage(t, m, "b.img", img, "gz")
			guest(t, m, fmt.Sprintf("cp %s /tmp/b.img && cp %s /tmp/b.img.gz && loadmod usb-storage sd_mod", p, pgz))
			for _, r := range rows {
				script := `t0=$(cut -d' ' -f1 /proc/uptime)
DEV=/dev/$(sdbyserial BENCH1) || exit 99
` + r.script + `
rc=$?; t1=$(cut -d' ' -f1 /proc/uptime); echo "ELAPSED $t0 $t1"; times; exit $rc`
				if !strings.HasPrefix(r.script, "dd") && !strings.HasPrefix(r.script, "zcat") {
					script = "t0=$(cut -d' ' -f1 /proc/uptime)\ntimeout 600 " + r.script + "\nrc=$?; t1=$(cut -d' ' -f1 /proc/uptime); echo \"ELAPSED $t0 $t1\"; times; exit $rc"
				}
				res, err := m.Run(script, 11*time.Minute)
				if err != nil || res.Code != 0 {
					r.note[c] = fmt.Sprintf("exit %d", res.Code)
					t.Errorf("%s on %s: %v\n%s", r.name, c, err, res)
					continue
				}
				if secs := elapsedOf(res.Stdout); secs > 0 {
					r.mbps[c] = float64(len(img)) / 1e6 / secs
				}
				if m := wroteRe.FindStringSubmatch(res.Stdout); m != nil {
					if d, err := time.ParseDuration(m[1]); err == nil && d > 0 {
						r.own[c] = float64(len(img)) / 1e6 / d.Seconds()
					}
				}
				if m := ownRateRe.FindStringSubmatch(res.Stdout); m != nil {
					r.own[c], _ = strconv.ParseFloat(m[1], 64)
				}
				r.cpu[c] = childCPU(res.Stdout) / (float64(len(img)) / (1 << 30))
				if m := bottleneckRe.FindStringSubmatch(res.Stdout); m != nil {
					r.note[c] = m[1]
				}
				if m := kindRe.FindStringSubmatch(res.Stdout); m != nil {
					r.note[c] = m[1]
				}
				t.Logf("%-34s %s %7.1f MB/s (own %.1f MB/s) %.2f CPU s/GiB %s", r.name, c, r.mbps[c], r.own[c], r.cpu[c], r.note[c])
				if strings.HasPrefix(r.script, "usbflash") && !strings.Contains(r.script, ".gz") {
					checkCard(t, card, img)
				}
			}
		})
	}
	var b strings.Builder
	fmt.Fprintf(&b, "\nbench-e2e: %d MiB image, accel %s, boot ehci %v / xhci %v\n", mb, env.Accel.Name, boots[EHCI].Round(time.Millisecond), boots[XHCI].Round(time.Millisecond))
	fmt.Fprintf(&b, "| %-32s | %9s | %6s | %9s | %7s | %9s | %6s | %9s | %7s |\n", "method", "ehci MB/s", "ratio", "(own)", "CPU s/GiB", "xhci MB/s", "ratio", "(own)", "CPU s/GiB")
	fmt.Fprintf(&b, "|%s|%s|%s|%s|%s|%s|%s|%s|%s|\n", strings.Repeat("-", 34), strings.Repeat("-", 11), strings.Repeat("-", 8), strings.Repeat("-", 11), strings.Repeat("-", 11), strings.Repeat("-", 11), strings.Repeat("-", 8), strings.Repeat("-", 11), strings.Repeat("-", 11))
	ref := rows[4] // usbflash (defaults)
	for _, r := range rows {
		fmt.Fprintf(&b, "| %-32s", r.name)
		for _, c := range []Controller{EHCI, XHCI} {
			if r.mbps[c] == 0 {
				fmt.Fprintf(&b, " | %9s | %6s | %9s | %9s", "-", "-", "-", "-")
				continue
			}
			ratio, own := "-", "-"
			if ref.mbps[c] > 0 {
				ratio = fmt.Sprintf("%.2fx", r.mbps[c]/ref.mbps[c])
			}
			if r.own[c] > 0 {
				own = fmt.Sprintf("%.1f", r.own[c])
			}
			fmt.Fprintf(&b, " | %9.1f | %6s | %9s | %9.2f", r.mbps[c], ratio, own, r.cpu[c])
		}
		b.WriteString(" |\n")
	}
	b.WriteString("MB/s: image bytes / guest wall time of the whole command (process start, open, write, sync; no verify).\n")
	b.WriteString("ratio: that MB/s / MB/s of `usbflash (defaults)` on the same controller. (own): the rate the program itself reports for its write phase.\n")
	b.WriteString("CPU s/GiB: user+system seconds of the whole command (the shell's `times`) per GiB of image.\n")
	for _, c := range []Controller{EHCI, XHCI} {
		for _, r := range rows {
			if r.note[c] != "" {
				fmt.Fprintf(&b, "%s %s: %s\n", c, r.name, r.note[c])
			}
		}
	}
	fmt.Print(b.String())
	t.Log(b.String())
}

// best is the highest of rates: on a shared host the best run is the one
// least disturbed.
func best(rates []string) float64 {
	b := 0.0
	for _, r := range rates {
		v, _ := strconv.ParseFloat(r, 64)
		b = max(b, v)
	}
	return b
}

// TestBenchDeviceSide runs the device side alone, devbench and the C loop
// taking turns in one boot per controller, three rounds, so that a busy host
// shows as spread rather than as a difference. devbench's CPU profile of the
// last round is kept (USBFLASH_E2E_PROFILE_DIR, default the test's temp dir).
// Run it with -run BenchDeviceSide.
func TestBenchDeviceSide(t *testing.T) {
	if !strings.Contains(flag.Lookup("test.run").Value.String(), "BenchDeviceSide") {
		t.Skip("runs only with -run BenchDeviceSide")
	}
	mb := 128
	if v, err := strconv.Atoi(os.Getenv("USBFLASH_E2E_BENCH_MB")); err == nil && v > 0 {
		mb = v
	}
	profDir := os.Getenv("USBFLASH_E2E_PROFILE_DIR")
	if profDir == "" {
		profDir = t.TempDir()
	}
	// USBFLASH_E2E_DEVBENCH_ENV (e.g. GODEBUG=asyncpreemptoff=1) is put
	// before devbench's command, to try runtime settings.
	devEnv := ""
	if e := os.Getenv("USBFLASH_E2E_DEVBENCH_ENV"); e != "" {
		devEnv = "env " + e + " "
	}
	devbench, zcprobe := buildProbe(t, "devbench"), buildCProbe(t, "zcprobe")
	var b strings.Builder
	for _, c := range []Controller{EHCI, XHCI} {
		t.Run(string(c), func(t *testing.T) {
			card := newCard(t, int64(mb+16)<<20)
			m := boot(t, MachineSpec{Controller: c, MemMB: 512, Readers: []Reader{{Serial: "BENCH1", LUNs: []LUN{{Backing: card}}}}})
			shipProbe(t, m, "devbench", devbench)
			shipProbe(t, m, "zcprobe", zcprobe)
			for _, x := range []int{1, 4} {
				var goRates, cRates []string
				for round := range 3 {
					prof := ""
					if round == 2 {
						prof = fmt.Sprintf("-cpuprofile /host/devbench-%s-%d.prof ", c, x)
					}
					for _, cmd := range []string{
						fmt.Sprintf("%s/host/bin/devbench %s-serial BENCH1 -mib %d -xfer %d", devEnv, prof, mb, x),
						fmt.Sprintf("/host/bin/zcprobe devmem %d %d", x<<10, mb),
					} {
						res, err := m.Run("timeout 300 "+cmd, 6*time.Minute)
						if err != nil || res.Code != 0 {
							t.Fatalf("%s: %v\n%s", cmd, err, res)
						}
						mm := ownRateRe.FindStringSubmatch(res.Stdout)
						if mm == nil {
							t.Fatalf("%s printed no rate:\n%s", cmd, res.Stdout)
						}
						if strings.Contains(cmd, "devbench") {
							goRates = append(goRates, mm[1])
						} else {
							cRates = append(cRates, mm[1])
						}
					}
				}
				line := fmt.Sprintf("%s %d MiB: usbms (devbench) %s MB/s; C loop (zcprobe devmem) %s MB/s; best/best %.2fx\n",
					c, x, strings.Join(goRates, " "), strings.Join(cRates, " "), best(goRates)/best(cRates))
				t.Log(line)
				b.WriteString(line)
				name := fmt.Sprintf("devbench-%s-%d.prof", c, x)
				if err := linkOrCopy(filepath.Join(m.Share, name), filepath.Join(profDir, name)); err != nil {
					t.Error(err)
				}
			}
		})
	}
	fmt.Printf("\nbench-device-side: %d MiB per run, rounds in turn\n%s", mb, b.String())
}
