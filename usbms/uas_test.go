package usbms_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/usbflash/usbflash/scsi"
	"github.com/usbflash/usbflash/usbms"
	"github.com/usbflash/usbflash/usbms/sim"
)

// uasModes are the two ways UAS runs: high speed (READY IUs, no
// streams) and SuperSpeed (streams).
var uasModes = []struct {
	name    string
	streams int
}{
	{"high-speed", 0},
	{"streams", 16},
}

// openCommands is how many commands OpenLUN sends a plain sim LUN:
// INQUIRY, TEST UNIT READY, READ CAPACITY, READ of block 0 and of the
// last, MODE SENSE.
const openCommands = 6

// uasRig opens LUN 0 of a UAS sim reader.
func uasRig(t testing.TB, cfg sim.Config) (*sim.Device, *usbms.Transport, *usbms.LUN) {
	t.Helper()
	return uasRigDepth(t, cfg, 0)
}

// uasRigDepth is uasRig with a queue depth (0: the default).
func uasRigDepth(t testing.TB, cfg sim.Config, depth int) (*sim.Device, *usbms.Transport, *usbms.LUN) {
	t.Helper()
	dev, err := sim.New(cfg)
	if err != nil {
		t.Fatalf("sim.New: %v", err)
	}
	t.Cleanup(func() { dev.Close() })
	topts := testTransport
	topts.QueueDepth = depth
	tr := usbms.NewTransport(dev, topts)
	l, err := usbms.OpenLUN(context.Background(), tr, 0, testLUN)
	if err != nil {
		t.Fatalf("OpenLUN: %v", err)
	}
	return dev, tr, l
}

func uasConfig(streams int, u sim.UASConfig) sim.Config {
	u.Mode, u.Streams = sim.UASOnly, streams
	return sim.Config{LUNs: []sim.LUN{{Blocks: 8192}}, UAS: u}
}

func TestUASWriteRead(t *testing.T) {
	for _, m := range uasModes {
		for _, depth := range []int{1, 4} {
			t.Run(fmt.Sprintf("%s/depth %d", m.name, depth), func(t *testing.T) {
				dev, tr, l := uasRigDepth(t, uasConfig(m.streams, sim.UASConfig{}), depth)
				if tr.Protocol() != "UAS" {
					t.Fatalf("Protocol() = %q, want UAS", tr.Protocol())
				}
				if info := l.Transport(); info.Protocol != "UAS" || info.Streams != m.streams || info.QueueDepth != depth {
					t.Fatalf("Transport() = %+v; want UAS, %d streams, depth %d", info, m.streams, depth)
				}
				ctx := context.Background()
				data := pattern(1<<20, 7)
				before := dev.Stats().Opcodes[opWrite10]
				if err := l.WriteBlocks(ctx, 100, data); err != nil {
					t.Fatalf("WriteBlocks: %v", err)
				}
				if n := dev.Stats().Opcodes[opWrite10] - before; n != int64(depth) {
					t.Errorf("1 MiB went as %d WRITEs, want %d (the queue depth)", n, depth)
				}
				got := make([]byte, len(data))
				if err := l.ReadBlocks(ctx, 100, got); err != nil {
					t.Fatalf("ReadBlocks: %v", err)
				}
				if !bytes.Equal(got, data) {
					t.Fatal("read back differs from what was written")
				}
				st := dev.Stats()
				if st.BytesOut != int64(len(data)) || st.Opcodes[opSense] != 0 {
					t.Errorf("device took %d bytes and %d REQUEST SENSE, want %d and none (UAS sense comes with the status)", st.BytesOut, st.Opcodes[opSense], len(data))
				}
			})
		}
	}
}

