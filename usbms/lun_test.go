package usbms_test

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/usbflash/usbflash/internal/testkit/factsonly"
	"github.com/usbflash/usbflash/pipeline/blockdev"
	"github.com/usbflash/usbflash/scsi"
	"github.com/usbflash/usbflash/usbms"
	"github.com/usbflash/usbflash/usbms/sim"
)

const (
	opWrite16 = 0x8A
	opRead16  = 0x88
	opRC16    = 0x9E
)

func TestOpenIdentifies(t *testing.T) {
	cfg := sim.Config{LUNs: []sim.LUN{{Blocks: 4096, Removable: true, Vendor: "QEMU", Product: "QEMU HARDDISK", Revision: "2.5+", Serial: "QM00001", MaxTransferBlocks: 2048}}}
	opts := testTransport
	opts.Quirks = usbms.QuirkTryVPDPages
	r := newRig(t, cfg, opts)
	want := scsi.InquiryData{Removable: true, Vendor: "QEMU", Product: "QEMU HARDDISK", Revision: "2.5+"}
	got := r.lun.Inquiry()
	got.Version = 0
	if got != want {
		t.Errorf("Inquiry() = %+v, want %+v", got, want)
	}
	if r.lun.Serial() != "QM00001" || r.lun.MaxTransfer() != 2048 || r.lun.BlockSize() != 512 || r.lun.BlockCount() != 4096 || r.lun.WriteProtected() {
		t.Errorf("Serial, MaxTransfer, BlockSize, BlockCount, WP = %q, %d, %d, %d, %v", r.lun.Serial(), r.lun.MaxTransfer(), r.lun.BlockSize(), r.lun.BlockCount(), r.lun.WriteProtected())
	}
}

