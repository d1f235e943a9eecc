package usbms_test

import (
	"context"
	"errors"
	"testing"

	"github.com/usbflash/usbflash/usbms"
	"github.com/usbflash/usbflash/usbms/sim"
)

func TestTestUnitReady(t *testing.T) {
	tests := []struct {
		name         string
		fault        *sim.Fault
		wantGone     bool
		wantCommands int64 // TEST UNIT READY commands the device saw
	}{
		{name: "ready", wantCommands: 1},
		{name: "unit attention is retried", fault: &sim.Fault{Kind: sim.UnitAttention}, wantCommands: 2},
		{name: "becoming ready is waited for", fault: &sim.Fault{Kind: sim.NotReady, Count: 2}, wantCommands: 3},
		{name: "a reader gone fails", fault: &sim.Fault{Kind: sim.Disconnect}, wantGone: true, wantCommands: 0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := newRig(t, oneLUN(2048), testTransport)
			before := r.dev.Stats().Opcodes[0x00]
			if tt.fault != nil {
				r.dev.Inject(*tt.fault)
			}
			err := r.lun.TestUnitReady(context.Background())
			if tt.wantGone != errors.Is(err, usbms.ErrNoDevice) || (!tt.wantGone && err != nil) {
				t.Fatalf("TestUnitReady() = %v, want gone %v", err, tt.wantGone)
			}
			if got := r.dev.Stats().Opcodes[0x00] - before; got != tt.wantCommands {
				t.Errorf("device saw %d TEST UNIT READY, want %d", got, tt.wantCommands)
			}
		})
	}
}