// TestUASQueued: one command of several in flight that fails is sent
// again alone, with the whole policy: a medium error is reported for its
// own blocks, a command never answered is aborted and sent again, a
// medium changed after writing began fails the range.
func TestUASQueued(t *testing.T) {
	cases := []struct {
		name   string
		fault  sim.Fault
		sense  scsi.SenseKey
		change bool
		aborts int64
	}{
		{name: "medium error", fault: sim.Fault{Kind: sim.MediumError, LBA: 100 + 700, Persistent: true}, sense: scsi.MediumError},
		{name: "never answered", fault: sim.Fault{Kind: sim.NeverAnswer}, aborts: 1},
		{name: "medium changed", fault: sim.Fault{Kind: sim.UnitAttention}, change: true},
	}
	for _, m := range uasModes {
		for _, c := range cases {
			t.Run(m.name+"/"+c.name, func(t *testing.T) {
				dev, _, l := uasRigDepth(t, uasConfig(m.streams, sim.UASConfig{}), 4)
				ctx := context.Background()
				if err := l.WriteBlocks(ctx, 0, pattern(4096, 1)); err != nil {
					t.Fatalf("first WriteBlocks: %v", err)
				}
				dev.Inject(c.fault)
				before := dev.Stats()
				data := pattern(1<<20, 5)
				err := l.WriteBlocks(ctx, 100, data)
				after := dev.Stats()
				switch {
				case c.change:
					if !errors.Is(err, usbms.ErrMediumChanged) {
						t.Fatalf("WriteBlocks: %v, want ErrMediumChanged", err)
					}
					return
				case c.sense != 0:
					se, ok := scsi.AsSense(err)
					var ce *usbms.CommandError
					if !ok || se.Key != c.sense || !errors.As(err, &ce) || ce.LBA > 800 || ce.LBA+ce.Blocks <= 800 || ce.Blocks != 512 {
						t.Fatalf("WriteBlocks: %v, want %v for the 512 blocks holding LBA 800", err, c.sense)
					}
					return
				}
				if err != nil {
					t.Fatalf("WriteBlocks: %v", err)
				}
				if a := after.UASAborts - before.UASAborts; a != c.aborts {
					t.Errorf("%d ABORT TASK, want %d", a, c.aborts)
				}
				got := make([]byte, len(data))
				if err := l.ReadBlocks(ctx, 100, got); err != nil || !bytes.Equal(got, data) {
					t.Fatalf("read back: %v (equal %v)", err, bytes.Equal(got, data))
				}
			})
		}
	}
}

// TestUASSense: a CHECK CONDITION's sense comes in the SENSE IU.
func TestUASSense(t *testing.T) {
	for _, m := range uasModes {
		t.Run(m.name, func(t *testing.T) {
			dev, _, l := uasRig(t, uasConfig(m.streams, sim.UASConfig{}))
			dev.Inject(sim.Fault{Kind: sim.MediumError, LBA: 200, Persistent: true})
			err := l.ReadBlocks(context.Background(), 192, make([]byte, 16*512))
			se, ok := scsi.AsSense(err)
			if !ok || se.Key != scsi.MediumError {
				t.Fatalf("ReadBlocks over a bad block: %v, want MEDIUM ERROR sense", err)
			}
			var ce *usbms.CommandError
			if !errors.As(err, &ce) || ce.LBA != 192 || ce.Blocks != 16 {
				t.Errorf("error %v does not name LBA 192, 16 blocks", err)
			}
			if n := dev.Stats().Opcodes[opSense]; n != 0 {
				t.Errorf("%d REQUEST SENSE sent, want none", n)
			}
		})
	}
}

// TestUASRecovery: a command that is not answered is aborted (ABORT
// TASK), or its LUN reset when the abort fails, and sent again; a
// RESPONSE IU in place of the status (an overlapped tag, an invalid IU)
// is recovered the same way.
func TestUASRecovery(t *testing.T) {
	cases := []struct {
		name           string
		uas            sim.UASConfig
		hang           bool
		aborts, resets int64
		extraWrites    int64 // WRITEs the device saw beyond the one
	}{
		{name: "hang", hang: true, aborts: 1, extraWrites: 1},
		// The reset LUN reports it (UNIT ATTENTION 29/03): one more.
		{name: "hang, abort fails", hang: true, uas: sim.UASConfig{AbortFails: true}, aborts: 1, resets: 1, extraWrites: 2},
		{name: "overlapped tag", uas: sim.UASConfig{OverlapAt: openCommands + 1}, aborts: 1},
		{name: "response instead of sense", uas: sim.UASConfig{ResponseAt: openCommands + 1}, aborts: 1},
		{name: "no READY IU", uas: sim.UASConfig{NoReadyAt: openCommands + 1}, aborts: 1, extraWrites: 1},
	}
	for _, m := range uasModes {
		for _, c := range cases {
			t.Run(m.name+"/"+c.name, func(t *testing.T) {
				dev, _, l := uasRig(t, uasConfig(m.streams, c.uas))
				if c.hang {
					dev.Inject(sim.Fault{Kind: sim.NeverAnswer})
				}
				before := dev.Stats()
				// 4 KiB: no smaller command would be tried instead
				// (adapt_test.go has the larger ones).
				data := pattern(faultBlocks*512, 3)
				if err := l.WriteBlocks(context.Background(), 300, data); err != nil {
					t.Fatalf("WriteBlocks: %v", err)
				}
				after := dev.Stats()
				if a, r := after.UASAborts-before.UASAborts, after.UASLUResets-before.UASLUResets; a != c.aborts || r != c.resets {
					t.Errorf("ABORT TASK %d, LU RESET %d; want %d, %d", a, r, c.aborts, c.resets)
				}
				if w := after.Opcodes[opWrite10] - before.Opcodes[opWrite10]; w != 1+c.extraWrites {
					t.Errorf("device ran %d WRITEs, want %d", w, 1+c.extraWrites)
				}
				got := make([]byte, len(data))
				if err := l.ReadBlocks(context.Background(), 300, got); err != nil || !bytes.Equal(got, data) {
					t.Fatalf("read back: %v (equal %v)", err, bytes.Equal(got, data))
				}
			})
		}
	}
}

