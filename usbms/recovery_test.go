package usbms_test

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/usbflash/usbflash/internal/testkit/factsonly"
	"github.com/usbflash/usbflash/scsi"
	"github.com/usbflash/usbflash/usbms"
	"github.com/usbflash/usbflash/usbms/sim"
)

const (
	faultLBA = 1000
	// faultBlocks is small enough (4 KiB) that no smaller command would
	// be tried instead: the faults meet the recovery ladder itself.
	// adapt_test.go has the larger commands.
	faultBlocks = 8
	opWrite10   = 0x2A
	opRead10    = 0x28
	opSense     = 0x03
)

// delta is what the device counted during the faulty command.
type delta struct {
	commands, botResets, clearIn, clearOut, portResets int64
	writes, reads, senses                              int64
}

func diff(a, b sim.Stats) delta {
	return delta{
		commands:   b.Commands - a.Commands,
		botResets:  b.BOTResets - a.BOTResets,
		clearIn:    b.ClearHaltsIn - a.ClearHaltsIn,
		clearOut:   b.ClearHaltsOut - a.ClearHaltsOut,
		portResets: b.PortResets - a.PortResets,
		writes:     b.Opcodes[opWrite10] - a.Opcodes[opWrite10],
		reads:      b.Opcodes[opRead10] - a.Opcodes[opRead10],
		senses:     b.Opcodes[opSense] - a.Opcodes[opSense],
	}
}

// wantCommandError checks that err is a *usbms.CommandError for the faulty
// command's whole range and that its message names that range.
func wantCommandError(t *testing.T, err error, op string) *usbms.CommandError {
	t.Helper()
	var ce *usbms.CommandError
	if !errors.As(err, &ce) {
		t.Fatalf("err = %v (%T), want a *usbms.CommandError", err, err)
	}
	if ce.Op != op || ce.LUN != 0 || ce.LBA != faultLBA || ce.Blocks != faultBlocks {
		t.Errorf("CommandError = {Op %q LUN %d LBA %d Blocks %d}, want {%q 0 %d %d}", ce.Op, ce.LUN, ce.LBA, ce.Blocks, op, faultLBA, faultBlocks)
	}
	rng := fmt.Sprintf("LBA %d-%d", faultLBA, faultLBA+faultBlocks-1)
	if !strings.Contains(err.Error(), rng) {
		t.Errorf("message %q does not name %q", err, rng)
	}
	return ce
}

