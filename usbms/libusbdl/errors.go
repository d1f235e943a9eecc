//go:build linux || darwin || windows

package libusbdl

import (
	"context"
	"errors"
	"fmt"

	"github.com/usbflash/usbflash/usbms"
	"github.com/usbflash/usbflash/usbms/usbdev"
)

// Code is a libusb error code (enum libusb_error), as a function returns it.
type Code int32

// libusb's error codes.
const (
	ErrIO           Code = -1
	ErrInvalidParam Code = -2
	ErrAccess       Code = -3
	ErrNoDevice     Code = -4
	ErrNotFound     Code = -5
	ErrBusy         Code = -6
	ErrTimeout      Code = -7
	ErrOverflow     Code = -8
	ErrPipe         Code = -9
	ErrInterrupted  Code = -10
	ErrNoMem        Code = -11
	ErrNotSupported Code = -12
	ErrOther        Code = -99
)

var codeNames = map[Code]string{
	ErrIO: "LIBUSB_ERROR_IO (input/output error)", ErrInvalidParam: "LIBUSB_ERROR_INVALID_PARAM (invalid parameter)",
	ErrAccess: "LIBUSB_ERROR_ACCESS (access denied)", ErrNoDevice: "LIBUSB_ERROR_NO_DEVICE (no such device)",
	ErrNotFound: "LIBUSB_ERROR_NOT_FOUND (entity not found)", ErrBusy: "LIBUSB_ERROR_BUSY (resource busy)",
	ErrTimeout: "LIBUSB_ERROR_TIMEOUT (operation timed out)", ErrOverflow: "LIBUSB_ERROR_OVERFLOW (overflow)",
	ErrPipe: "LIBUSB_ERROR_PIPE (pipe error)", ErrInterrupted: "LIBUSB_ERROR_INTERRUPTED (system call interrupted)",
	ErrNoMem: "LIBUSB_ERROR_NO_MEM (insufficient memory)", ErrNotSupported: "LIBUSB_ERROR_NOT_SUPPORTED (operation not supported)",
	ErrOther: "LIBUSB_ERROR_OTHER (other error)",
}

func (c Code) Error() string {
	if s, ok := codeNames[c]; ok {
		return "libusb: " + s
	}
	return fmt.Sprintf("libusb: error %d", int32(c))
}

// Status is how a transfer ended (enum libusb_transfer_status), when
// not LIBUSB_TRANSFER_COMPLETED.
type Status int32

func (s Status) Error() string {
	switch s {
	case statusError:
		return "libusb: transfer failed (LIBUSB_TRANSFER_ERROR)"
	case statusTimedOut:
		return "libusb: transfer timed out (LIBUSB_TRANSFER_TIMED_OUT)"
	case statusCancelled:
		return "libusb: transfer cancelled (LIBUSB_TRANSFER_CANCELLED)"
	case statusStall:
		return "libusb: endpoint stalled (LIBUSB_TRANSFER_STALL)"
	case statusNoDevice:
		return "libusb: device disconnected (LIBUSB_TRANSFER_NO_DEVICE)"
	case statusOverflow:
		return "libusb: device sent more than asked for (LIBUSB_TRANSFER_OVERFLOW)"
	}
	return fmt.Sprintf("libusb: transfer status %d", int32(s))
}

// kindOf is the usbdev (or usbms) kind of a libusb error or transfer
// status, the one usbfs and the cgo backend give for the same failure, so
// that exit codes and advice do not depend on the backend. A cancelled or
// timed-out transfer has the context's error as its kind when ctx is
// done, none otherwise.
func kindOf(ctx context.Context, err error) error {
	var c Code
	var s Status
	switch {
	case errors.As(err, &s):
		switch s {
		case statusStall:
			return usbms.ErrStall
		case statusNoDevice:
			return usbms.ErrNoDevice
		case statusOverflow:
			return usbdev.ErrOverflow
		case statusCancelled, statusTimedOut:
			return ctx.Err()
		}
	case errors.As(err, &c):
		switch c {
		case ErrPipe:
			return usbms.ErrStall
		case ErrNoDevice:
			return usbms.ErrNoDevice
		case ErrAccess:
			return usbdev.ErrPermission
		case ErrBusy:
			return usbdev.ErrBusy
		case ErrNoMem:
			return usbdev.ErrNoMemory
		case ErrNotFound:
			return usbdev.ErrNotFound
		case ErrOverflow:
			return usbdev.ErrOverflow
		case ErrTimeout, ErrInterrupted:
			return ctx.Err()
		}
	}
	return nil
}

// mapError wraps err (a Code, a Status, or a context error) as the
// *usbdev.Error of its kind; one that already is one is returned as is.
func mapError(ctx context.Context, op string, info usbdev.Info, err error) error {
	if err == nil {
		return nil
	}
	var already *usbdev.Error
	if errors.As(err, &already) {
		return err
	}
	if errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded) {
		return usbdev.NewError(op, info, err, nil)
	}
	e := usbdev.NewError(op, info, kindOf(ctx, err), err)
	if e.Kind == nil {
		if ctxErr := ctx.Err(); ctxErr != nil {
			e.Kind = ctxErr
		}
	}
	return e
}
