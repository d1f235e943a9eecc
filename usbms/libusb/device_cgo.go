//go:build cgo && !nousb

package libusb

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"usbflash/usbms"
)

// Device is one claimed mass-storage interface. It implements usbms.Endpoint.
//
// Transfers (BulkOut, BulkIn) may not overlap each other in BOT anyway; they
// share a read lock so that ClassRequest, ClearHalt, ResetPort and Close,
// which change the device's state, wait for the transfer in flight. Cancel
// the transfers' context before calling Close from another goroutine: gousb
// transfers have no timeout of their own.
type Device struct {
	opts OpenOptions
	view sysView

	mu     sync.RWMutex
	info   Info
	s      *session // nil when closed, or after a reset whose re-open failed
	closed bool
	// kernelHad: a kernel driver had the interface at Open; Close hands
	// it back even after resets re-created the session.
	kernelHad bool
}

var _ usbms.Endpoint = (*Device)(nil)

// Open claims the mass-storage interface info describes (from List). On
// Linux it first refuses, unless opts.Force, when the kernel's disk for that
// interface is mounted, swapped on or held by dm/md; then it selects the
// configuration if needed and claims the interface, detaching the kernel
// driver (usb-storage) from that interface only. Close gives it back.
func Open(ctx context.Context, info Info, opts OpenOptions) (*Device, error) {
	if !info.Supported {
		reason := info.Reason
		if reason == "" {
			reason = "not a SCSI Bulk-Only interface"
		}
		return nil, &Error{Op: "opening", Device: info.String(), Err: errors.New(reason)}
	}
	opts = opts.withDefaults()
	view := hostView()
	s, cur, err := openSession(ctx, info, opts, view, false)
	if errors.Is(err, ErrNotFound) {
		// Re-plugged since it was listed: same port, new address.
		s, cur, err = openSession(ctx, info, opts, view, true)
	}
	if err != nil {
		return nil, err
	}
	return &Device{opts: opts, view: view, info: cur, s: s, kernelHad: s.reattach}, nil
}

// Info describes the device as it is now (its address changes when a reset
// made it re-enumerate).
func (d *Device) Info() Info {
	d.mu.RLock()
	defer d.mu.RUnlock()
	return d.info
}

// closedErr is what calls on a closed Device (or one whose reset could not
// re-open it) return.
func (d *Device) closedErr(op string) error {
	if d.closed {
		return &Error{Op: op, Device: d.info.String(), Kind: ErrClosed}
	}
	return &Error{Op: op, Device: d.info.String(), Kind: usbms.ErrNoDevice,
		Hint: "an earlier port reset could not re-open it; unplug and replug it"}
}

// stopped reports a call that did not start because ctx was already done.
func (d *Device) stopped(op string, ctxErr error) error {
	return &Error{Op: op, Device: d.info.String(), Kind: ctxErr}
}

// BulkOut sends p on the bulk-OUT endpoint. A call longer than the stream
// chunk (OpenOptions.OutStreamChunk, 1 MiB by default) goes out as a gousb
// WriteStream: OutStreamDepth transfers of one chunk each stay queued, so
// the kernel copies the next chunk while the controller sends the current
// one, and no more than depth*chunk bytes count against usbfs_memory_mb
// whatever the size of p. Every chunk is a whole number of max-size packets,
// so the device sees one unbroken data phase exactly as if p had gone out
// in one transfer (see streamOut for the tail). On an error the transfers
// still queued are cancelled and n counts the bytes the device accepted
// before it.
func (d *Device) BulkOut(ctx context.Context, p []byte) (int, error) {
	d.mu.RLock()
	defer d.mu.RUnlock()
	if d.s == nil {
		return 0, d.closedErr("bulk OUT transfer")
	}
	if err := ctx.Err(); err != nil {
		return 0, d.stopped("bulk OUT transfer", err)
	}
	var n int
	var err error
	if chunk := d.opts.streamChunk(len(p), d.info.BulkOutMaxPacket); chunk > 0 {
		n, err = d.s.streamOut(ctx, p, chunk, d.opts.OutStreamDepth)
	} else {
		n, err = d.s.out.WriteContext(ctx, p)
	}
	if err != nil {
		return n, mapError(ctx, fmt.Sprintf("bulk OUT transfer of %d bytes to endpoint 0x%02x", len(p), d.info.BulkOut), d.info, err)
	}
	return n, nil
}

