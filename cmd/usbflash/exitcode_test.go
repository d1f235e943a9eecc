package main

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"syscall"
	"testing"

	"github.com/usbflash/usbflash/internal/customize"
	"github.com/usbflash/usbflash/internal/drive"
	"github.com/usbflash/usbflash/internal/failure"
	"github.com/usbflash/usbflash/internal/image"
	"github.com/usbflash/usbflash/internal/image/imagedst"
	"github.com/usbflash/usbflash/internal/lib/outfile"
	"github.com/usbflash/usbflash/internal/probe/cardbench"
	"github.com/usbflash/usbflash/internal/probe/region"
	"github.com/usbflash/usbflash/internal/session"
	"github.com/usbflash/usbflash/internal/ui/termui"
	"github.com/usbflash/usbflash/pipeline"
	"github.com/usbflash/usbflash/pipeline/blockdev"
	"github.com/usbflash/usbflash/pipeline/filedev"
	"github.com/usbflash/usbflash/usbms"
	"github.com/usbflash/usbflash/usbms/usbdev"
)

func TestExitCodeClassification(t *testing.T) {
	t.Parallel()
	tests := []struct {
		err  error
		want int
	}{
		{nil, exitOK},
		{&usageError{"x"}, exitUsage},
		{&refusedError{"x"}, exitRefused},
		{fmt.Errorf("open: %w", &usbdev.Error{Op: "open", Kind: usbdev.ErrPermission}), exitDevice},
		{fmt.Errorf("read: %w", usbms.ErrNoDevice), exitDevice},
		{&usbms.CommandError{Op: "WRITE(10)", Err: errors.New("timeout")}, exitDevice},
		{&image.Error{Err: errors.New("bad")}, exitSource},
		{&image.Error{Kind: image.ErrUnsupported, Container: "RAR archive", Err: errors.New("a RAR archive")}, exitSource},
		{failure.Wrap(failure.Image, errors.New("open image: no such file")), exitSource},
		{&filedev.TargetError{Path: "/tmp", Kind: filedev.ErrWrongType, What: "is a directory"}, exitUsage},
		{fmt.Errorf("WRITE: %w", &usbdev.Error{Op: "bulk OUT transfer", Kind: usbdev.ErrNoMemory}), exitDevice},
		{fmt.Errorf("WRITE: %w", &usbdev.Error{Op: "re-opening", Kind: usbdev.ErrReenumerationLost}), exitDevice},
		{fmt.Errorf("list: %w", usbdev.ErrNoUSBSupport), exitDevice},
		{&usbms.CommandError{Op: "TEST UNIT READY", Device: "sim:x", Err: fmt.Errorf("%w after 5s", usbms.ErrNotReady)}, exitDevice},
		{&pipeline.VerifyError{}, exitVerify},
		{&blockdev.CapacityError{}, exitRefused},
		{&blockdev.CapacityError{Written: 512}, exitRefused}, // found by writing to the end: still does not fit
		{&pipeline.ImageSizeError{}, exitSource},
		{fmt.Errorf("%w: no terminal", termui.ErrNotConfirmed), exitRefused},
		{fmt.Errorf("sim:x is %w", blockdev.ErrWriteProtected), exitRefused},
		{&drive.Error{Err: drive.ErrInUse}, exitRefused},
		{&drive.Error{Err: drive.ErrNotFound}, exitDevice},
		{&session.MemoryError{}, exitUsage},
		{&session.RefusedError{}, exitRefused},
		{&image.ReadError{Err: errors.New("open os.img: no such file")}, exitSource},
		{&image.BlockMapError{Unreadable: true}, exitSource},
		{&image.BlockMapError{}, exitRefused},
		{&session.CardsError{Succeeded: 1, Failed: 1, Errs: []error{&pipeline.VerifyError{}}}, exitPartial},
		{&session.CardsError{Failed: 2, Errs: []error{&pipeline.VerifyError{}, &pipeline.VerifyError{}}}, exitVerify},
		{&session.CardsError{Failed: 2, Errs: []error{&pipeline.VerifyError{}, usbms.ErrNoDevice}}, exitDevice},
		{fmt.Errorf("WRITE: %w", usbms.ErrRecoveryFailed), exitDevice},
		{&pipeline.CancelledError{Err: context.Canceled}, exitCancelled},
		{cardbench.Plan{Sizes: []int64{2 << 30}}.Check(), exitUsage},
		{&region.RestoreError{Err: errors.New("medium error")}, exitDevice},
		{errors.Join(context.Canceled, &region.RestoreError{Err: errors.New("medium error")}), exitDevice}, // the region is not back
		{&region.RestoreError{Aborted: true}, exitCancelled},
		{&imagedst.ExistsError{Path: "b.img"}, exitRefused},
		{&imagedst.SizeError{}, exitRefused},
		{&imagedst.VerifyError{Err: &pipeline.VerifyError{HashOnly: true}}, exitVerify},
		{&imagedst.VerifyError{Err: &pipeline.DeviceError{Err: usbms.ErrNoDevice}}, exitDevice},
		{&imagedst.BlockMapError{Err: &outfile.Error{Op: outfile.OpWrite, Err: syscall.ENOSPC}}, exitDevice},
		{&outfile.Error{Op: outfile.OpCreate, Err: syscall.ENOENT}, exitUsage},
		{fmt.Errorf("writing the backup: %w", &outfile.Error{Op: outfile.OpWrite, Err: syscall.ENOSPC}), exitDevice},
		{errors.New("something unforeseen"), exitInternal},
	}
	for _, tt := range tests {
		if got := exitCode(tt.err); got != tt.want {
			t.Errorf("exitCode(%v) = %d, want %d", tt.err, got, tt.want)
		}
	}
}

