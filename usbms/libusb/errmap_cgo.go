//go:build cgo && !nousb && (libusb || !(linux || darwin || windows))

package libusb

import (
	"context"
	"errors"
	"regexp"
	"strconv"

	"github.com/google/gousb"

	"github.com/usbflash/usbflash/usbms"
	"github.com/usbflash/usbflash/usbms/usbdev"
)

// libusbCode recovers the libusb error behind err. gousb returns its Error
// and TransferStatus types directly from transfers and Control, but wraps
// claim and set-configuration failures with %v (config.go, device.go), which
// drops the type; their text keeps gousb's "[code N]" suffix, so the code is
// read back from it.
func libusbCode(err error) (gousb.Error, gousb.TransferStatus, bool) {
	var ge gousb.Error
	if errors.As(err, &ge) {
		return ge, 0, true
	}
	var ts gousb.TransferStatus
	if errors.As(err, &ts) {
		return 0, ts, true
	}
	if m := codeRE.FindStringSubmatch(err.Error()); m != nil {
		if n, perr := strconv.Atoi(m[1]); perr == nil && n < 0 {
			return gousb.Error(n), 0, true
		}
	}
	return 0, 0, false
}

// codeRE matches the suffix of gousb.Error.Error(): "libusb: busy [code -6]".
// A compiled regexp is immutable, so this is not mutable package state.
var codeRE = regexp.MustCompile(`\[code (-\d+)\]`)

// mapError builds the *Error a failed call returns: the sentinel the BOT
// layer and the CLI match on, and the facts about the device.
func mapError(ctx context.Context, op string, info usbdev.Info, err error) error {
	if err == nil {
		return nil
	}
	var already *usbdev.Error
	if errors.As(err, &already) {
		return err
	}
	e := usbdev.NewError(op, info, nil, err)
	ge, ts, ok := libusbCode(err)
	if !ok {
		if ctxErr := ctx.Err(); ctxErr != nil {
			e.Kind = ctxErr
		}
		return e
	}
	switch {
	case ts == gousb.TransferStall || ge == gousb.ErrorPipe:
		e.Kind = usbms.ErrStall
	case ts == gousb.TransferNoDevice || ge == gousb.ErrorNoDevice:
		e.Kind = usbms.ErrNoDevice
	case ts == gousb.TransferCancelled || ts == gousb.TransferTimedOut ||
		ge == gousb.ErrorTimeout || ge == gousb.ErrorInterrupted:
		// gousb cancels a transfer when ctx is done (transfer.go wait);
		// report the context's reason so callers can errors.Is it.
		if ctxErr := ctx.Err(); ctxErr != nil {
			e.Kind = ctxErr
		}
	case ge == gousb.ErrorAccess:
		e.Kind = usbdev.ErrPermission
	case ge == gousb.ErrorBusy:
		e.Kind = usbdev.ErrBusy
	case ge == gousb.ErrorNoMem:
		e.Kind = usbdev.ErrNoMemory
	case ge == gousb.ErrorNotFound:
		e.Kind = usbdev.ErrNotFound
	case ts == gousb.TransferOverflow || ge == gousb.ErrorOverflow:
		e.Kind = usbdev.ErrOverflow
	}
	return e
}
