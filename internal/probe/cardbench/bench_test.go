package cardbench

import (
	"context"
	"testing"
	"time"

	"github.com/usbflash/usbflash/usbms/sim"
)

// BenchmarkReadSweep is the goal: a read sweep of 12 sizes (32 KiB
// to 32 MiB, with 120 KiB) in three regions on a 40 MB/s reader with 1 ms
// per command, at the default 250 ms per point. It reports the sweep's
// duration and the best size's throughput as a share of the wire speed.
//
//	go test -run '^$' -bench ReadSweep -benchtime 1x ./cardbench
func BenchmarkReadSweep(b *testing.B) {
	const wire = 40e6
	all := Sizes(512, MaxSize)
	sizes := all[len(all)-12:]
	for b.Loop() {
		dev, err := sim.New(sim.Config{Speed: wire, Latency: time.Millisecond, LUNs: []sim.LUN{{Blocks: (1 << 30) / 512}}})
		if err != nil {
			b.Fatal(err)
		}
		c := &simCard{dev: dev}
		c.lun = openLUN(b, dev)
		start := time.Now()
		points, err := Sweep(context.Background(), c.lun, SweepOptions{
			Path: PathDirect, Op: OpRead, Sizes: sizes,
			Regions: ReadRegions(1<<30, 0, MaxSize), PointTime: 250 * time.Millisecond,
		})
		elapsed := time.Since(start)
		dev.Close()
		if err != nil {
			b.Fatal(err)
		}
		s := Summarize(points)[0]
		rec, best := Recommend(s)
		b.ReportMetric(elapsed.Seconds(), "sweep-s")
		b.ReportMetric(best/wire, "best/wire")
		b.ReportMetric(float64(rec), "recommended-bytes")
	}
}