// streamOut writes p as a stream of chunk-sized transfers, depth in flight.
//
// gousb's WriteStream submits every transfer at its full allocated size: a
// last, partial chunk would go out padded with stale bytes (transfer_stream.go
// WriteContext copies `use` bytes but never shortens the transfer), which
// the device would take as the start of the next CBW. So only the whole
// chunks are streamed, and the tail goes out as one ordinary transfer after
// them. The tail is a multiple of the packet size whenever p is, so the data
// phase stays unbroken.
func (s *session) streamOut(ctx context.Context, p []byte, chunk, depth int) (int, error) {
	whole := wholeChunks(len(p), chunk)
	ws, err := s.out.NewStream(chunk, depth)
	if err != nil {
		return 0, err
	}
	_, werr := ws.WriteContext(ctx, p[:whole])
	// CloseContext waits for the queued transfers (or, after an error,
	// finds them already cancelled); Written counts completed bytes.
	cerr := ws.CloseContext(ctx)
	n := ws.Written()
	if werr != nil {
		return n, werr
	}
	if cerr != nil || n < whole || whole == len(p) {
		return n, cerr
	}
	m, err := s.out.WriteContext(ctx, p[whole:])
	return n + m, err
}

// BulkIn reads up to len(p) bytes from the bulk-IN endpoint as one transfer.
// Reads are never streamed: with a second IN transfer queued, a short data
// phase would let the queued transfer swallow the CSW that follows it as if
// it were data (gousb cannot set libusb's SHORT_NOT_OK / usbfs
// BULK_CONTINUATION flags that guard against that). libusb already keeps a
// large single transfer moving (one scatter-gather URB on Linux).
func (d *Device) BulkIn(ctx context.Context, p []byte) (int, error) {
	d.mu.RLock()
	defer d.mu.RUnlock()
	if d.s == nil {
		return 0, d.closedErr("bulk IN transfer")
	}
	if err := ctx.Err(); err != nil {
		return 0, d.stopped("bulk IN transfer", err)
	}
	n, err := d.s.in.ReadContext(ctx, p)
	if err != nil {
		return n, mapError(ctx, fmt.Sprintf("bulk IN transfer of %d bytes from endpoint 0x%02x", len(p), d.info.BulkIn), d.info, err)
	}
	return n, nil
}

// ClassRequest sends a class-specific request to the interface
// (bmRequestType 0xA1 in, 0x21 out; wIndex = interface number). libusb
// control transfers cannot be cancelled, so ctx bounds them through the
// timeout: the sooner of ctx's deadline and OpenOptions.ControlTimeout.
func (d *Device) ClassRequest(ctx context.Context, in bool, request uint8, value uint16, data []byte) (int, error) {
	d.mu.Lock()
	defer d.mu.Unlock()
	op := fmt.Sprintf("class request 0x%02x", request)
	if d.s == nil {
		return 0, d.closedErr(op)
	}
	timeout, fromCtx, err := controlTimeout(ctx, d.opts.ControlTimeout, time.Now())
	if err != nil {
		return 0, d.stopped(op, err)
	}
	rType := uint8(0x21)
	if in {
		rType = 0xA1
	}
	d.s.dev.ControlTimeout = timeout
	n, err := d.s.dev.Control(rType, request, value, uint16(d.info.Interface), data)
	if n < 0 {
		n = 0
	}
	if err != nil {
		e := mapError(ctx, op, d.info, err)
		var me *Error
		if fromCtx && errors.As(e, &me) && me.Kind == nil && isTimeout(err) {
			me.Kind = context.DeadlineExceeded
		}
		return n, e
	}
	return n, nil
}

// controlTimeout picks the timeout for a control request: max, or what is
// left of ctx's deadline when that is sooner (fromCtx then). libusb reads a
// timeout of 0 as "forever", so a deadline less than 1 ms away is treated as
// already passed.
func controlTimeout(ctx context.Context, max time.Duration, now time.Time) (timeout time.Duration, fromCtx bool, err error) {
	if err := ctx.Err(); err != nil {
		return 0, false, err
	}
	dl, ok := ctx.Deadline()
	if !ok {
		return max, false, nil
	}
	left := dl.Sub(now)
	if left >= max {
		return max, false, nil
	}
	if left < time.Millisecond {
		return 0, true, context.DeadlineExceeded
	}
	return left, true, nil
}

// Close releases the interface, hands it back to the kernel driver if one
// had it (so /dev/sdX comes back), and closes the device. Calling it again
// does nothing.
func (d *Device) Close() error {
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.closed {
		return nil
	}
	d.closed = true
	if d.s == nil {
		return nil
	}
	err := d.s.close(d.info)
	d.s = nil
	if err != nil {
		return &Error{Op: "closing", Device: d.info.String(), Err: err}
	}
	return nil
}
