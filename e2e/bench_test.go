//go:build e2e

package e2e

import (
	"fmt"
	"os"
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
var (
	wroteRe      = regexp.MustCompile(`Wrote [^\n]* in ([0-9hmsµun.]+) \(`)
	bottleneckRe = regexp.MustCompile(`Bottleneck: ([^\n]*)`)
)

func TestBenchE2E(t *testing.T) {
	optIn(t, "Bench", "USBFLASH_E2E_BENCH")
	mb := 48
	if v, err := strconv.Atoi(os.Getenv("USBFLASH_E2E_BENCH_MB")); err == nil && v > 0 {
		mb = v
	}
	img := makeImage(77, mb<<20)
	type row struct {
		name   string
		script string
		mbps   map[Controller]float64 // wall clock in the guest, process start to exit
		own    map[Controller]float64 // usbflash's own "Wrote ... (N MB/s)"
		note   map[Controller]string
	}
	var rows []*row
	add := func(name, script string) {
		rows = append(rows, &row{name: name, script: script, mbps: map[Controller]float64{}, own: map[Controller]float64{}, note: map[Controller]string{}})
	}
	tgt := serialTarget("BENCH1")
	// Kernel path first: usbflash detaches usb-storage from the reader.
	add("dd bs=1M conv=fsync", "dd if=/tmp/b.img of=$DEV bs=1M conv=fsync 2>/dev/null")
	add("dd bs=1M oflag=direct", "dd if=/tmp/b.img of=$DEV bs=1M oflag=direct 2>/dev/null")
	add("dd bs=4k conv=fsync", "dd if=/tmp/b.img of=$DEV bs=4k conv=fsync 2>/dev/null")
	add("zcat .gz | dd bs=1M conv=fsync", "zcat /tmp/b.img.gz | dd of=$DEV bs=1M conv=fsync 2>/dev/null")
	add("usbflash (defaults)", "usbflash write /tmp/b.img "+tgt+" --yes --no-verify")
	add("usbflash .gz (defaults)", "usbflash write /tmp/b.img.gz "+tgt+" --yes --no-verify")
	for _, ts := range []string{"4KiB", "64KiB", "120KiB", "1MiB", "4MiB", "15MiB", "16MiB", "32MiB"} {
		add("usbflash --transfer-size "+ts, "usbflash write /tmp/b.img "+tgt+" --yes --no-verify --transfer-size "+ts)
	}
	boots := map[Controller]time.Duration{}
	for _, c := range []Controller{EHCI, XHCI} {
		t.Run(string(c), func(t *testing.T) {
			card := newCard(t, int64(mb+16)<<20)
			m := boot(t, MachineSpec{Controller: c, MemMB: 512 + 3*mb, Readers: []Reader{{Serial: "BENCH1", LUNs: []LUN{{Backing: card}}}}})
			boots[c] = m.Booted
			p := putImage(t, m, "b.img", img, "raw")
			pgz := putImage(t, m, "b.img", img, "gz")
			guest(t, m, fmt.Sprintf("cp %s /tmp/b.img && cp %s /tmp/b.img.gz && loadmod usb-storage sd_mod", p, pgz))
			for _, r := range rows {
				script := `t0=$(cut -d' ' -f1 /proc/uptime)
DEV=/dev/$(sdbyserial BENCH1) || exit 99
` + r.script + `
rc=$?; t1=$(cut -d' ' -f1 /proc/uptime); echo "ELAPSED $t0 $t1"; exit $rc`
				if strings.HasPrefix(r.script, "usbflash") {
					script = "t0=$(cut -d' ' -f1 /proc/uptime)\ntimeout 600 " + r.script + "\nrc=$?; t1=$(cut -d' ' -f1 /proc/uptime); echo \"ELAPSED $t0 $t1\"; exit $rc"
				}
				res, err := m.Run(script, 11*time.Minute)
				if err != nil || res.Code != 0 {
					r.note[c] = fmt.Sprintf("exit %d", res.Code)
					t.Errorf("%s on %s: %v\n%s", r.name, c, err, res)
					continue
				}
				var t0, t1 float64
				for _, l := range strings.Split(res.Stdout, "\n") {
					if strings.HasPrefix(l, "ELAPSED ") {
						f := strings.Fields(l)
						t0, _ = strconv.ParseFloat(f[1], 64)
						t1, _ = strconv.ParseFloat(f[2], 64)
					}
				}
				if t1 > t0 {
					r.mbps[c] = float64(len(img)) / 1e6 / (t1 - t0)
				}
				if m := wroteRe.FindStringSubmatch(res.Stdout); m != nil {
					if d, err := time.ParseDuration(m[1]); err == nil && d > 0 {
						r.own[c] = float64(len(img)) / 1e6 / d.Seconds()
					}
				}
				if m := bottleneckRe.FindStringSubmatch(res.Stdout); m != nil {
					r.note[c] = m[1]
				}
				t.Logf("%-34s %s %7.1f MB/s (usbflash's own %.1f MB/s) %s", r.name, c, r.mbps[c], r.own[c], r.note[c])
				if strings.HasPrefix(r.script, "usbflash") && !strings.Contains(r.script, ".gz") {
					checkCard(t, card, img)
				}
			}
		})
	}
	var b strings.Builder
	fmt.Fprintf(&b, "\nbench-e2e: %d MiB image, accel %s, boot ehci %v / xhci %v\n", mb, env.Accel.Name, boots[EHCI].Round(time.Millisecond), boots[XHCI].Round(time.Millisecond))
	fmt.Fprintf(&b, "| %-32s | %9s | %6s | %9s | %9s | %6s | %9s |\n", "method", "ehci MB/s", "ratio", "(own)", "xhci MB/s", "ratio", "(own)")
	fmt.Fprintf(&b, "|%s|%s|%s|%s|%s|%s|%s|\n", strings.Repeat("-", 34), strings.Repeat("-", 11), strings.Repeat("-", 8), strings.Repeat("-", 11), strings.Repeat("-", 11), strings.Repeat("-", 8), strings.Repeat("-", 11))
	ref := rows[4] // usbflash (defaults)
	for _, r := range rows {
		fmt.Fprintf(&b, "| %-32s", r.name)
		for _, c := range []Controller{EHCI, XHCI} {
			if r.mbps[c] == 0 {
				fmt.Fprintf(&b, " | %9s | %6s | %9s", "-", "-", "-")
				continue
			}
			ratio, own := "-", "-"
			if ref.mbps[c] > 0 {
				ratio = fmt.Sprintf("%.2fx", r.mbps[c]/ref.mbps[c])
			}
			if r.own[c] > 0 {
				own = fmt.Sprintf("%.1f", r.own[c])
			}
			fmt.Fprintf(&b, " | %9.1f | %6s | %9s", r.mbps[c], ratio, own)
		}
		b.WriteString(" |\n")
	}
	b.WriteString("MB/s: image bytes / guest wall time of the whole command (process start, open, write, sync; no verify).\n")
	b.WriteString("ratio: that MB/s / MB/s of `usbflash (defaults)` on the same controller. (own): the rate usbflash itself reports for its write phase.\n")
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