func TestOpenQuirks(t *testing.T) {
	tests := []struct {
		name       string
		lun        sim.LUN
		writeCache bool
		wantErr    string
		check      func(t *testing.T, r *rig)
	}{
		{name: "no medium", lun: sim.LUN{NoMedium: true}, wantErr: "no medium in sim LUN 0"},
		{name: "write protected", lun: sim.LUN{Blocks: 64, WriteProtected: true}, check: func(t *testing.T, r *rig) {
			before := r.dev.Stats()
			err := r.lun.WriteBlocks(context.Background(), 0, make([]byte, 512))
			if !r.lun.WriteProtected() || !errors.Is(err, blockdev.ErrWriteProtected) {
				t.Errorf("WriteProtected() = %v, WriteBlocks err = %v", r.lun.WriteProtected(), err)
			}
			if d := diff(before, r.dev.Stats()); d.commands != 0 {
				t.Errorf("%d commands sent to a write-protected LUN, want 0", d.commands)
			}
		}},
		{name: "MODE SENSE rejected", lun: sim.LUN{Blocks: 64, RejectModeSense: true}, check: func(t *testing.T, r *rig) {
			if r.lun.WriteProtected() {
				t.Error("WriteProtected() = true for a reader that rejects MODE SENSE")
			}
		}},
		{name: "no write cache: no SYNCHRONIZE CACHE, as Linux", lun: sim.LUN{Blocks: 64}, check: func(t *testing.T, r *rig) {
			if err := r.lun.Sync(context.Background()); err != nil || r.lun.WriteCache() {
				t.Errorf("Sync() = %v, WriteCache() = %v; want nil, false", err, r.lun.WriteCache())
			}
			if n := r.dev.Stats().Opcodes[scsi.OpSynchronizeCache10]; n != 0 {
				t.Errorf("%d SYNCHRONIZE CACHE sent, want 0", n)
			}
		}},
		{name: "write cache on, SYNCHRONIZE CACHE rejected", lun: sim.LUN{Blocks: 64, RejectSyncCache: true}, writeCache: true, check: func(t *testing.T, r *rig) {
			if err := r.lun.Sync(context.Background()); err != nil || !r.lun.WriteCache() {
				t.Errorf("Sync() = %v, WriteCache() = %v; want nil, true for a reader without SYNCHRONIZE CACHE", err, r.lun.WriteCache())
			}
			if n := r.dev.Stats().Opcodes[scsi.OpSynchronizeCache10]; n != 1 {
				t.Errorf("%d SYNCHRONIZE CACHE sent, want 1", n)
			}
		}},
		{name: "4096-byte blocks", lun: sim.LUN{Blocks: 1024, BlockSize: 4096}, check: func(t *testing.T, r *rig) {
			ctx := context.Background()
			if r.lun.BlockSize() != 4096 || r.lun.BlockCount() != 1024 {
				t.Fatalf("BlockSize, BlockCount = %d, %d", r.lun.BlockSize(), r.lun.BlockCount())
			}
			data := pattern(8*4096, 3)
			if err := r.lun.WriteBlocks(ctx, 1016, data); err != nil {
				t.Fatal(err)
			}
			r.readBack(t, 1016, data)
			if s := r.dev.Stats().LUNs[0]; s.WrittenFirst != 1016 || s.WrittenEnd != 1024 {
				t.Errorf("device wrote blocks [%d, %d), want [1016, 1024)", s.WrittenFirst, s.WrittenEnd)
			}
			if err := r.lun.WriteBlocks(ctx, 0, make([]byte, 512)); err == nil {
				t.Error("a 512-byte write to a 4096-byte-block LUN succeeded")
			}
			if err := r.lun.WriteBlocks(ctx, 1017, data); err == nil {
				t.Error("a write past the last block succeeded")
			}
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			dev, err := sim.New(sim.Config{LUNs: []sim.LUN{tt.lun}, Misbehaviour: sim.Misbehaviour{WriteCache: tt.writeCache}})
			if err != nil {
				t.Fatal(err)
			}
			defer dev.Close()
			tr := usbms.NewTransport(dev, testTransport)
			l, err := usbms.OpenLUN(context.Background(), tr, 0, testLUN)
			if tt.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
					t.Fatalf("OpenLUN err = %v, want %q", err, tt.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			tt.check(t, &rig{dev: dev, t: tr, lun: l})
		})
	}
}

func TestNoMediumIsTyped(t *testing.T) {
	dev, _ := sim.New(sim.Config{LUNs: []sim.LUN{{NoMedium: true}}})
	defer dev.Close()
	_, err := usbms.OpenLUN(context.Background(), usbms.NewTransport(dev, testTransport), 0, testLUN)
	if !scsi.IsNoMedium(err) || !usbms.IsNoMedium(err) || usbms.IsMediumChanged(err) || !usbms.HasSense(err) {
		t.Errorf("err = %v, want IsNoMedium and HasSense", err)
	}
	factsonly.Check(t, err.Error())
	if n := dev.Stats().Opcodes[scsi.OpTestUnitReady]; n != 1 {
		t.Errorf("%d TEST UNIT READY sent, want 1: no medium must fail at once", n)
	}
}

func TestOpenWaitsForReady(t *testing.T) {
	dev, _ := sim.New(oneLUN(64))
	defer dev.Close()
	dev.Inject(sim.Fault{Kind: sim.NotReady, Count: 3})
	if _, err := usbms.OpenLUN(context.Background(), usbms.NewTransport(dev, testTransport), 0, testLUN); err != nil {
		t.Fatal(err)
	}
	if n := dev.Stats().Opcodes[scsi.OpTestUnitReady]; n != 4 {
		t.Errorf("%d TEST UNIT READY sent, want 4", n)
	}
}

// TestDataPhaseSplit checks that a data phase larger than the chunk size
// goes out as one command in several bulk transfers, none over the chunk.
func TestDataPhaseSplit(t *testing.T) {
	opts := testTransport
	opts.ChunkSize = 64 << 10
	r := newRig(t, oneLUN(8192), opts)
	ctx := context.Background()
	data := pattern(1<<20, 5)
	before := r.dev.Stats()
	out0, _ := r.wire.counts()
	if err := r.lun.WriteBlocks(ctx, 10, data); err != nil {
		t.Fatal(err)
	}
	out1, _ := r.wire.counts()
	if d := diff(before, r.dev.Stats()); d.writes != 1 || d.commands != 1 {
		t.Errorf("%d WRITEs in %d commands, want 1 and 1", d.writes, d.commands)
	}
	if got := out1 - out0; got != 1+16 {
		t.Errorf("%d bulk-OUT transfers, want 17 (CBW and 16 chunks)", got)
	}
	if r.wire.maxOut != 64<<10 {
		t.Errorf("largest bulk-OUT transfer %d bytes, want %d", r.wire.maxOut, 64<<10)
	}
	_, in0 := r.wire.counts()
	r.readBack(t, 10, data)
	if _, in1 := r.wire.counts(); in1-in0 != 16+1 {
		t.Errorf("%d bulk-IN transfers, want 17 (16 chunks and CSW)", in1-in0)
	}
}

func TestCommandSelection(t *testing.T) {
	const big = 1<<32 + 2048 // needs READ CAPACITY(16) and 16-byte commands
	tests := []struct {
		name        string
		blocks      int64 // LUN capacity
		maxTransfer uint32
		lba         int64
		count       int
		w10, w16    int64
	}{
		{"low LBA, 16-bit count: WRITE(10)", big, 0, 0, 128, 1, 0},
		{"last 32-bit LBA: WRITE(10)", big, 0, 1<<32 - 1, 1, 1, 0},
		{"crossing 2^32: one WRITE(16)", big, 0, 1<<32 - 8, 16, 0, 1},
		{"past 2^32: WRITE(16)", big, 0, 1<<32 + 100, 64, 0, 1},
		{"65536 blocks: one WRITE(16), not two WRITE(10)", 70000, 0, 0, 65536, 0, 1},
		{"65535 blocks: one WRITE(10)", 70000, 0, 0, 65535, 1, 0},
		{"device limit splits", 8192, 128, 0, 1000, 8, 0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			cfg := sim.Config{LUNs: []sim.LUN{{Blocks: tt.blocks, MaxTransferBlocks: tt.maxTransfer}}}
			opts := testTransport
			opts.Quirks = usbms.QuirkTryVPDPages // the device limit is in VPD page B0
			r := newRig(t, cfg, opts)
			if r.lun.BlockCount() != tt.blocks {
				t.Fatalf("BlockCount() = %d, want %d", r.lun.BlockCount(), tt.blocks)
			}
			if tt.blocks > 1<<32 && r.dev.Stats().Opcodes[opRC16] != 1 {
				t.Errorf("READ CAPACITY(16) not used for a LUN of %d blocks", tt.blocks)
			}
			data := pattern(tt.count*512, 9)
			before := r.dev.Stats()
			if err := r.lun.WriteBlocks(context.Background(), tt.lba, data); err != nil {
				t.Fatal(err)
			}
			after := r.dev.Stats()
			w10 := after.Opcodes[opWrite10] - before.Opcodes[opWrite10]
			w16 := after.Opcodes[opWrite16] - before.Opcodes[opWrite16]
			if w10 != tt.w10 || w16 != tt.w16 {
				t.Errorf("WRITE(10) x%d, WRITE(16) x%d; want x%d, x%d", w10, w16, tt.w10, tt.w16)
			}
			if s := after.LUNs[0]; s.WrittenFirst != tt.lba || s.WrittenEnd != tt.lba+int64(tt.count) {
				t.Errorf("device wrote [%d, %d), want [%d, %d)", s.WrittenFirst, s.WrittenEnd, tt.lba, tt.lba+int64(tt.count))
			}
			r.readBack(t, tt.lba, data)
			after2 := r.dev.Stats()
			r10 := after2.Opcodes[opRead10] - after.Opcodes[opRead10]
			r16 := after2.Opcodes[opRead16] - after.Opcodes[opRead16]
			if r10 != tt.w10 || r16 != tt.w16 {
				t.Errorf("READ(10) x%d, READ(16) x%d; want x%d, x%d", r10, r16, tt.w10, tt.w16)
			}
		})
	}
}

