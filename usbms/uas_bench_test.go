package usbms_test

import (
	"context"
	"testing"

	"github.com/usbflash/usbflash/usbms/sim"
)

// BenchmarkTransportWrite is what one 64 KiB WRITE costs the host over
// each transport on the simulator (no speed model: the cost is the
// transport's own), so UAS's per-command overhead is set against
// Bulk-Only's in the same run:
//
//	go test -run '^$' -bench TransportWrite -benchmem ./usbms
func BenchmarkTransportWrite(b *testing.B) {
	const n = 64 << 10
	cases := []struct {
		name string
		cfg  sim.Config
	}{
		{"BOT", sim.Config{LUNs: []sim.LUN{{Blocks: 8192}}}},
		{"UAS high-speed", uasConfig(0, sim.UASConfig{})},
		{"UAS streams", uasConfig(16, sim.UASConfig{})},
	}
	for _, c := range cases {
		b.Run(c.name, func(b *testing.B) {
			_, _, l := uasRig(b, c.cfg)
			data := make([]byte, n)
			ctx := context.Background()
			b.SetBytes(n)
			b.ReportAllocs()
			for i := 0; b.Loop(); i++ {
				if err := l.WriteBlocks(ctx, int64(i%32)*(n/512), data); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
