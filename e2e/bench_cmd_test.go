//go:build e2e

package e2e

import (
	"encoding/json"
	"fmt"
	"strings"
	"testing"
	"time"
)

// TestBenchCommand runs `usbflash bench` against QEMU's emulated reader,
// one boot per controller: with --compare against the guest kernel's
// /dev/sdX while usb-storage is bound (found from sysfs on xHCI, named
// with --compare=file: on EHCI), a read-only sweep, and --write --preserve
// on a region. Every run must leave the card's backing file as it was.
// The text output of each run is logged: docs/usage.md's sweep comes from it.
func TestBenchCommand(t *testing.T) {
	for _, c := range []Controller{EHCI, XHCI} {
		t.Run(string(c), func(t *testing.T) {
			card := newCard(t, 128<<20)
			m := boot(t, MachineSpec{Controller: c, Readers: []Reader{{Serial: "BENCH2", LUNs: []LUN{{Backing: card}}}}})
			tgt := serialTarget("BENCH2")
			guest(t, m, "loadmod usb-storage sd_mod && sdbyserial BENCH2")

			compare := "--compare"
			if c == EHCI {
				dev := strings.TrimSpace(guest(t, m, "sdbyserial BENCH2").Stdout)
				compare = "--compare=file:/dev/" + dev
			}
			r := usbflash(t, m, 10*time.Minute, "bench", tgt, compare, "--json", "--skip", "align,random,roundtrip",
				"--sizes", "4KiB,64KiB,120KiB,1MiB,4MiB,15MiB", "--time", "300ms")
			s := summary(t, r)
			paths := map[string]bool{}
			for _, se := range s.Series {
				paths[se.Path] = true
			}
			for _, p := range []string{"direct", "kernel O_DIRECT", "kernel buffered"} {
				if !paths[p] {
					t.Errorf("--compare: no %q series in %v", p, paths)
				}
			}
			t.Logf("%s best read: %s", c, bestReads(s))
			checkUntouched(t, card)

			// The kernel gives the interface back to usb-storage when
			// usbflash closes it; the next runs take it again.
			r = usbflash(t, m, 10*time.Minute, "bench", tgt, "--time", "200ms")
			if r.Code != 0 || !strings.Contains(r.Stdout, "Recommended --transfer-size") {
				t.Fatalf("read-only bench: exit %d\n%s", r.Code, r)
			}
			checkUntouched(t, card)

			r = usbflash(t, m, 10*time.Minute, "bench", tgt, "--write", "--preserve", "--yes", "--region", "32MiB:16MiB",
				"--sizes", "4KiB,64KiB,1MiB,4MiB", "--time", "200ms", "--random-time", "500ms", "--skip", "align")
			if r.Code != 0 || !strings.Contains(r.Stdout, "Restored and verified") || !strings.Contains(r.Stdout, "direct write") {
				t.Fatalf("bench --write --preserve: exit %d\n%s", r.Code, r)
			}
			checkUntouched(t, card)
		})
	}
}

// benchSummary is the part of bench's JSON summary the test reads.
type benchSummary struct {
	Series []struct {
		Path  string `json:"path"`
		Op    string `json:"op"`
		Rates []struct {
			Size int64   `json:"size"`
			Rate float64 `json:"rate"`
		} `json:"rates"`
	} `json:"series"`
}

func summary(t *testing.T, r Result) benchSummary {
	t.Helper()
	if r.Code != 0 {
		t.Fatalf("bench: exit %d\n%s", r.Code, r)
	}
	for _, line := range strings.Split(r.Stdout, "\n") {
		if !strings.Contains(line, `"event":"summary"`) {
			continue
		}
		var s benchSummary
		if err := json.Unmarshal([]byte(line), &s); err != nil {
			t.Fatalf("summary: %v\n%s", err, line)
		}
		return s
	}
	t.Fatalf("bench printed no summary:\n%s", r)
	return benchSummary{}
}

// bestReads says each path's best read and the direct path's ratio to it.
func bestReads(s benchSummary) string {
	best := map[string]float64{}
	var order []string
	for _, se := range s.Series {
		if se.Op != "read" {
			continue
		}
		order = append(order, se.Path)
		for _, r := range se.Rates {
			best[se.Path] = max(best[se.Path], r.Rate)
		}
	}
	var parts []string
	for _, p := range order {
		parts = append(parts, fmt.Sprintf("%s %.1f MB/s (direct/this %.2fx)", p, best[p]/1e6, best["direct"]/best[p]))
	}
	return strings.Join(parts, ", ")
}