// TestUASResidue: a device that sends less than the allocation is
// reported by the bytes that came; a READ cut short is repeated.
func TestUASResidue(t *testing.T) {
	for _, m := range uasModes {
		t.Run(m.name, func(t *testing.T) {
			dev, tr, l := uasRig(t, uasConfig(m.streams, sim.UASConfig{}))
			buf := make([]byte, 96)
			cdb := scsi.Inquiry(96)
			n, err := tr.Exec(context.Background(), 0, cdb.Bytes(), usbms.DataIn, buf)
			if err != nil || n != 36 {
				t.Fatalf("INQUIRY of 96: %d bytes, %v; want the device's 36", n, err)
			}
			dev.Inject(sim.Fault{Kind: sim.ShortDataIn, AfterBytes: 4096})
			before := dev.Stats().Opcodes[opRead10]
			if err := l.ReadBlocks(context.Background(), 0, make([]byte, 64<<10)); err != nil {
				t.Fatalf("ReadBlocks after a short one: %v", err)
			}
			if got := dev.Stats().Opcodes[opRead10] - before; got != 2 {
				t.Errorf("%d READs, want 2 (the short one repeated)", got)
			}
		})
	}
}

// TestUASCancel: a caller that gives up on a command the device never
// answers (Ctrl-C) gets its context's error, with every transfer of the
// command taken back: the next command on the same transport works.
func TestUASCancel(t *testing.T) {
	for _, m := range uasModes {
		t.Run(m.name, func(t *testing.T) {
			dev, _, l := uasRig(t, uasConfig(m.streams, sim.UASConfig{}))
			dev.Inject(sim.Fault{Kind: sim.NeverAnswer})
			ctx, cancel := context.WithCancel(context.Background())
			go func() {
				for dev.Stats().Opcodes[opWrite10] == 0 {
					time.Sleep(time.Millisecond)
				}
				cancel()
			}()
			err := l.WriteBlocks(ctx, 0, make([]byte, 64<<10))
			if !errors.Is(err, context.Canceled) {
				t.Fatalf("WriteBlocks: %v, want context.Canceled", err)
			}
			data := pattern(64<<10, 9)
			if err := l.WriteBlocks(context.Background(), 0, data); err != nil {
				t.Fatalf("WriteBlocks after the cancel: %v", err)
			}
			got := make([]byte, len(data))
			if err := l.ReadBlocks(context.Background(), 0, got); err != nil || !bytes.Equal(got, data) {
				t.Fatalf("read back: %v (equal %v)", err, bytes.Equal(got, data))
			}
		})
	}
}

// TestUASVanish: a device that drops off the bus mid-write ends the
// command with ErrNoDevice, at once.
func TestUASVanish(t *testing.T) {
	for _, m := range uasModes {
		t.Run(m.name, func(t *testing.T) {
			dev, _, l := uasRig(t, uasConfig(m.streams, sim.UASConfig{}))
			dev.Inject(sim.Fault{Kind: sim.Disconnect, AfterBytes: 64 << 10})
			err := l.WriteBlocks(context.Background(), 0, make([]byte, 1<<20))
			if !errors.Is(err, usbms.ErrNoDevice) {
				t.Fatalf("WriteBlocks: %v, want ErrNoDevice", err)
			}
		})
	}
}

// TestUASMaxLUN: UAS has no Get Max LUN; REPORT LUNS says.
func TestUASMaxLUN(t *testing.T) {
	for _, m := range uasModes {
		t.Run(m.name, func(t *testing.T) {
			cfg := uasConfig(m.streams, sim.UASConfig{})
			cfg.LUNs = append(cfg.LUNs, sim.LUN{Blocks: 4096})
			dev, err := sim.New(cfg)
			if err != nil {
				t.Fatal(err)
			}
			defer dev.Close()
			sums, err := usbms.ProbeLUNs(context.Background(), usbms.NewTransport(dev, testTransport), testLUN)
			if err != nil || len(sums) != 2 || sums[1].LUN == nil || sums[1].LUN.BlockCount() != 4096 {
				t.Fatalf("ProbeLUNs: %+v, %v; want 2 LUNs, the second of 4096 blocks", sums, err)
			}
		})
	}
}

