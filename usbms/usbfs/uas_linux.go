//go:build linux

package usbfs

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"time"
	"unsafe"

	"golang.org/x/sys/unix"

	"github.com/usbflash/usbflash/usbms"
	"github.com/usbflash/usbflash/usbms/usbdev"
)

// streamsArg is struct usbdevfs_streams with room for the three
// endpoints that carry streams in UAS (status, data-in, data-out).
type streamsArg struct {
	NumStreams uint32
	NumEps     uint32
	Eps        [3]uint8
}

// The stream ioctls take the struct without its flexible array.
var (
	ioctlAllocStreams = ioc(iocRead, 28, 8)
	ioctlFreeStreams  = ioc(iocRead, 29, 8)
)

// maxStreams is the most streams asked of the host controller, as Linux's
// uas asks (MAX_CMNDS).
const maxStreams = 256

var _ usbms.UASEndpoint = (*Device)(nil)

// uasIO is the UAS side of a Device: its pipes, its streams, and the
// URBs of the transfers submitted. Only the goroutine that holds the
// Transport's lock submits and reaps, so these need no lock of their own.
type uasIO struct {
	on      bool
	eps     [5]uint8 // by usbms.Pipe
	streams int

	// urbs[i] carries xfers[i] while it is pending (nil: a free slot);
	// cancelled[i] when PipeCancel discarded it. The URBs are allocated
	// as more are needed at once and never move: the kernel holds their
	// addresses.
	urbs      []*urb
	xfers     []*usbms.PipeXfer
	cancelled []bool
	pending   int
	ncancel   int
	// gone is the reap error that said the device is gone: every
	// transfer still pending ends with it, without the kernel.
	gone error
}

// UASMode implements usbms.UASEndpoint.
func (d *Device) UASMode() (bool, int) {
	d.mu.RLock()
	defer d.mu.RUnlock()
	return d.uas.on, d.uas.streams
}

// setupUAS selects the UAS alternate setting and, at SuperSpeed,
// allocates the streams. Called from claim with d.mu held.
func (d *Device) setupUAS() error {
	u := d.info.UAS
	if !u.Present() {
		return fmt.Errorf("no UAS alternate setting with its four pipes")
	}
	si := setInterface{Interface: uint32(d.info.Interface), AltSetting: uint32(u.Alt)}
	if _, err := ioctl(d.fd, ioctlSetInterface, unsafe.Pointer(&si)); err != nil {
		return err
	}
	d.uas.on = true
	d.uas.eps = [5]uint8{0, u.Command, u.Status, u.DataIn, u.DataOut}
	d.uas.streams = 0
	if d.caps&capBulkScatterGath == 0 {
		// A data phase is one URB of up to a transfer's size, which
		// usbfs can only map with scatter-gather; Linux's uas refuses
		// such a controller at any speed too.
		return usbdev.ErrNoStreams
	}
	if d.info.Speed < usbdev.SpeedSuper {
		return nil
	}
	if u.MaxStreams < 2 {
		return usbdev.ErrNoStreams
	}
	arg := streamsArg{NumStreams: uint32(min(u.MaxStreams, maxStreams)), NumEps: 3, Eps: [3]uint8{u.Status, u.DataIn, u.DataOut}}
	n, err := ioctl(d.fd, ioctlAllocStreams, unsafe.Pointer(&arg))
	if err != nil {
		return fmt.Errorf("%w: %w", usbdev.ErrNoStreams, err)
	}
	if n < 1 {
		return usbdev.ErrNoStreams
	}
	d.uas.streams = n
	return nil
}

// freeStreams gives the streams back before the interface is released.
// Called with d.mu held.
func (d *Device) freeStreams() {
	if d.uas.streams == 0 || d.fd < 0 {
		return
	}
	u := d.info.UAS
	arg := streamsArg{NumEps: 3, Eps: [3]uint8{u.Status, u.DataIn, u.DataOut}}
	_, _ = ioctl(d.fd, ioctlFreeStreams, unsafe.Pointer(&arg))
	d.uas.streams = 0
}

// pipeOp names a UAS transfer in an error.
func pipeOp(x *usbms.PipeXfer) string {
	return fmt.Sprintf("UAS %s transfer of %d bytes", x.Pipe, len(x.Buf))
}