func TestMaxLUN(t *testing.T) {
	tests := []struct {
		name string
		cfg  sim.Config
		want int
	}{
		{"three slots", sim.Config{LUNs: []sim.LUN{{Blocks: 8}, {Blocks: 8}, {NoMedium: true}}}, 2},
		{"stall means one LUN", sim.Config{LUNs: []sim.LUN{{Blocks: 8}}, StallGetMaxLUN: true}, 0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			dev, _ := sim.New(tt.cfg)
			defer dev.Close()
			got, err := usbms.NewTransport(dev, testTransport).MaxLUN(context.Background())
			if err != nil || got != tt.want {
				t.Errorf("MaxLUN() = %d, %v; want %d", got, err, tt.want)
			}
		})
	}
}

func TestSecondLUN(t *testing.T) {
	dev, _ := sim.New(sim.Config{LUNs: []sim.LUN{{NoMedium: true}, {Blocks: 256}}})
	defer dev.Close()
	tr := usbms.NewTransport(dev, testTransport)
	if _, err := usbms.OpenLUN(context.Background(), tr, 0, testLUN); !scsi.IsNoMedium(err) {
		t.Errorf("LUN 0: err = %v, want no medium", err)
	}
	l, err := usbms.OpenLUN(context.Background(), tr, 1, testLUN)
	if err != nil {
		t.Fatal(err)
	}
	if err := l.WriteBlocks(context.Background(), 0, pattern(4096, 2)); err != nil {
		t.Fatal(err)
	}
	if s := dev.Stats().LUNs; s[1].BlocksWritten != 8 || s[0].BlocksWritten != 0 {
		t.Errorf("blocks written per LUN = %d, %d; want 0, 8", s[0].BlocksWritten, s[1].BlocksWritten)
	}
}

