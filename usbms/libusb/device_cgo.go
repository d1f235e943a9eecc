//go:build cgo && !nousb && (libusb || !(linux || darwin || windows))

package libusb

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"
	"unsafe"

	"github.com/usbflash/usbflash/internal/lib/linuxdisk"
	"github.com/usbflash/usbflash/usbms"
	"github.com/usbflash/usbflash/usbms/usbdev"
)

// Device is one claimed mass-storage interface. It implements usbms.Endpoint.
//
// Transfers (BulkOut, BulkIn) may not overlap each other in BOT anyway; they
// share a read lock so that ClassRequest, ClearHalt, ResetPort and Close,
// which change the device's state, wait for the transfer in flight. Cancel
// the transfers' context before calling Close from another goroutine: bulk
// transfers have no timeout of their own.
type Device struct {
	opts usbdev.OpenOptions
	view linuxdisk.Sys

	mu     sync.RWMutex
	info   usbdev.Info
	s      *session // nil when closed, or after a reset whose re-open failed
	closed bool
	// regions is the memory AllocBuffers handed out and not yet freed.
	regions []region
	// deadline bounds the bulk transfers (SetDeadline).
	deadline time.Time
	// kernelHad: a kernel driver had the interface at Open; Close hands
	// it back even after resets re-created the session.
	kernelHad bool
}

var (
	_ usbms.Endpoint        = (*Device)(nil)
	_ usbms.BufferAllocator = (*Device)(nil)
	_ usbms.DeadlineSetter  = (*Device)(nil)
)

// SetDeadline implements usbms.DeadlineSetter: bulk transfers still pending
// at t are cancelled and fail with context.DeadlineExceeded. The zero time
// means none.
func (d *Device) SetDeadline(t time.Time) {
	d.mu.Lock()
	defer d.mu.Unlock()
	d.deadline = t
}

