//go:build linux || darwin || windows

package libusbdl

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"time"
	"unsafe"

	"github.com/usbflash/usbflash/usbms"
	"github.com/usbflash/usbflash/usbms/usbdev"
)

// maxStreams is the most streams asked of the host controller, as
// Linux's uas asks (MAX_CMNDS).
const maxStreams = 256

// uasSide is the UAS side of a session: its pipes, its streams, and the
// transfers submitted. Only the goroutine that holds the Transport's lock
// submits and reaps, so these need no lock of their own.
type uasSide struct {
	eps     [5]uint8 // by usbms.Pipe
	streams int
	// slots[i] carries owner[i] while it is pending (nil: a free slot).
	// Transfers are allocated as more are needed at once.
	slots   []*xfer
	owner   []*usbms.PipeXfer
	pending int
	ncancel int
	w       *waiter
}

// setupUAS selects the UAS alternate setting and, at SuperSpeed,
// allocates the bulk streams (libusb_alloc_streams, libusb 1.0.19).
func (s *session) setupUAS(info usbdev.Info) (*uasSide, error) {
	u := info.UAS
	if !u.Present() {
		return nil, errors.New("no UAS alternate setting with its four pipes")
	}
	l := s.lib
	if err := rc(call(l.fn.setInterfaceAltSetting, s.h, uintptr(info.Interface), uintptr(u.Alt))); err != nil {
		return nil, err
	}
	side := &uasSide{eps: [5]uint8{0, u.Command, u.Status, u.DataIn, u.DataOut}, w: newWaiter()}
	if info.Speed < usbdev.SpeedSuper {
		// High speed: the device announces each data phase with a
		// READ READY or WRITE READY IU; libusb splits a transfer the
		// controller cannot take in one piece, safely for IN
		// (BULK_CONTINUATION), so no scatter-gather is needed.
		return side, nil
	}
	if u.MaxStreams < 2 || !l.atLeast(19) || l.fn.allocStreams == 0 || l.fn.transferSetStreamID == 0 {
		return nil, fmt.Errorf("%w (libusb %s)", usbdev.ErrNoStreams, l.Version())
	}
	eps := [3]uint8{u.Status, u.DataIn, u.DataOut}
	n := int32(call(l.fn.allocStreams, s.h, uintptr(min(u.MaxStreams, maxStreams)), uintptr(unsafe.Pointer(&eps[0])), 3))
	if n < 1 {
		return nil, fmt.Errorf("%w: %w", usbdev.ErrNoStreams, Code(min(n, int32(ErrNotSupported))))
	}
	side.streams = int(n)
	return side, nil
}

// freeStreams gives the streams back before the interface is released.
func (s *session) freeStreams() {
	if s.uas == nil || s.uas.streams == 0 || s.lib.fn.freeStreams == 0 {
		return
	}
	eps := [3]uint8{s.uas.eps[usbms.PipeStatus], s.uas.eps[usbms.PipeDataIn], s.uas.eps[usbms.PipeDataOut]}
	call(s.lib.fn.freeStreams, s.h, uintptr(unsafe.Pointer(&eps[0])), 3)
	s.uas.streams = 0
}

// UASMode implements usbms.UASEndpoint.
func (d *Device) UASMode() (bool, int) {
	d.mu.RLock()
	defer d.mu.RUnlock()
	if d.s == nil || d.s.uas == nil {
		return false, 0
	}
	return true, d.s.uas.streams
}

// pipeOp names a UAS transfer in an error.
func pipeOp(x *usbms.PipeXfer) string {
	return fmt.Sprintf("UAS %s transfer of %d bytes", x.Pipe, len(x.Buf))
}

