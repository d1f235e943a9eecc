package sim

import (
	"context"
	"testing"
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