func TestEject(t *testing.T) {
	r := newRig(t, oneLUN(64), testTransport)
	ctx := context.Background()
	if err := r.lun.Eject(ctx); err != nil {
		t.Fatal(err)
	}
	err := r.lun.ReadBlocks(ctx, 0, make([]byte, 512))
	if !scsi.IsNoMedium(err) {
		t.Errorf("read after eject: err = %v, want no medium", err)
	}
}

func TestCancelledContext(t *testing.T) {
	r := newRig(t, oneLUN(64), testTransport)
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	err := r.lun.WriteBlocks(ctx, 0, make([]byte, 512))
	if !errors.Is(err, context.Canceled) {
		t.Fatalf("err = %v, want context.Canceled", err)
	}
	// The LUN must still work for the sync a cancelled write ends with.
	if err := r.lun.WriteBlocks(context.Background(), 0, make([]byte, 512)); err != nil {
		t.Errorf("write after a cancelled one: %v", err)
	}
}

func TestBadArguments(t *testing.T) {
	r := newRig(t, oneLUN(64), testTransport)
	ctx := context.Background()
	for _, tt := range []struct {
		name string
		lba  int64
		n    int
	}{{"partial block", 0, 100}, {"negative LBA", -1, 512}, {"past the end", 63, 1024}, {"LBA past the end", 65, 512}} {
		before := r.dev.Stats()
		err := r.lun.WriteBlocks(ctx, tt.lba, make([]byte, tt.n))
		var ce *usbms.CommandError
		if !errors.As(err, &ce) {
			t.Errorf("%s: err = %v, want a *CommandError", tt.name, err)
		}
		if d := diff(before, r.dev.Stats()); d.commands != 0 {
			t.Errorf("%s: %d commands sent", tt.name, d.commands)
		}
	}
	if err := r.lun.WriteBlocks(ctx, 64, nil); err != nil {
		t.Errorf("empty write at the end: %v", err)
	}
	if _, err := usbms.OpenLUN(ctx, r.t, 16, testLUN); err == nil {
		t.Error("OpenLUN accepted LUN 16")
	}
}
