//go:build linux

package usbfs

import (
	"context"
	"errors"

	"golang.org/x/sys/unix"

	"github.com/usbflash/usbflash/usbms"
	"github.com/usbflash/usbflash/usbms/usbdev"
)

// ioctlKind maps the errno of a failed ioctl or open to an error kind.
func ioctlKind(errno unix.Errno) error {
	switch errno {
	case unix.EPIPE:
		return usbms.ErrStall
	case unix.ENODEV, unix.ESHUTDOWN:
		return usbms.ErrNoDevice
	case unix.EACCES, unix.EPERM:
		return usbdev.ErrPermission
	case unix.EBUSY:
		return usbdev.ErrBusy
	case unix.ENOMEM:
		return usbdev.ErrNoMemory
	case unix.ENOENT:
		return usbdev.ErrNotFound
	case unix.EOVERFLOW:
		return usbdev.ErrOverflow
	}
	return nil
}

// urbKind maps a completed URB's negative status to an error kind. A URB
// that was discarded (ENOENT, ECONNRESET) or timed out has the context's
// error as its kind when the context is done, and none otherwise.
func urbKind(ctx context.Context, status unix.Errno) error {
	switch status {
	case unix.EPIPE:
		return usbms.ErrStall
	case unix.ENODEV, unix.ESHUTDOWN:
		return usbms.ErrNoDevice
	case unix.EOVERFLOW:
		return usbdev.ErrOverflow
	case unix.ENOENT, unix.ECONNRESET, unix.ETIMEDOUT:
		return ctx.Err()
	}
	return nil
}

// mapError wraps err (an errno from an ioctl, a URB status, or a context
// error) as a *usbdev.Error with its kind.
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
	e := usbdev.NewError(op, info, nil, err)
	var st urbStatus
	var errno unix.Errno
	switch {
	case errors.As(err, &st):
		e.Kind = urbKind(ctx, unix.Errno(st))
	case errors.As(err, &errno):
		e.Kind = ioctlKind(errno)
	}
	if e.Kind == nil {
		if ctxErr := ctx.Err(); ctxErr != nil {
			e.Kind = ctxErr
		}
	}
	return e
}

// urbStatus is a URB's completion status (a positive errno).
type urbStatus unix.Errno

func (s urbStatus) Error() string { return "transfer failed: " + unix.Errno(s).Error() }

// Unwrap lets errors.Is(err, unix.EPIPE) and the like see the errno.
func (s urbStatus) Unwrap() error { return unix.Errno(s) }