// PipeSubmit implements usbms.UASEndpoint: one transfer on the pipe's
// endpoint, on x.Stream with streams, submitted and not waited for.
func (d *Device) PipeSubmit(x *usbms.PipeXfer) error {
	d.mu.RLock()
	defer d.mu.RUnlock()
	if d.s == nil {
		return d.closedErr(pipeOp(x))
	}
	u := d.s.uas
	switch {
	case u == nil || x.Pipe < usbms.PipeCommand || x.Pipe > usbms.PipeDataOut:
		return usbdev.NewError(pipeOp(x), d.info, nil, errors.New("the interface is not in its UAS alternate setting"))
	case len(x.Buf) == 0:
		return usbdev.NewError(pipeOp(x), d.info, nil, errors.New("a transfer of no bytes"))
	}
	i := slices.Index(u.owner, nil)
	if i < 0 {
		t, err := d.s.loop.newXfer()
		if err != nil {
			return mapError(context.Background(), pipeOp(x), d.info, err)
		}
		i = len(u.slots)
		u.slots, u.owner = append(u.slots, t), append(u.owner, nil)
	}
	typ, stream := uint8(transferTypeBulk), uint16(0)
	if u.streams > 0 && x.Stream != 0 {
		typ, stream = transferTypeBulkStream, x.Stream
	}
	if err := d.s.loop.submit(u.slots[i], d.s.h, u.eps[x.Pipe], typ, x.Buf, 0, stream); err != nil {
		return mapError(context.Background(), pipeOp(x), d.info, err)
	}
	u.owner[i] = x
	u.pending++
	return nil
}

// PipeCancel implements usbms.UASEndpoint: the transfer is cancelled and
// reaped as any other.
func (d *Device) PipeCancel(x *usbms.PipeXfer) {
	d.mu.RLock()
	defer d.mu.RUnlock()
	if d.s == nil || d.s.uas == nil {
		return
	}
	u := d.s.uas
	i := slices.Index(u.owner, x)
	if i < 0 || u.slots[i].cancelled {
		return
	}
	d.s.loop.cancelXfer(u.slots[i])
	if u.slots[i].cancelled {
		u.ncancel++
	}
}

// PipeReap implements usbms.UASEndpoint: it gives back a transfer that
// completed, waiting on the event thread's word, honouring ctx and the
// deadline of SetDeadline while no cancelled transfer is pending (one
// that was is waited for whatever they say).
func (d *Device) PipeReap(ctx context.Context) (*usbms.PipeXfer, error) {
	d.mu.RLock()
	defer d.mu.RUnlock()
	if d.s == nil || d.s.uas == nil || d.s.uas.pending == 0 {
		return nil, errors.New("no UAS transfer pending")
	}
	u, loop := d.s.uas, d.s.loop
	for {
		for i, t := range u.slots {
			if u.owner[i] != nil && t.state.Load() == xferDone {
				return d.giveBack(i), nil
			}
		}
		var stop error
		wait := waitSlice
		if u.ncancel == 0 {
			if err := ctx.Err(); err != nil {
				stop = err
			} else if !d.deadline.IsZero() {
				left := time.Until(d.deadline)
				if left <= 0 {
					stop = context.DeadlineExceeded
				}
				wait = min(wait, max(left, time.Millisecond))
			}
		}
		if stop != nil {
			return nil, usbdev.NewError("waiting for a UAS transfer", d.info, stop, nil)
		}
		done := ctx.Done()
		if u.ncancel > 0 {
			done = nil
		}
		u.w.timer.Reset(wait)
		select {
		case <-loop.anyDone:
		case <-done:
		case <-u.w.timer.C:
		}
		u.w.timer.Stop()
	}
}

// giveBack frees slot i and sets its transfer's outcome.
func (d *Device) giveBack(i int) *usbms.PipeXfer {
	u := d.s.uas
	t, x := u.slots[i], u.owner[i]
	cancelled := t.cancelled
	n, err := d.s.loop.finish(t)
	u.owner[i] = nil
	u.pending--
	if cancelled {
		u.ncancel--
	}
	x.N, x.Err = max(0, min(n, len(x.Buf))), nil
	switch {
	case err == nil:
	case cancelled && err == Status(statusCancelled):
		x.Err = usbdev.NewError(pipeOp(x), d.info, context.Canceled, nil)
	default:
		x.Err = mapError(context.Background(), pipeOp(x), d.info, err)
	}
	return x
}
