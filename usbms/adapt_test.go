package usbms_test

import (
	"bytes"
	"context"
	"errors"
	"strings"
	"sync"
	"testing"

	"github.com/usbflash/usbflash/internal/testkit/factsonly"
	"github.com/usbflash/usbflash/usbms"
	"github.com/usbflash/usbflash/usbms/sim"
)

// notices collects what a transport tells.
type notices struct {
	mu  sync.Mutex
	all []usbms.Notice
}

func (n *notices) add(x usbms.Notice) {
	n.mu.Lock()
	defer n.mu.Unlock()
	n.all = append(n.all, x)
}

func (n *notices) of(kind usbms.NoticeKind) []usbms.Notice {
	n.mu.Lock()
	defer n.mu.Unlock()
	var out []usbms.Notice
	for _, x := range n.all {
		if x.Kind == kind {
			out = append(out, x)
		}
	}
	return out
}

// virtualRig opens LUN 0 of a simulated reader on the virtual clock, with
// the default timeouts (they cost nothing there).
func virtualRig(t *testing.T, cfg sim.Config, q usbms.Quirks) (*sim.Device, *usbms.LUN, *notices) {
	t.Helper()
	cfg.VirtualClock = true
	dev, err := sim.New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { dev.Close() })
	var got notices
	tr := usbms.NewTransport(dev, usbms.TransportOptions{Name: "sim", OnNotice: got.add, Quirks: q})
	l, err := usbms.OpenLUN(context.Background(), tr, 0, usbms.LUNOptions{})
	if err != nil {
		t.Fatalf("OpenLUN: %v", err)
	}
	return dev, l, &got
}

// TestAdaptiveTransfer checks that a reader that fails large READs and
// WRITEs gets the same range again at once in smaller commands (240
// blocks, then 64, then 8), keeps the cap, says so once per step, and
// that every byte lands once and reads back.
func TestAdaptiveTransfer(t *testing.T) {
	const mib = 1 << 20
	type row struct {
		name    string
		choke   int64
		mode    sim.ChokeMode
		residue sim.ResidueMode
		wantCap int64 // bytes
		steps   int   // TransferCap notices
	}
	tests := []row{
		{"hangs above 240 blocks", 240, sim.ChokeHang, sim.ResidueTrue, 240 * 512, 1},
		{"stalls above 240 blocks", 240, sim.ChokeStall, sim.ResidueTrue, 240 * 512, 1},
		{"drops off the bus above 240 blocks", 240, sim.ChokeDisconnect, sim.ResidueTrue, 240 * 512, 1},
		{"hangs above 128 blocks", 128, sim.ChokeHang, sim.ResidueTrue, 64 * 512, 2},
		{"stalls above 16 blocks", 16, sim.ChokeStall, sim.ResidueTrue, 8 * 512, 3},
		{"drops off the bus above 16 blocks", 16, sim.ChokeDisconnect, sim.ResidueTrue, 8 * 512, 3},
	}
	// Every way of choking steps down the same ladder, past 240 blocks
	// too, whether the CSW residue tells the truth or not: a reader that
	// drops off the bus at 240 blocks is found again and sent 64.
	for _, mode := range []sim.ChokeMode{sim.ChokeHang, sim.ChokeStall, sim.ChokeDisconnect} {
		for _, residue := range []sim.ResidueMode{sim.ResidueTrue, sim.ResidueGarbage, sim.ResidueOver} {
			name := "choke=64:" + mode.String()
			if residue != sim.ResidueTrue {
				name += "&residue=" + residue.String()
			}
			tests = append(tests, row{name, 64, mode, residue, 64 * 512, 2})
		}
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			cfg := sim.Config{LUNs: []sim.LUN{{Blocks: 16 << 11}}, Misbehaviour: sim.Misbehaviour{ChokeBlocks: tt.choke, ChokeMode: tt.mode, Residue: tt.residue}}
			dev, l, got := virtualRig(t, cfg, 0)
			ctx := context.Background()
			data := pattern(4*mib, 11)
			for off := 0; off < len(data); off += mib {
				if err := l.WriteBlocks(ctx, int64(off/512), data[off:off+mib]); err != nil {
					t.Fatalf("WriteBlocks at %d: %v", off, err)
				}
			}
			back := make([]byte, len(data))
			for off := 0; off < len(back); off += mib {
				if err := l.ReadBlocks(ctx, int64(off/512), back[off:off+mib]); err != nil {
					t.Fatalf("ReadBlocks at %d: %v", off, err)
				}
			}
			if !bytes.Equal(back, data) {
				t.Fatal("what was read back differs from what was written")
			}
			if l.TransferCap() != tt.wantCap {
				t.Errorf("TransferCap() = %d, want %d", l.TransferCap(), tt.wantCap)
			}
			caps := got.of(usbms.NoticeTransferCap)
			if len(caps) != tt.steps || caps[len(caps)-1].Cap != tt.wantCap || caps[0].Failed != mib {
				t.Errorf("transfer-cap notices %+v, want %d ending at %d, the first for 1 MiB", caps, tt.steps, tt.wantCap)
			}
			for _, n := range caps {
				factsonly.Check(t, n.Text)
				if !strings.Contains(n.Text, "WRITE commands of 1 MiB") && n == caps[0] {
					t.Errorf("notice %q does not name the command that failed", n.Text)
				}
			}
			s := dev.Stats()
			if s.Chokes != int64(tt.steps) {
				t.Errorf("%d commands choked, want %d: one per step, reads never", s.Chokes, tt.steps)
			}
			if s.LUNs[0].BlocksWritten < int64(len(data)/512) || s.LUNs[0].WrittenFirst != 0 || s.LUNs[0].WrittenEnd != int64(len(data)/512) {
				t.Errorf("device wrote %d blocks in [%d, %d)", s.LUNs[0].BlocksWritten, s.LUNs[0].WrittenFirst, s.LUNs[0].WrittenEnd)
			}
		})
	}
}