// TestExplainInWords: what reaches a person of an error with no kind of
// its own: a context's errors in words, not Go's, and the end of the
// recovery ladder with advice of its own.
func TestExplainInWords(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		err       error
		msg, hint string // "*": any
	}{
		{fmt.Errorf("TEST UNIT READY on sim:x LUN 0: %w", context.Canceled), "TEST UNIT READY on sim:x LUN 0: cancelled", ""},
		{fmt.Errorf("opening usb:1.4: %w", context.DeadlineExceeded), "*", "*"},
		{fmt.Errorf("listing readers: %w: after 3 tries", context.Canceled), "*", ""},
		{fmt.Errorf("%w: no answer", usbms.ErrRecoveryFailed), "*", "unplug the reader, plug it in again, and run the command again"},
		// A setting is named by its flag, one wording for every setting
		// (settingFlags), and keeps its class and advice: a value the
		// card gave stays a refusal.
		{&failure.SettingError{Setting: usbms.SettingTransport, Err: errors.New(`"foo": no such transport`)}, `--transport: "foo": no such transport`, ""},
		{fmt.Errorf("benchmark: %w", &failure.SettingError{Setting: cardbench.SettingSizes, Err: errors.New("64 GiB is too large")}), "benchmark: --sizes: 64 GiB is too large", ""},
		{fmt.Errorf("customising sim:c.img: %w", &customize.DeviceValueError{Err: &failure.SettingError{Setting: customize.SettingHostname, Err: errors.New(`"pi-{usb_serial}" breaks the rule`)}}),
			`customising sim:c.img: --hostname: "pi-{usb_serial}" breaks the rule (with this card's serials)`, "leave the serial out of the template ({n} numbers the cards), or use another reader"},
	} {
		msg, hint := explain(tc.err)
		if strings.Contains(msg, "context") || tc.msg != "*" && msg != tc.msg || tc.hint != "*" && hint != tc.hint {
			t.Errorf("explain(%v) = %q, %q; want %q, %q", tc.err, msg, hint, tc.msg, tc.hint)
		}
		if got, want := exitCode(inFlagWords(tc.err)), exitCode(tc.err); got != want {
			t.Errorf("%v in the flags' words: exit %d, want %d", tc.err, got, want)
		}
	}
}
