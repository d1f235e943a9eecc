package sim

import (
	"context"
	"testing"
	"time"
)

// benchWrite moves 8 MiB WRITE(16) commands through a device and reports
// the throughput the host sees.
func benchWrite(b *testing.B, cfg Config) {
	d, err := New(cfg)
	if err != nil {
		b.Fatal(err)
	}
	defer d.Close()
	ctx := context.Background()
	const n = 8 << 20
	data := make([]byte, n)
	csw := make([]byte, 13)
	b.SetBytes(n)
	for i := 0; b.Loop(); i++ {
		lba := uint64(i%8) * (n / 512)
		d.BulkOut(ctx, buildCBW(uint32(i), n, false, 0, cdbRW16(opWrite16, lba, n/512)))
		if _, err := d.BulkOut(ctx, data); err != nil {
			b.Fatal(err)
		}
		if _, err := d.BulkIn(ctx, csw); err != nil || csw[12] != 0 {
			b.Fatalf("CSW % x: %v", csw, err)
		}
	}
}

// BenchmarkWriteUnlimited is the cost of the simulator itself.
func BenchmarkWriteUnlimited(b *testing.B) {
	benchWrite(b, Config{LUNs: []LUN{{Blocks: 1 << 17}}})
}

// BenchmarkWrite40MBs should report close to 40 MB/s: the speed model's
// sleep overhead is per transfer, not per packet.
func BenchmarkWrite40MBs(b *testing.B) {
	benchWrite(b, Config{LUNs: []LUN{{Blocks: 1 << 17}}, Speed: 40e6})
}

// BenchmarkSmallReadModelled reads 4 KiB with READ(16) on a 40 MB/s device
// with 100 µs per command, whose model says 0.2 ms a command, and reports
// the time the host sees over the modelled time. Sleeping the whole wait
// made it 6.8 on this machine (a sleep under a millisecond wakes about a
// millisecond late on many hosts); polling the clock at the end, 1.12.
//
//	go test -run '^$' -bench SmallReadModelled -benchtime 2000x ./usbms/sim
func BenchmarkSmallReadModelled(b *testing.B) {
	const n, speed, latency = 4096, 40e6, 100e-6
	d, err := New(Config{LUNs: []LUN{{Blocks: 1 << 17}}, Speed: speed, Latency: latency * 1e9})
	if err != nil {
		b.Fatal(err)
	}
	defer d.Close()
	ctx := context.Background()
	data := make([]byte, n)
	csw := make([]byte, 13)
	start := time.Now()
	commands := 0
	for i := 0; b.Loop(); i++ {
		d.BulkOut(ctx, buildCBW(uint32(i), n, true, 0, cdbRW16(opRead16, uint64(i%1000)*8, n/512)))
		if _, err := d.BulkIn(ctx, data); err != nil {
			b.Fatal(err)
		}
		if _, err := d.BulkIn(ctx, csw); err != nil || csw[12] != 0 {
			b.Fatalf("CSW % x: %v", csw, err)
		}
		commands++
	}
	modelled := float64(commands) * (latency + n/speed)
	b.ReportMetric(time.Since(start).Seconds()/modelled, "host/model")
}
