package usbms_test

import (
	"bytes"
	"context"
	"errors"
	"testing"

	"github.com/usbflash/usbflash/pipeline/blockdev"
	"github.com/usbflash/usbflash/usbms"
	"github.com/usbflash/usbflash/usbms/sim"
)

// TestUnmap: a LUN unmaps by what its provisioning pages offer (UNMAP in
// commands of at most the block limits' count, or WRITE SAME(16) with
// UNMAP), asked for once; unmapped blocks read as zeros on the simulator;
// a reader that offers nothing says so, and one that refuses what it
// offers is ErrUnmapRefused.
func TestUnmap(t *testing.T) {
	const opUnmap, opWriteSame16 = 0x42, 0x93
	const blocks = 2<<20 + 100 // more than two of the simulator's UNMAPs
	for _, tc := range []struct {
		offer, method string
		op            byte
		commands      int64
		err           error
	}{
		{"unmap", usbms.UnmapByUnmap, opUnmap, 3, nil},
		{"writesame", usbms.UnmapByWriteSame, opWriteSame16, 1, nil},
		{"refuse", usbms.UnmapByUnmap, opUnmap, 1, blockdev.ErrUnmapRefused},
		{"", "", opUnmap, 0, blockdev.ErrUnmapRefused},
	} {
		t.Run(tc.offer, func(t *testing.T) {
			mem := sim.NewMemory(blocks * 512)
			r := newRig(t, sim.Config{LUNs: []sim.LUN{{Blocks: blocks, Medium: mem, Unmap: tc.offer}}}, testTransport)
			ctx := context.Background()
			data := pattern(64<<10, 7)
			for _, lba := range []int64{0, 1 << 20, blocks - 128} {
				if err := r.lun.WriteBlocks(ctx, lba, data); err != nil {
					t.Fatal(err)
				}
			}
			method, err := r.lun.UnmapMethod(ctx)
			if err != nil || method != tc.method {
				t.Fatalf("UnmapMethod = %q, %v; want %q", method, err, tc.method)
			}
			inquiries := r.dev.Stats().Opcodes[0x12]
			err = r.lun.Unmap(ctx, 0, blocks)
			if !errors.Is(err, tc.err) || (err == nil) != (tc.err == nil) {
				t.Fatalf("Unmap: %v, want %v", err, tc.err)
			}
			st := r.dev.Stats()
			if got := st.Opcodes[tc.op]; got != tc.commands {
				t.Errorf("%d commands of opcode %#x, want %d", got, tc.op, tc.commands)
			}
			if st.Opcodes[0x12] != inquiries {
				t.Error("the provisioning pages were asked for again")
			}
			got := make([]byte, len(data))
			for _, lba := range []int64{0, 1 << 20, blocks - 128} {
				if err := r.lun.ReadBlocks(ctx, lba, got); err != nil {
					t.Fatal(err)
				}
				if zeros := bytes.Equal(got, make([]byte, len(got))); zeros != (tc.err == nil) {
					t.Errorf("block %d reads as zeros: %v, want %v", lba, zeros, tc.err == nil)
				}
			}
		})
	}
}