// TestRecoveryFromFaults injects each fault of the simulator into one WRITE
// or READ of 8 blocks at LBA 1000 and checks what the host did about it.
func TestRecoveryFromFaults(t *testing.T) {
	tests := []struct {
		name  string
		fault sim.Fault
		read  bool // fault a READ of data written beforehand, not a WRITE
		// wroteBefore makes the LUN write a block first, so the fault
		// lands mid-write.
		wroteBefore   bool
		failPortReset bool
		check         func(t *testing.T, d delta, err error)
		after         func(t *testing.T, r *rig) // optional, after check
	}{
		{name: "StallDataOut", fault: sim.Fault{Kind: sim.StallDataOut, AfterBytes: 2048},
			check: func(t *testing.T, d delta, err error) {
				// Clear the halt, read the CSW (failed, ABORTED COMMAND),
				// then the WRITE again; no reset needed.
				if err != nil || d.clearOut != 1 || d.writes != 2 || d.botResets != 0 {
					t.Errorf("err %v, %+v; want nil, 1 clear-out, 2 WRITEs, no reset", err, d)
				}
			}},
		{name: "StallDataIn", fault: sim.Fault{Kind: sim.StallDataIn, AfterBytes: 2048}, read: true,
			check: func(t *testing.T, d delta, err error) {
				if err != nil || d.clearIn != 1 || d.reads != 2 || d.botResets != 0 {
					t.Errorf("err %v, %+v; want nil, 1 clear-in, 2 READs, no reset", err, d)
				}
			}},
		{name: "StallCSW once", fault: sim.Fault{Kind: sim.StallCSW},
			check: func(t *testing.T, d delta, err error) {
				if err != nil || d.clearIn != 1 || d.writes != 1 || d.botResets != 0 {
					t.Errorf("err %v, %+v; want nil, 1 clear-in, 1 WRITE, no reset", err, d)
				}
			}},
		{name: "StallCSW twice", fault: sim.Fault{Kind: sim.StallCSW, Count: 2},
			check: func(t *testing.T, d delta, err error) {
				// Second stall: reset recovery (which clears both halts)
				// and the command once more.
				if err != nil || d.botResets != 1 || d.clearIn != 2 || d.clearOut != 1 || d.writes != 2 {
					t.Errorf("err %v, %+v; want nil, 1 reset, 2 clear-in, 1 clear-out, 2 WRITEs", err, d)
				}
			}},
		{name: "BadCSWSignature", fault: sim.Fault{Kind: sim.BadCSWSignature},
			check: wantOneReset},
		{name: "BadCSWTag", fault: sim.Fault{Kind: sim.BadCSWTag},
			check: wantOneReset},
		{name: "PhaseError", fault: sim.Fault{Kind: sim.PhaseError},
			check: wantOneReset},
		{name: "ShortDataIn", fault: sim.Fault{Kind: sim.ShortDataIn, AfterBytes: 512 * 3}, read: true,
			check: func(t *testing.T, d delta, err error) {
				if err != nil || d.reads != 2 || d.botResets != 0 {
					t.Errorf("err %v, %+v; want nil, the READ repeated once, no reset", err, d)
				}
			}},
		{name: "UnitAttention before writing", fault: sim.Fault{Kind: sim.UnitAttention},
			check: func(t *testing.T, d delta, err error) {
				if err != nil || d.writes != 2 || d.senses != 1 {
					t.Errorf("err %v, %+v; want nil, 2 WRITEs, 1 REQUEST SENSE", err, d)
				}
			}},
		{name: "UnitAttention mid-write", fault: sim.Fault{Kind: sim.UnitAttention}, wroteBefore: true,
			check: func(t *testing.T, d delta, err error) {
				wantCommandError(t, err, "WRITE(10)")
				if !errors.Is(err, usbms.ErrMediumChanged) || !scsi.IsMediumChanged(err) || d.writes != 1 {
					t.Errorf("err %v, %+v; want ErrMediumChanged wrapping 6/28 and no second WRITE", err, d)
				}
			}, after: func(t *testing.T, r *rig) {
				// The card in the slot is not the one written to: stay
				// failed rather than write the rest of the image to it.
				before := r.dev.Stats()
				err := r.lun.WriteBlocks(context.Background(), faultLBA+faultBlocks, pattern(512, 1))
				if !errors.Is(err, usbms.ErrMediumChanged) || r.dev.Stats().Commands != before.Commands {
					t.Errorf("next write: err %v; want ErrMediumChanged without a command", err)
				}
			}},
		{name: "NotReady twice", fault: sim.Fault{Kind: sim.NotReady, Count: 2},
			check: func(t *testing.T, d delta, err error) {
				if err != nil || d.writes != 3 || d.botResets != 0 {
					t.Errorf("err %v, %+v; want nil, 3 WRITEs, no reset", err, d)
				}
			}},
		{name: "NotReady persistent", fault: sim.Fault{Kind: sim.NotReady, Persistent: true},
			check: func(t *testing.T, d delta, err error) {
				wantCommandError(t, err, "WRITE(10)")
				// ReadyWait/RetryBackoff = 50 waits, then give up.
				if !scsi.IsBecomingReady(err) || !errors.Is(err, usbms.ErrNotReady) || d.writes != 51 {
					t.Errorf("err %v, %+v; want ErrNotReady, becoming ready after 51 WRITEs", err, d)
				}
				factsonly.Check(t, err.Error())
			}},
		{name: "MediumError write once: repeated, as Linux's sd does", fault: sim.Fault{Kind: sim.MediumError, LBA: faultLBA + 5},
			check: func(t *testing.T, d delta, err error) {
				if err != nil || d.writes != 2 {
					t.Errorf("err %v, %d WRITEs; want nil after 2", err, d.writes)
				}
			}},
		{name: "MediumError write persistent", fault: sim.Fault{Kind: sim.MediumError, LBA: faultLBA + 5, Persistent: true},
			check: func(t *testing.T, d delta, err error) {
				wantCommandError(t, err, "WRITE(10)")
				se, ok := scsi.AsSense(err)
				if !ok || se.Key != scsi.MediumError || se.ASC != scsi.ASCWriteError || !se.Valid || se.Information != faultLBA+5 {
					t.Errorf("sense = %+v, want 3/0C with INFORMATION %d", se, faultLBA+5)
				}
				if d.writes != 1+usbms.DefaultRetries {
					t.Errorf("%d WRITEs, want %d: a write error is repeated %d times", d.writes, 1+usbms.DefaultRetries, usbms.DefaultRetries)
				}
			}},
		{name: "MediumError read", fault: sim.Fault{Kind: sim.MediumError, LBA: faultLBA + 7}, read: true,
			// An unrecovered read is not repeated.
			check: func(t *testing.T, d delta, err error) {
				wantCommandError(t, err, "READ(10)")
				se, ok := scsi.AsSense(err)
				if !ok || se.Key != scsi.MediumError || se.ASC != scsi.ASCUnrecoveredRead || se.Information != faultLBA+7 {
					t.Errorf("sense = %+v, want 3/11 with INFORMATION %d", se, faultLBA+7)
				}
				if !strings.Contains(err.Error(), "unrecovered read error") {
					t.Errorf("message %q does not say what failed", err)
				}
			}},
		{name: "Disconnect", fault: sim.Fault{Kind: sim.Disconnect, AfterBytes: 2048},
			check: func(t *testing.T, d delta, err error) {
				wantCommandError(t, err, "WRITE(10)")
				if !errors.Is(err, usbms.ErrNoDevice) || !strings.Contains(err.Error(), "disconnected") {
					t.Errorf("err = %v, want ErrNoDevice saying the device disconnected", err)
				}
				if d.botResets != 0 || d.portResets != 0 || d.clearIn+d.clearOut != 0 {
					t.Errorf("%+v: recovery was attempted on a gone device", d)
				}
			}},
		{name: "NeverAnswer once", fault: sim.Fault{Kind: sim.NeverAnswer},
			check: wantOneReset},
		{name: "NeverAnswer persistent", fault: sim.Fault{Kind: sim.NeverAnswer, Persistent: true},
			check: func(t *testing.T, d delta, err error) {
				// Two resets do not help; the port reset clears the
				// fault, and the UNIT ATTENTION it raises is retried.
				if err != nil || d.botResets != usbms.DefaultMaxResets || d.portResets != 1 {
					t.Errorf("err %v, %+v; want nil after %d resets and a port reset", err, d, usbms.DefaultMaxResets)
				}
			}},
		{name: "NeverAnswer persistent, port reset fails", fault: sim.Fault{Kind: sim.NeverAnswer, Persistent: true}, failPortReset: true,
			check: func(t *testing.T, d delta, err error) {
				wantCommandError(t, err, "WRITE(10)")
				if !errors.Is(err, context.DeadlineExceeded) || !strings.Contains(err.Error(), "no answer within") {
					t.Errorf("err = %v, want a timeout", err)
				}
				if d.botResets < usbms.DefaultMaxResets {
					t.Errorf("%d resets, want at least %d", d.botResets, usbms.DefaultMaxResets)
				}
			}},
		{name: "BadCSWSignature persistent, port reset fails", fault: sim.Fault{Kind: sim.BadCSWSignature, Persistent: true}, failPortReset: true,
			check: func(t *testing.T, d delta, err error) {
				wantCommandError(t, err, "WRITE(10)")
				if !errors.Is(err, usbms.ErrInvalidCSW) || d.writes != 1+usbms.DefaultMaxResets {
					t.Errorf("err %v, %+v; want ErrInvalidCSW after %d WRITEs", err, d, 1+usbms.DefaultMaxResets)
				}
			}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := newRig(t, oneLUN(8192), testTransport)
			r.wire.failPortReset = tt.failPortReset
			ctx := context.Background()
			data := pattern(faultBlocks*512, 7)
			if tt.read {
				if err := r.lun.WriteBlocks(ctx, faultLBA, data); err != nil {
					t.Fatal(err)
				}
			}
			if tt.wroteBefore {
				if err := r.lun.WriteBlocks(ctx, 0, pattern(512, 1)); err != nil {
					t.Fatal(err)
				}
			}
			before := r.dev.Stats()
			tt.fault.LUN = 0
			r.dev.Inject(tt.fault)
			var err error
			got := make([]byte, len(data))
			if tt.read {
				err = r.lun.ReadBlocks(ctx, faultLBA, got)
			} else {
				err = r.lun.WriteBlocks(ctx, faultLBA, data)
			}
			after := r.dev.Stats()
			tt.check(t, diff(before, after), err)
			if tt.after != nil {
				tt.after(t, r)
			}
			if err != nil {
				return
			}
			if tt.read {
				if string(got) != string(data) {
					t.Errorf("data read after recovery differs from what was written")
				}
				return
			}
			r.readBack(t, faultLBA, data)
		})
	}
}

// wantOneReset is the outcome of a single invalid or missing CSW: reset
// recovery (Mass Storage Reset, clear IN, clear OUT), then the WRITE again.
func wantOneReset(t *testing.T, d delta, err error) {
	t.Helper()
	if err != nil || d.botResets != 1 || d.clearIn != 1 || d.clearOut != 1 || d.writes != 2 || d.portResets != 0 {
		t.Errorf("err %v, %+v; want nil, 1 reset, 1 clear-in, 1 clear-out, 2 WRITEs", err, d)
	}
}
