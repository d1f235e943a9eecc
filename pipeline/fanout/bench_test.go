//go:build unix

package fanout

import (
	"context"
	"fmt"
	"path/filepath"
	"syscall"
	"testing"
	"time"

	"github.com/usbflash/usbflash/internal/image"
	"github.com/usbflash/usbflash/pipeline"
	"github.com/usbflash/usbflash/pipeline/blockdev"
	"github.com/usbflash/usbflash/usbms"
	"github.com/usbflash/usbflash/usbms/sim"
)

// The many-cards claims, as ratios of runs made in the same benchmark:
//
//	go test ./fanout/ -run '^$' -bench . -benchtime 1x
//
// BenchmarkGroup writes the demo OS image (32 MiB, xz) to N simulated
// readers at 40 MB/s with 1 ms per command and reports the wall time and
// the process's CPU time against N=1. One decode feeds every card, so the
// CPU time grows only by what the readers themselves cost.
func BenchmarkGroup(b *testing.B) {
	base := run(b, 1, "", 0)
	for _, c := range []struct{ n, lag int }{{2, 0}, {4, 0}, {8, 0}, {8, 8}} {
		b.Run(fmt.Sprintf("N=%d/lag=%d", c.n, c.lag), func(b *testing.B) {
			var r result
			for range b.N {
				r = run(b, c.n, "", c.lag)
			}
			b.ReportMetric(r.wall.Seconds()/base.wall.Seconds(), "time_vs_N1")
			b.ReportMetric(r.cpu.Seconds()/base.cpu.Seconds(), "cpu_vs_N1")
			b.ReportMetric(r.mbps, "MB/s_per_card")
		})
	}
}

// BenchmarkGroupSlowCard: eight cards, one at half speed. In lockstep the
// slow card sets everyone's pace; with a window of Lag transfers the
// others run at their own speed until the slow one is that far behind.
// fast_speed is the fast cards' throughput over their own speed alone.
func BenchmarkGroupSlowCard(b *testing.B) {
	alone := run(b, 1, "", 0)
	for _, lag := range []int{0, 32} {
		b.Run(fmt.Sprintf("lag=%d", lag), func(b *testing.B) {
			var r result
			for range b.N {
				r = run(b, 8, "speed=20MB/s&latency=1ms", lag)
			}
			b.ReportMetric(alone.wall.Seconds()/r.fastDone.Seconds(), "fast_speed")
			b.ReportMetric(r.wall.Seconds()/alone.wall.Seconds(), "time_vs_N1")
		})
	}
}

type result struct {
	wall, cpu time.Duration
	fastDone  time.Duration // when the last fast card finished its writes
	mbps      float64
}

// run writes the demo image to n cards (the last one with slowOpts when
// given) and measures the whole run.
func run(b *testing.B, n int, slowOpts string, lag int) result {
	b.Helper()
	dir := b.TempDir()
	var targets []Target
	for i := range n {
		opts := "speed=40MB/s&latency=1ms&size=64MiB"
		if slowOpts != "" && i == n-1 {
			opts = slowOpts + "&size=64MiB"
		}
		lun := openMemoryCard(b, dir, fmt.Sprint("card", i), opts)
		targets = append(targets, Target{Name: fmt.Sprint("card", i), Dev: &timedDev{Device: lun}})
	}
	src, err := image.OpenFile(filepath.Join("..", "..", "testdata", "demo.img.xz"))
	if err != nil {
		b.Fatal(err)
	}
	defer src.Close()
	g, err := New(targets, Options{Lag: lag, TransferSize: pipeline.DefaultTransferSize})
	if err != nil {
		b.Fatal(err)
	}
	defer g.Close()
	cpu0 := cpuTime()
	start := time.Now()
	res, err := pipeline.Write(context.Background(), g, src, pipeline.WriteOptions{
		ExpectedSize: src.Size, Sync: true, HashAlg: pipeline.HashNone})
	if err != nil {
		b.Fatal(err)
	}
	r := result{wall: time.Since(start), cpu: cpuTime() - cpu0}
	r.mbps = float64(res.Bytes) / r.wall.Seconds() / 1e6
	for i, t := range targets {
		if slowOpts != "" && i == n-1 {
			continue
		}
		r.fastDone = max(r.fastDone, t.Dev.(*timedDev).last.Sub(start))
	}
	for _, m := range g.Results() {
		if m.Err != nil {
			b.Fatalf("%s: %v", m.Name, m.Err)
		}
	}
	return r
}

// openMemoryCard opens a simulated reader whose card is held in memory
// (LUN 1 of a two-slot reader), so the measured CPU time is usbflash's and
// the simulated reader's, not the host's page cache.
func openMemoryCard(b *testing.B, dir, name, opts string) *usbms.LUN {
	dev, err := sim.Open("sim:" + filepath.Join(dir, name+".img") + "?reject-sync=1&luns=2&" + opts)
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { dev.Close() })
	lun, err := usbms.OpenLUN(context.Background(), usbms.NewTransport(dev, usbms.TransportOptions{Name: name}), 1, usbms.LUNOptions{})
	if err != nil {
		b.Fatal(err)
	}
	return lun
}

// timedDev notes when its last write ended.
type timedDev struct {
	blockdev.Device
	last time.Time
}

func (d *timedDev) WriteBlocks(ctx context.Context, lba int64, p []byte) error {
	err := d.Device.WriteBlocks(ctx, lba, p)
	d.last = time.Now()
	return err
}

func cpuTime() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}
