package main

import (
	"context"
	"errors"
	"fmt"
	"testing"

	"usbflash/blockdev"
	"usbflash/imagesrc"
	"usbflash/pipeline"
	"usbflash/usbms"
	"usbflash/usbms/libusb"
)

func TestExitCodeClassification(t *testing.T) {
	tests := []struct {
		err  error
		want int
	}{
		{nil, exitOK},
		{&usageError{"x"}, exitUsage},
		{&refusedError{"x"}, exitRefused},
		{fmt.Errorf("open: %w", &libusb.Error{Op: "open", Kind: libusb.ErrPermission}), exitDevice},
		{fmt.Errorf("read: %w", usbms.ErrNoDevice), exitDevice},
		{&usbms.CommandError{Op: "WRITE(10)", Err: errors.New("timeout")}, exitDevice},
		{&imagesrc.Error{Err: errors.New("bad")}, exitSource},
		{&pipeline.VerifyError{}, exitVerify},
		{&pipeline.CapacityError{}, exitRefused},
		{&pipeline.CapacityError{Written: 512}, exitRefused}, // found by writing to the end: still does not fit
		{&pipeline.ImageSizeError{}, exitSource},
		{fmt.Errorf("%w: no terminal", errNotConfirmed), exitRefused},
		{fmt.Errorf("sim:x is %w", blockdev.ErrWriteProtected), exitRefused},
		{fmt.Errorf("WRITE: %w", usbms.ErrRecoveryFailed), exitDevice},
		{&pipeline.CancelledError{Err: context.Canceled}, exitCancelled},
		{errors.New("something unforeseen"), exitInternal},
	}
	for _, tt := range tests {
		if got := exitCode(tt.err); got != tt.want {
			t.Errorf("exitCode(%v) = %d, want %d", tt.err, got, tt.want)
		}
	}
}

func TestExplainCancelledInWords(t *testing.T) {
	err := fmt.Errorf("TEST UNIT READY on sim:x LUN 0: %w", context.Canceled)
	if msg, hint := explain(err); msg != "TEST UNIT READY on sim:x LUN 0: cancelled" || hint != "" {
		t.Errorf("explain = %q, %q", msg, hint)
	}
}

// TestOneAdviceForUSBErrors: a USB error that carries its own advice gets
// no second piece from the CLI, even under the end of the recovery ladder
// (which has advice of its own for errors without any).
func TestOneAdviceForUSBErrors(t *testing.T) {
	withHint := fmt.Errorf("%w: %w", usbms.ErrRecoveryFailed,
		&libusb.Error{Op: "bulk OUT transfer", Hint: "use a smaller transfer chunk or raise that limit"})
	if h := hint(withHint); h != "" {
		t.Errorf("hint = %q, want none: the error already gives advice", h)
	}
	if h := hint(fmt.Errorf("%w: no answer", usbms.ErrRecoveryFailed)); h == "" {
		t.Error("the end of the recovery ladder without USB advice got no hint")
	}
}