// PipeSubmit implements usbms.UASEndpoint: one URB on the pipe's endpoint,
// on x.Stream (stream_id, with streams), submitted and not waited for.
func (d *Device) PipeSubmit(x *usbms.PipeXfer) error {
	d.mu.RLock()
	defer d.mu.RUnlock()
	if d.fd < 0 {
		return d.closedErr(pipeOp(x))
	}
	r := &d.uas
	switch {
	case !r.on || x.Pipe < usbms.PipeCommand || x.Pipe > usbms.PipeDataOut:
		return usbdev.NewError(pipeOp(x), d.info, nil, errors.New("the interface is not in its UAS alternate setting"))
	case len(x.Buf) == 0:
		return usbdev.NewError(pipeOp(x), d.info, nil, errors.New("a transfer of no bytes"))
	case r.gone != nil:
		return mapError(context.Background(), pipeOp(x), d.info, r.gone)
	}
	i := slices.Index(r.xfers, nil)
	if i < 0 {
		i = len(r.urbs)
		r.urbs, r.xfers, r.cancelled = append(r.urbs, new(urb)), append(r.xfers, nil), append(r.cancelled, false)
	}
	u := r.urbs[i]
	*u = urb{Type: urbTypeBulk, Endpoint: r.eps[x.Pipe], Buffer: unsafe.Pointer(&x.Buf[0]), BufferLength: int32(len(x.Buf)), NumPackets: int32(x.Stream)}
	d.counts.Submits++
	if err := d.io.submit(d.fd, u); err != nil {
		u.Buffer = nil
		return mapError(context.Background(), pipeOp(x), d.info, err)
	}
	r.xfers[i], r.cancelled[i] = x, false
	r.pending++
	return nil
}

// PipeCancel implements usbms.UASEndpoint: the URB is discarded, and
// reaped as any other.
func (d *Device) PipeCancel(x *usbms.PipeXfer) {
	d.mu.RLock()
	defer d.mu.RUnlock()
	r := &d.uas
	i := slices.Index(r.xfers, x)
	if i < 0 || r.cancelled[i] {
		return
	}
	r.cancelled[i] = true
	r.ncancel++
	if d.fd >= 0 && r.gone == nil {
		// EINVAL: it completed already and waits to be reaped.
		d.counts.Other++
		_ = d.io.discard(d.fd, r.urbs[i])
	}
}

// PipeReap implements usbms.UASEndpoint with the wait the bulk transfers
// use (reap): in Go's poller, honouring ctx and the deadline of
// SetDeadline while no cancelled URB is pending; a discarded URB comes
// back at once, so it is waited for whatever they say.
func (d *Device) PipeReap(ctx context.Context) (*usbms.PipeXfer, error) {
	d.mu.RLock()
	defer d.mu.RUnlock()
	r := &d.uas
	if r.pending == 0 {
		return nil, errors.New("no UAS transfer pending")
	}
	for {
		if r.gone != nil {
			// The kernel no longer writes to the URBs it dropped.
			i := slices.IndexFunc(r.xfers, func(x *usbms.PipeXfer) bool { return x != nil })
			return d.giveBack(i, -int32(unix.ENODEV), 0), nil
		}
		var u *urb
		var err error
		if r.ncancel > 0 {
			u, err = d.reap(context.Background(), r.urbs, new(time.Time))
		} else {
			u, err = d.reap(ctx, r.urbs, &d.deadline)
		}
		switch {
		case err == nil:
		case errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded):
			return nil, mapError(ctx, "waiting for a UAS transfer", d.info, err)
		default:
			r.gone = err
			continue
		}
		i := slices.Index(r.urbs, u)
		if i < 0 || r.xfers[i] == nil {
			continue // not pending: cannot happen, but never hand back a stranger
		}
		return d.giveBack(i, u.Status, int(u.ActualLength)), nil
	}
}

// giveBack frees slot i and sets its transfer's outcome from the URB's
// status and length.
func (d *Device) giveBack(i int, status int32, n int) *usbms.PipeXfer {
	r := &d.uas
	x, cancelled := r.xfers[i], r.cancelled[i]
	r.urbs[i].Buffer = nil
	r.xfers[i], r.cancelled[i] = nil, false
	r.pending--
	if cancelled {
		r.ncancel--
	}
	if r.pending == 0 {
		// Every URB is back: the next submit asks the kernel again
		// (after a port reset the device may answer).
		r.gone = nil
	}
	x.N, x.Err = n, nil
	st := unix.Errno(-status)
	switch {
	case status == 0:
	case cancelled && (st == unix.ENOENT || st == unix.ECONNRESET):
		x.Err = usbdev.NewError(pipeOp(x), d.info, context.Canceled, nil)
	default:
		x.Err = mapError(context.Background(), pipeOp(x), d.info, urbStatus(st))
	}
	return x
}
