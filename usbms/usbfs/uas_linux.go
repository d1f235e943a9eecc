//go:build linux

package usbfs

import (
	"context"
	"errors"
	"fmt"
	"sync"
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
// goroutine that reaps URBs of transfers that run at once.
type uasIO struct {
	on      bool
	eps     [5]uint8 // by usbms.Pipe
	streams int

	mu      sync.Mutex
	pending map[*urb]chan struct{}
	stop    chan struct{} // closed to end the reaper
	done    chan struct{} // closed when the reaper ended
	dead    error         // why the reaper ended on its own
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

// PipeTransfer implements usbms.UASEndpoint: one URB on the pipe's
// endpoint, on stream (stream_id, with streams), reaped by the Device's
// reaper so that transfers on several pipes run at once. It honours ctx
// and the deadline of SetDeadline.
func (d *Device) PipeTransfer(ctx context.Context, pipe usbms.Pipe, stream uint16, p []byte) (int, error) {
	d.mu.RLock()
	defer d.mu.RUnlock()
	op := fmt.Sprintf("UAS %s transfer of %d bytes", pipe, len(p))
	if d.fd < 0 {
		return 0, d.closedErr(op)
	}
	if !d.uas.on || pipe < usbms.PipeCommand || pipe > usbms.PipeDataOut {
		return 0, usbdev.NewError(op, d.info, nil, errors.New("the interface is not in its UAS alternate setting"))
	}
	if len(p) == 0 {
		return 0, nil
	}
	n, err := d.pipeTransfer(ctx, d.uas.eps[pipe], stream, p, d.deadline)
	if err != nil {
		return n, mapError(ctx, op, d.info, err)
	}
	return n, nil
}

func (d *Device) pipeTransfer(ctx context.Context, ep uint8, stream uint16, p []byte, deadline time.Time) (int, error) {
	if err := ctx.Err(); err != nil {
		return 0, err
	}
	u := &urb{Type: urbTypeBulk, Endpoint: ep, Buffer: unsafe.Pointer(&p[0]), BufferLength: int32(len(p)), NumPackets: int32(stream)}
	done, err := d.startReap(u)
	if err != nil {
		return 0, err
	}
	if err := d.io.submit(d.fd, u); err != nil {
		d.forget(u)
		return 0, err
	}
	var timeout <-chan time.Time
	if !deadline.IsZero() {
		t := time.NewTimer(time.Until(deadline))
		defer t.Stop()
		timeout = t.C
	}
	var stop error
	select {
	case <-done:
	case <-ctx.Done():
		stop = ctx.Err()
	case <-timeout:
		stop = context.DeadlineExceeded
	}
	if stop != nil {
		// Take the URB back before p goes back to the caller; what
		// moved before the discard still counts.
		_ = d.io.discard(d.fd, u)
		<-done
	}
	n := int(u.ActualLength)
	u.Buffer = nil
	switch {
	case u.Status == 0:
		return n, nil
	case stop != nil:
		return n, stop
	}
	return n, urbStatus(unix.Errno(-u.Status))
}

// startReap registers u with the reaper, starting it when none runs.
func (d *Device) startReap(u *urb) (chan struct{}, error) {
	r := &d.uas
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.dead != nil {
		return nil, r.dead
	}
	if r.pending == nil {
		r.pending = map[*urb]chan struct{}{}
	}
	if r.stop == nil {
		r.stop, r.done = make(chan struct{}), make(chan struct{})
		go d.reaper(d.fd, d.io, r.stop, r.done)
	}
	done := make(chan struct{})
	r.pending[u] = done
	return done, nil
}

// forget drops a URB that was never submitted.
func (d *Device) forget(u *urb) {
	d.uas.mu.Lock()
	delete(d.uas.pending, u)
	d.uas.mu.Unlock()
}

// reaper reaps every completed URB of fd and wakes its transfer. When the
// device is gone, the URBs still pending are failed with ENODEV: the
// kernel no longer writes to them.
func (d *Device) reaper(fd int, io urbIO, stop, done chan struct{}) {
	defer close(done)
	r := &d.uas
	for {
		select {
		case <-stop:
			return
		default:
		}
		got, err := io.reapWait(fd, int(pollSlice/time.Millisecond))
		if err == unix.EAGAIN || err == unix.EINTR {
			continue
		}
		r.mu.Lock()
		if err != nil {
			r.dead = err
			for u, ch := range r.pending {
				u.Status = -int32(unix.ENODEV)
				close(ch)
			}
			r.pending = nil
			r.mu.Unlock()
			return
		}
		for u, ch := range r.pending {
			if uintptr(unsafe.Pointer(u)) == got {
				delete(r.pending, u)
				close(ch)
				break
			}
		}
		r.mu.Unlock()
	}
}

// stopReaper ends the reaper before its fd closes. Called with d.mu held
// for writing: no transfer is pending then.
func (d *Device) stopReaper() {
	r := &d.uas
	r.mu.Lock()
	stop, done := r.stop, r.done
	r.stop, r.done, r.dead = nil, nil, nil
	r.mu.Unlock()
	if stop != nil {
		close(stop)
		<-done
	}
}