// TestUASBothOffered: a reader with both interfaces speaks the one
// selected.
func TestUASBothOffered(t *testing.T) {
	for _, uas := range []bool{false, true} {
		dev, err := sim.New(sim.Config{LUNs: []sim.LUN{{Blocks: 2048}}, UAS: sim.UASConfig{Mode: sim.UASAndBOT, Streams: 4}})
		if err != nil {
			t.Fatal(err)
		}
		if err := dev.SelectUAS(uas); err != nil {
			t.Fatal(err)
		}
		tr := usbms.NewTransport(dev, testTransport)
		want := map[bool]string{false: "BOT", true: "UAS"}[uas]
		if tr.Protocol() != want {
			t.Errorf("SelectUAS(%v): Protocol() = %s, want %s", uas, tr.Protocol(), want)
		}
		if _, err := usbms.OpenLUN(context.Background(), tr, 0, testLUN); err != nil {
			t.Errorf("SelectUAS(%v): OpenLUN: %v", uas, err)
		}
		dev.Close()
	}
}

// TestUASCommandSize: a UAS data phase is one transfer, so a range larger
// than ChunkSize goes out in commands of at most ChunkSize.
func TestUASCommandSize(t *testing.T) {
	for _, m := range uasModes {
		t.Run(m.name, func(t *testing.T) {
			cfg := uasConfig(m.streams, sim.UASConfig{})
			cfg.LUNs[0].Blocks = 64 << 11 // 64 MiB
			dev, _, l := uasRigDepth(t, cfg, 1)
			data := pattern(20<<20, 9)
			before := dev.Stats().Opcodes[opWrite10]
			if err := l.WriteBlocks(context.Background(), 2048, data); err != nil {
				t.Fatalf("WriteBlocks: %v", err)
			}
			if n := dev.Stats().Opcodes[opWrite10] - before; n != 3 {
				t.Errorf("%d WRITEs for 20 MiB, want 3 (8, 8 and 4 MiB)", n)
			}
			got := make([]byte, len(data))
			if err := l.ReadBlocks(context.Background(), 2048, got); err != nil || !bytes.Equal(got, data) {
				t.Fatalf("read back: %v", err)
			}
		})
	}
}

// TestUASWriteBlocksQueued: consecutive buffers go as one WRITE each, all
// in flight at once; one that fails is sent again alone with the whole
// policy (a command never answered is aborted and sent again), and a
// medium error names that buffer's own blocks. Over Bulk-Only, or at
// depth 1, the buffers go one after the other.
func TestUASWriteBlocksQueued(t *testing.T) {
	const piece = 64 << 10
	cases := []struct {
		name   string
		depth  int
		fault  *sim.Fault
		aborts int64
		bad    int64 // LBA of a medium error; its buffer is named
	}{
		{name: "written", depth: 4},
		{name: "depth 1", depth: 1},
		{name: "never answered", depth: 4, fault: &sim.Fault{Kind: sim.NeverAnswer}, aborts: 1},
		{name: "medium error", depth: 4, fault: &sim.Fault{Kind: sim.MediumError, LBA: 100 + 128 + 5, Persistent: true}, bad: 100 + 128 + 5},
	}
	for _, m := range uasModes {
		for _, c := range cases {
			t.Run(m.name+"/"+c.name, func(t *testing.T) {
				dev, _, l := uasRigDepth(t, uasConfig(m.streams, sim.UASConfig{}), c.depth)
				if got := l.WriteQueueDepth(); got != c.depth {
					t.Fatalf("WriteQueueDepth() = %d, want %d", got, c.depth)
				}
				ctx := context.Background()
				if c.fault != nil {
					dev.Inject(*c.fault)
				}
				data := pattern(3*piece, 11)
				bufs := [][]byte{data[:piece], data[piece : 2*piece], data[2*piece:]}
				before := dev.Stats()
				err := l.WriteBlocksQueued(ctx, 100, bufs)
				after := dev.Stats()
				if c.bad != 0 {
					var ce *usbms.CommandError
					if !errors.As(err, &ce) || ce.LBA != 100+128 || ce.Blocks != 128 {
						t.Fatalf("WriteBlocksQueued: %v; want a CommandError for the 128 blocks at LBA 228", err)
					}
					return
				}
				if err != nil {
					t.Fatalf("WriteBlocksQueued: %v", err)
				}
				if w := after.Opcodes[opWrite10] - before.Opcodes[opWrite10]; w != 3+c.aborts {
					t.Errorf("%d WRITEs, want %d (one a buffer, and the one sent again)", w, 3+c.aborts)
				}
				if a := after.UASAborts - before.UASAborts; a != c.aborts {
					t.Errorf("%d ABORT TASK, want %d", a, c.aborts)
				}
				got := make([]byte, len(data))
				if err := l.ReadBlocks(ctx, 100, got); err != nil || !bytes.Equal(got, data) {
					t.Fatalf("read back: %v (equal %v)", err, bytes.Equal(got, data))
				}
			})
		}
	}
}