// TestMaxSectors64 checks that a reader with QuirkMaxSectors64 is never
// sent more than 64 blocks, and no notice is needed for it.
func TestMaxSectors64(t *testing.T) {
	cfg := sim.Config{LUNs: []sim.LUN{{Blocks: 8192}}, Misbehaviour: sim.Misbehaviour{ChokeBlocks: 64}}
	dev, l, got := virtualRig(t, cfg, usbms.QuirkMaxSectors64)
	data := pattern(1<<20, 3)
	if err := l.WriteBlocks(context.Background(), 0, data); err != nil {
		t.Fatal(err)
	}
	if s := dev.Stats(); s.Chokes != 0 || s.Opcodes[opWrite10] != 32 || len(got.all) != 0 {
		t.Errorf("%d chokes, %d WRITEs, notices %v; want 0, 32, none", s.Chokes, s.Opcodes[opWrite10], got.all)
	}
}

// TestChokeOnSmallCommand: a reader that fails even 8-block commands gets
// the whole recovery ladder at that size and a clear error.
func TestChokeOnSmallCommand(t *testing.T) {
	cfg := sim.Config{LUNs: []sim.LUN{{Blocks: 8192}}, Misbehaviour: sim.Misbehaviour{ChokeBlocks: 4}}
	_, l, got := virtualRig(t, cfg, 0)
	err := l.WriteBlocks(context.Background(), 0, pattern(1<<20, 3))
	var ce *usbms.CommandError
	if !errors.Is(err, usbms.ErrRecoveryFailed) || !errors.As(err, &ce) || ce.Blocks != 8 {
		t.Fatalf("err = %v, want the ladder's failure of an 8-block WRITE", err)
	}
	if n := len(got.of(usbms.NoticeTransferCap)); n != 3 {
		t.Errorf("%d transfer-cap notices, want 3 (240, 64, 8 blocks)", n)
	}
}

// TestChokeNoticeSizes: the notices of a command that choked give its size
// as every transfer size is given (units.FormatSize), whole KiB or not.
func TestChokeNoticeSizes(t *testing.T) {
	tests := []struct {
		name   string
		mode   sim.ChokeMode
		blocks int
		want   string
	}{
		{"drops off the bus, 503 blocks", sim.ChokeDisconnect, 503, "the reader dropped off the bus during WRITE(10) of 251.5 KiB: resetting the USB port to find it again"},
		{"drops off the bus, 2048 blocks", sim.ChokeDisconnect, 2048, "the reader dropped off the bus during WRITE(10) of 1 MiB: resetting the USB port to find it again"},
		{"stalls, 503 blocks", sim.ChokeStall, 503, "WRITE(10) failed (251.5 KiB): resetting the reader"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			cfg := sim.Config{LUNs: []sim.LUN{{Blocks: 8192}}, Misbehaviour: sim.Misbehaviour{ChokeBlocks: 240, ChokeMode: tt.mode}}
			_, l, got := virtualRig(t, cfg, 0)
			if err := l.WriteBlocks(context.Background(), 0, pattern(tt.blocks*512, 5)); err != nil {
				t.Fatalf("WriteBlocks: %v", err)
			}
			rec := got.of(usbms.NoticeRecovery)
			if len(rec) == 0 || rec[0].Text != tt.want {
				t.Errorf("recovery notices %+v, want the first %q", rec, tt.want)
			}
		})
	}
}