// Open claims the mass-storage interface info describes (from List). On
// Linux it first refuses, unless opts.Force, when the kernel's disk for that
// interface is mounted, swapped on or held by dm/md; then it selects the
// configuration if needed and claims the interface, detaching the kernel
// driver (usb-storage) from that interface only. Close gives it back.
func Open(ctx context.Context, info usbdev.Info, opts usbdev.OpenOptions) (*Device, error) {
	if !info.Supported {
		reason := info.Reason
		if reason == "" {
			reason = "not a SCSI Bulk-Only interface"
		}
		return nil, usbdev.NewError("opening", info, nil, errors.New(reason))
	}
	opts = opts.WithDefaults()
	view := linuxdisk.Host()
	s, cur, err := openSession(ctx, info, opts, view, false)
	if errors.Is(err, usbdev.ErrNotFound) {
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
func (d *Device) Info() usbdev.Info {
	d.mu.RLock()
	defer d.mu.RUnlock()
	return d.info
}

// closedErr is what calls on a closed Device (or one whose reset could not
// re-open it) return.
func (d *Device) closedErr(op string) error {
	if d.closed {
		return usbdev.NewError(op, d.info, usbdev.ErrClosed, nil)
	}
	return usbdev.NewError(op, d.info, usbdev.ErrReenumerationLost, nil)
}

// stopped reports a call that did not start because ctx was already done.
func (d *Device) stopped(op string, ctxErr error) error {
	return usbdev.NewError(op, d.info, ctxErr, nil)
}

// BulkOut sends p on the bulk-OUT endpoint as one data phase. Memory from
// AllocBuffers goes out as it is, one transfer per DMA area; other memory
// is copied into a bounce buffer allocated once per open, in pieces of
// OpenOptions.OutStreamChunk. Up to OpenOptions.OutStreamDepth transfers
// stay in flight, so the controller never waits for the host, and every
// piece but the last is whole max-size packets, so the device sees one
// unbroken data phase. On an error the transfers still in flight are
// cancelled and n counts the bytes the device accepted before it.
func (d *Device) BulkOut(ctx context.Context, p []byte) (int, error) {
	d.mu.RLock()
	defer d.mu.RUnlock()
	if d.s == nil {
		return 0, d.closedErr("bulk OUT transfer")
	}
	if err := ctx.Err(); err != nil {
		return 0, d.stopped("bulk OUT transfer", err)
	}
	d.s.bulk.deadline = d.deadline
	n, err := d.s.bulk.out(ctx, p, d.regions)
	if err != nil {
		return n, mapError(ctx, fmt.Sprintf("bulk OUT transfer of %d bytes to endpoint 0x%02x", len(p), d.info.BulkOut), d.info, err)
	}
	return n, nil
}

// BulkIn reads up to len(p) bytes from the bulk-IN endpoint, one transfer
// at a time (one per DMA area of AllocBuffers memory, else one per bounce
// buffer), and stops at the first short transfer. Never is a second IN
// transfer queued behind one that may end short: it would swallow the CSW
// that follows as if it were data. Within one transfer libusb guards the
// same (one URB with scatter-gather, or usbfs BULK_CONTINUATION).
func (d *Device) BulkIn(ctx context.Context, p []byte) (int, error) {
	d.mu.RLock()
	defer d.mu.RUnlock()
	if d.s == nil {
		return 0, d.closedErr("bulk IN transfer")
	}
	if err := ctx.Err(); err != nil {
		return 0, d.stopped("bulk IN transfer", err)
	}
	d.s.bulk.deadline = d.deadline
	n, err := d.s.bulk.in(ctx, p, d.regions)
	if err != nil {
		return n, mapError(ctx, fmt.Sprintf("bulk IN transfer of %d bytes from endpoint 0x%02x", len(p), d.info.BulkIn), d.info, err)
	}
	return n, nil
}

// AllocBuffers implements usbms.BufferAllocator: count buffers of size
// bytes of usbfs DMA memory (libusb_dev_mem_alloc; sent without a copy),
// or, when the kernel refuses any of it (usbfs_memory_mb, 16 MiB by
// default, bounds the total; one allocation is at most 4 MiB, so a larger
// buffer is several allocations that must lie next to each other),
// page-aligned memory for all of them. The buffers outlive port resets;
// Close frees what free was not called for.
func (d *Device) AllocBuffers(count, size int) ([][]byte, string, func(), error) {
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.s == nil {
		return nil, "", nil, d.closedErr("allocating transfer buffers")
	}
	regs, zeroCopy, err := allocRegions(d.s.h, count, size, d.s.bulk.piece)
	if err != nil {
		return nil, "", nil, usbdev.NewError("allocating transfer buffers", d.info, nil, err)
	}
	d.regions = append(d.regions, regs...)
	bufs := make([][]byte, len(regs))
	for i, r := range regs {
		bufs[i] = r.mem
	}
	kind := usbms.MemoryPageAligned
	if zeroCopy {
		kind = usbms.MemoryZeroCopy
	}
	h := d.s.h
	free := func() {
		d.mu.Lock()
		defer d.mu.Unlock()
		d.regions = dropRegions(h, d.regions, regs)
	}
	return bufs, kind, free, nil
}

// MemoryKind implements usbms.BufferAllocator: the kind of memory
// AllocBuffers would give, as the open found it (a small usbfs DMA buffer
// was granted or not).
func (d *Device) MemoryKind() string {
	d.mu.RLock()
	defer d.mu.RUnlock()
	if d.s != nil && d.s.bulk.smallZeroCopy {
		return usbms.MemoryZeroCopy
	}
	return usbms.MemoryPageAligned
}

// dropRegions frees those of regs still in have and returns have without
// them.
func dropRegions(h usbHandle, have, regs []region) []region {
	kept := have[:0]
	for _, r := range have {
		if !containsRegion(regs, r) {
			kept = append(kept, r)
			continue
		}
		freeRegions(h, []region{r})
	}
	clear(have[len(kept):])
	return kept
}

func containsRegion(regs []region, r region) bool {
	for _, x := range regs {
		if unsafe.SliceData(x.mem) == unsafe.SliceData(r.mem) {
			return true
		}
	}
	return false
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
	timeout, fromCtx, err := usbdev.ControlTimeout(ctx, d.opts.ControlTimeout, time.Now())
	if err != nil {
		return 0, d.stopped(op, err)
	}
	rType := uint8(0x21)
	if in {
		rType = 0xA1
	}
	n, err := d.s.h.control(rType, request, value, uint16(d.info.Interface), data, timeout)
	if err != nil {
		e := mapError(ctx, op, d.info, err)
		var me *usbdev.Error
		if fromCtx && errors.As(e, &me) && me.Kind == nil && isTimeout(err) {
			me.Kind = context.DeadlineExceeded
		}
		return n, e
	}
	return n, nil
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
	if len(d.regions) > 0 {
		// Freeing needs no live handle (zc_mem_free), so the
		// memory is freed even after the device went away.
		freeRegions(cHandle{}, d.regions)
		d.regions = nil
	}
	if d.s == nil {
		return nil
	}
	err := d.s.close(d.info)
	d.s = nil
	if err != nil {
		return usbdev.NewError("closing", d.info, nil, err)
	}
	return nil
}
