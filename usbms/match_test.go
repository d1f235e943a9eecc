package usbms_test

import (
	"errors"
	"fmt"
	"testing"

	"github.com/usbflash/usbflash/internal/testkit/factsonly"
	"github.com/usbflash/usbflash/scsi"
	"github.com/usbflash/usbflash/usbms"
)

func TestMediumPredicates(t *testing.T) {
	sense := func(key scsi.SenseKey, asc uint8) error {
		return &usbms.CommandError{Op: "WRITE(10)", Device: "sim:x", LBA: 8, Blocks: 8,
			Err: &scsi.SenseError{Key: key, ASC: asc}}
	}
	tests := []struct {
		name                     string
		err                      error
		noMedium, medium, change bool
	}{
		{"empty slot", sense(scsi.NotReady, scsi.ASCMediumNotPresent), true, false, false},
		{"card pulled", sense(scsi.UnitAttention, scsi.ASCMediumNotPresent), true, false, true},
		{"card swapped", sense(scsi.UnitAttention, scsi.ASCMediumChanged), false, false, true},
		{"changed after writing", fmt.Errorf("%w: %w", usbms.ErrMediumChanged, errors.New("x")), false, false, true},
		{"write error", sense(scsi.MediumError, scsi.ASCWriteError), false, true, false},
		{"stall", usbms.ErrStall, false, false, false},
	}
	for _, tt := range tests {
		if got := usbms.IsNoMedium(tt.err); got != tt.noMedium {
			t.Errorf("%s: IsNoMedium = %v", tt.name, got)
		}
		if got := usbms.IsMediumError(tt.err); got != tt.medium {
			t.Errorf("%s: IsMediumError = %v", tt.name, got)
		}
		if got := usbms.IsMediumChanged(tt.err); got != tt.change {
			t.Errorf("%s: IsMediumChanged = %v", tt.name, got)
		}
		factsonly.Check(t, tt.err.Error())
	}
	if !usbms.HasSense(sense(scsi.HardwareError, 0)) || usbms.HasSense(usbms.ErrStall) {
		t.Error("HasSense is wrong")
	}
}

// TestErrorTextsStateFacts: the transport's kinds say what happened, not
// what to do.
func TestErrorTextsStateFacts(t *testing.T) {
	for _, err := range []error{usbms.ErrInvalidCSW, usbms.ErrPhaseError, usbms.ErrIncomplete,
		usbms.ErrMediumChanged, usbms.ErrRecoveryFailed, usbms.ErrNotReady,
		usbms.ErrStall, usbms.ErrNoDevice} {
		factsonly.Check(t, err.Error())
	}
}
