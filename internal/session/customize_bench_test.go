//go:build unix

package session

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"syscall"
	"testing"
	"time"

	"github.com/usbflash/usbflash/internal/customize"
	"github.com/usbflash/usbflash/internal/drive"
	"github.com/usbflash/usbflash/internal/image"
	"github.com/usbflash/usbflash/internal/testkit/osimage"
)

// BenchmarkCustomizedWrite: the OS-like image (USBFLASH_BENCH_MB, 1024 in
// make bench-customize: Raspberry Pi OS's shape, a 256 MiB FAT32 boot
// partition at 4 MiB and the rest a root partition of OS-like data,
// xz-compressed as it is published) written and verified to a simulated
// card as fast as the host goes (so the customisation's own CPU is not
// hidden behind a slow reader), with a customisation (hostname, user,
// password, SSH key, Wi-Fi) and without, interleaved for
// USBFLASH_BENCH_ROUNDS rounds (default 5). Reported: the median of the
// rounds' customised/plain ratios of wall time (goal < 1.05) and of the
// process's CPU seconds, and each side's median seconds.
func BenchmarkCustomizedWrite(b *testing.B) {
	size := benchImageMB(b) << 20
	rounds := 5
	if s := os.Getenv("USBFLASH_BENCH_ROUNDS"); s != "" {
		n, err := strconv.Atoi(s)
		if err != nil || n <= 0 {
			b.Fatalf("USBFLASH_BENCH_ROUNDS=%q: want a positive number", s)
		}
		rounds = n
	}
	dir := b.TempDir()
	const bootStart, bootSize = 4 << 20, 256 << 20
	img, err := osimage.Bootable(b.TempDir(), bootStart, bootSize, size-bootStart-bootSize, osimage.RaspiosBoot, 7)
	if err != nil {
		b.Fatal(err)
	}
	raw := filepath.Join(dir, "os.img")
	if err := os.WriteFile(raw, img, 0o644); err != nil {
		b.Fatal(err)
	}
	img = nil
	if out, err := exec.Command("xz", "-T2", "-1", raw).CombinedOutput(); err != nil {
		b.Fatalf("xz: %v\n%s", err, out)
	}
	imagePath := raw + ".xz"
	card := spec(b, "sim:"+filepath.Join(dir, "card.img")+"?size="+strconv.FormatInt(size+(16<<20), 10))
	custom := &customize.Config{Hostname: "bench-{n}", User: "maker", Password: "bench-password", SSHKeys: []string{"ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIGJlbmNoIGtleSBmb3IgdXNiZmxhc2ggdGVzdHMgb25seQ bench"},
		WiFi: customize.WiFi{SSID: "Bench", Password: "bench passphrase", Country: "GB"}}
	write := func(c *customize.Config) (wall, cpu time.Duration) {
		cpu0, t0 := processCPU(b), time.Now()
		if _, err := Run(context.Background(), Config{Image: image.Ref{Path: imagePath, NoSHA256: true}, Engine: Engine{Verify: true}, Customize: c}, []drive.Spec{card}); err != nil {
			b.Fatalf("write (customised %v): %v", c != nil, err)
		}
		return time.Since(t0), processCPU(b) - cpu0
	}
	b.ResetTimer()
	for range b.N {
		var plainS, customS, plainCPU, customCPU, ratio, cpuRatio []float64
		for i := range rounds {
			// Interleaved, and which goes first alternates: a machine
			// shared with other work slows both alike.
			var p, c, pc, cc time.Duration
			if i%2 == 0 {
				p, pc = write(nil)
				c, cc = write(custom)
			} else {
				c, cc = write(custom)
				p, pc = write(nil)
			}
			plainS, customS = append(plainS, p.Seconds()), append(customS, c.Seconds())
			plainCPU, customCPU = append(plainCPU, pc.Seconds()), append(customCPU, cc.Seconds())
			ratio, cpuRatio = append(ratio, c.Seconds()/p.Seconds()), append(cpuRatio, cc.Seconds()/pc.Seconds())
			b.Logf("round %d: plain %.2f s (CPU %.2f s), customised %.2f s (CPU %.2f s): %.3fx", i+1, p.Seconds(), pc.Seconds(), c.Seconds(), cc.Seconds(), c.Seconds()/p.Seconds())
		}
		b.ReportMetric(median(ratio), "custom/plain")
		b.ReportMetric(median(cpuRatio), "cpu-custom/plain")
		b.ReportMetric(median(plainS), "plain-s")
		b.ReportMetric(median(customS), "custom-s")
		b.ReportMetric(median(plainCPU), "plain-cpu-s")
		b.ReportMetric(median(customCPU), "custom-cpu-s")
	}
}

func median(v []float64) float64 {
	s := slices.Sorted(slices.Values(v))
	if n := len(s); n%2 == 0 {
		return (s[n/2-1] + s[n/2]) / 2
	}
	return s[len(s)/2]
}

// processCPU is the user and system time the process has used so far.
func processCPU(b *testing.B) time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		b.Fatal(err)
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}
