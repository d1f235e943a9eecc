package usbms_test

import (
	"context"
	"errors"
	"reflect"
	"strings"
	"testing"

	"github.com/usbflash/usbflash/usbms"
	"github.com/usbflash/usbflash/usbms/sim"
)

// TestRecoveryTellsEachStep: a reader that stops answering costs a timeout
// per attempt, so every step of the ladder is announced before it is taken.
func TestRecoveryTellsEachStep(t *testing.T) {
	tests := []struct {
		name  string
		fault sim.Fault
		want  []string
	}{
		{"NeverAnswer once", sim.Fault{Kind: sim.NeverAnswer}, []string{
			"no answer to WRITE(10) for 200ms: resetting the reader (reset 1 of 2)",
		}},
		{"NeverAnswer persistent", sim.Fault{Kind: sim.NeverAnswer, Persistent: true}, []string{
			"no answer to WRITE(10) for 200ms: resetting the reader (reset 1 of 2)",
			"no answer to WRITE(10) for 200ms: resetting the reader (reset 2 of 2)",
			"no answer to WRITE(10) for 200ms after 2 resets: resetting the USB port",
		}},
		{"bad CSW once", sim.Fault{Kind: sim.BadCSWSignature}, []string{
			"WRITE(10) failed: resetting the reader (reset 1 of 2)",
		}},
		{"no fault", sim.Fault{}, nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var got []string
			opts := testTransport
			opts.OnRecovery = func(step string) { got = append(got, step) }
			r := newRig(t, oneLUN(8192), opts)
			if tt.fault.Kind != 0 {
				r.dev.Inject(tt.fault)
			}
			if err := r.lun.WriteBlocks(context.Background(), 64, pattern(4096, 3)); err != nil {
				t.Fatalf("WriteBlocks: %v", err)
			}
			if !reflect.DeepEqual(got, tt.want) {
				t.Errorf("recovery notices %q, want %q", got, tt.want)
			}
		})
	}
}

// TestRecoveryFailedSaysWhatHappened: a command the reader never answers,
// through the whole ladder, is told as the user saw it: no answer for so
// long, and what was tried; not the transfer step that was waiting.
func TestRecoveryFailedSaysWhatHappened(t *testing.T) {
	tests := []struct {
		name string
		cfg  sim.Config
		run  func(ctx context.Context, l *usbms.LUN) error
		want string
	}{
		{"SYNCHRONIZE CACHE never answered", sim.Config{LUNs: []sim.LUN{{Blocks: 8192}},
			Misbehaviour: sim.Misbehaviour{Hang: []sim.HangCommand{sim.HangSync}, WriteCache: true}},
			func(ctx context.Context, l *usbms.LUN) error { return l.Sync(ctx) },
			"the reader did not recover: no answer to SYNCHRONIZE CACHE(10) within 20s, nor after 2 resets and a USB port reset"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, l, _ := virtualRig(t, tt.cfg, 0)
			err := tt.run(context.Background(), l)
			if !errors.Is(err, usbms.ErrRecoveryFailed) || !errors.Is(err, context.DeadlineExceeded) {
				t.Fatalf("err = %v, want the end of the recovery ladder after a timeout", err)
			}
			if got := err.Error(); !strings.HasSuffix(got, ": "+tt.want) {
				t.Errorf("err = %q\nwant it to end %q", got, tt.want)
			}
		})
	}
}
