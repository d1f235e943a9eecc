//go:build linux || darwin || windows

package libusbdl

import (
	"context"
	"fmt"
	"time"
	"unsafe"

	"github.com/usbflash/usbflash/internal/lib/aligned"
	"github.com/usbflash/usbflash/usbms"
	"github.com/usbflash/usbflash/usbms/usbdev"
)

const (
	// smallLen is the buffer for CBW, CSW and small data phases (the
	// identification commands): one transfer, a copy of a few bytes.
	smallLen = 4096
	// inPieces is how many OUT pieces one IN transfer may be: IN data
	// goes one transfer at a time, so each is larger, and below usbfs's
	// 16 MiB for one transfer.
	inPieces = 4
)

// bulkPath moves the bulk data of one open device through transfers
// allocated once per open: nothing is allocated per command. Memory from
// AllocBuffers and the caller's own memory are both sent as they are
// (pinned for the flight); only the small transfers are copied.
//
// OUT data phases go out as pieces, up to len(xfers) transfers in flight,
// so the controller never waits for the host. IN data phases go in one
// transfer at a time and stop at the first short one: a second IN
// transfer queued behind one that ends short would take the CSW as data
// (within one transfer libusb guards against it: one URB with
// scatter-gather, or usbfs's BULK_CONTINUATION).
type bulkPath struct {
	loop          *eventLoop
	h             uintptr
	epIn, epOut   uint8
	maxPacket     int
	piece         int
	xfers         []*xfer
	lens          []int
	small         []byte
	smallZeroCopy bool
	w             *waiter
	// deadline bounds every transfer (usbms.DeadlineSetter); zero: none.
	deadline time.Time
	// regions are the Device's AllocBuffers memory, for the areas a
	// transfer must not cross.
	regions *[]*region
}

func newBulkPath(s *session, info usbdev.Info, opts usbdev.OpenOptions) (*bulkPath, error) {
	mp := info.BulkOutMaxPacket
	if mp <= 0 {
		mp = 512
	}
	b := &bulkPath{loop: s.loop, h: s.h, epIn: info.BulkIn, epOut: info.BulkOut, maxPacket: mp,
		piece: max(mp, opts.OutStreamChunk/mp*mp), lens: make([]int, opts.OutStreamDepth), w: newWaiter()}
	for range opts.OutStreamDepth {
		x, err := s.loop.newXfer()
		if err != nil {
			return nil, fmt.Errorf("allocating a bulk transfer: %w", err)
		}
		b.xfers = append(b.xfers, x)
	}
	if m := s.lib.devMemAlloc(s.h, smallLen); m != nil {
		b.small, b.smallZeroCopy = m, true
	} else {
		b.small = aligned.Bytes(smallLen)
	}
	return b, nil
}

// close gives back the small buffer's device memory; the transfers go
// with the event loop.
func (b *bulkPath) close() {
	if b.smallZeroCopy {
		devMemFree(b.small)
	}
	b.small = nil
}

// areaLen is how many bytes of p from off one transfer may carry: up to
// want, and not past the end of the device-memory area it lies in.
func (b *bulkPath) areaLen(p []byte, off, want int) int {
	n := min(len(p)-off, want)
	if b.regions == nil {
		return n
	}
	a := uintptr(unsafe.Pointer(&p[off]))
	for _, r := range *b.regions {
		if lim := r.limit(a); lim > 0 {
			return min(n, lim)
		}
	}
	return n
}

// out sends p as one data phase. On an error the transfers still in
// flight are cancelled and waited for; n counts the bytes of the
// transfers that completed, in order, before it.
func (b *bulkPath) out(ctx context.Context, p []byte) (int, error) {
	if len(p) <= len(b.small) {
		copy(b.small, p)
		return b.one(ctx, b.epOut, b.small[:len(p)])
	}
	depth := len(b.xfers)
	var (
		moved, sent int
		s, c        int // transfers submitted, completed
		stop        bool
		err         error
	)
	for {
		for !stop && sent < len(p) && s-c < depth {
			slot := s % depth
			n := b.areaLen(p, sent, b.piece)
			if n < len(p)-sent {
				// Every piece but the last whole packets: the device
				// must see one unbroken data phase.
				n = max(n/b.maxPacket*b.maxPacket, min(b.maxPacket, len(p)-sent))
			}
			if e := b.loop.submit(b.xfers[slot], b.h, b.epOut, transferTypeBulk, p[sent:sent+n], 0, 0); e != nil {
				err, stop = e, true
				b.cancel(c, s)
				break
			}
			b.lens[slot] = n
			sent += n
			s++
		}
		if c == s {
			return moved, err
		}
		slot := c % depth
		got, e, expired := b.w.await(b.loop, ctx, b.xfers[slot], &b.deadline)
		c++
		if stop {
			continue // draining after an error or a short transfer
		}
		moved += got
		if e != nil || got < b.lens[slot] {
			err, stop = deadlineErr(e, expired), true
			b.cancel(c, s)
		}
	}
}

// cancel cancels the transfers from the c-th to the one before the s-th.
func (b *bulkPath) cancel(c, s int) {
	for i := c; i < s; i++ {
		b.loop.cancelXfer(b.xfers[i%len(b.xfers)])
	}
}

// in reads one data phase into p, one transfer at a time, and ends at
// the first short transfer.
func (b *bulkPath) in(ctx context.Context, p []byte) (int, error) {
	if len(p) <= len(b.small) {
		n, err := b.one(ctx, b.epIn, b.small[:len(p)])
		n = max(0, min(n, len(p)))
		copy(p, b.small[:n])
		return n, err
	}
	moved := 0
	for moved < len(p) {
		n := b.areaLen(p, moved, inPieces*b.piece)
		got, err := b.one(ctx, b.epIn, p[moved:moved+n])
		got = max(0, min(got, n))
		moved += got
		if err != nil || got < n {
			return moved, err
		}
	}
	return moved, nil
}

// one runs a single transfer of buf on ep and waits for it.
func (b *bulkPath) one(ctx context.Context, ep uint8, buf []byte) (int, error) {
	x := b.xfers[0]
	if err := b.loop.submit(x, b.h, ep, transferTypeBulk, buf, 0, 0); err != nil {
		return 0, err
	}
	n, err, expired := b.w.await(b.loop, ctx, x, &b.deadline)
	return n, deadlineErr(err, expired)
}

// deadlineErr reports a transfer the deadline cancelled as
// context.DeadlineExceeded, with how it ended.
func deadlineErr(err error, expired bool) error {
	if expired && err != nil {
		return fmt.Errorf("%w (%w)", context.DeadlineExceeded, err)
	}
	return err
}

// BulkOut sends p on the bulk-OUT endpoint as one data phase: pieces of
// OpenOptions.OutStreamChunk bytes straight from p (device memory from
// AllocBuffers goes out without a copy on Linux; other memory is pinned
// and copied by the system), up to OpenOptions.OutStreamDepth in flight.
// On an error the transfers still in flight are cancelled and n counts
// the bytes the device accepted before it.
func (d *Device) BulkOut(ctx context.Context, p []byte) (int, error) {
	d.mu.RLock()
	defer d.mu.RUnlock()
	if d.s == nil || d.s.bulk == nil {
		return 0, d.bulkClosed("bulk OUT transfer")
	}
	if err := ctx.Err(); err != nil {
		return 0, usbdev.NewError("bulk OUT transfer", d.info, err, nil)
	}
	if len(p) == 0 {
		return 0, nil
	}
	b := d.s.bulk
	b.deadline, b.regions = d.deadline, &d.regions
	n, err := b.out(ctx, p)
	if err != nil {
		return n, mapError(ctx, fmt.Sprintf("bulk OUT transfer of %d bytes to endpoint 0x%02x", len(p), d.info.BulkOut), d.info, err)
	}
	return n, nil
}

// BulkIn reads up to len(p) bytes from the bulk-IN endpoint, one
// transfer at a time, and stops at the first short one.
func (d *Device) BulkIn(ctx context.Context, p []byte) (int, error) {
	d.mu.RLock()
	defer d.mu.RUnlock()
	if d.s == nil || d.s.bulk == nil {
		return 0, d.bulkClosed("bulk IN transfer")
	}
	if err := ctx.Err(); err != nil {
		return 0, usbdev.NewError("bulk IN transfer", d.info, err, nil)
	}
	if len(p) == 0 {
		return 0, nil
	}
	b := d.s.bulk
	b.deadline, b.regions = d.deadline, &d.regions
	n, err := b.in(ctx, p)
	if err != nil {
		return n, mapError(ctx, fmt.Sprintf("bulk IN transfer of %d bytes from endpoint 0x%02x", len(p), d.info.BulkIn), d.info, err)
	}
	return n, nil
}

// bulkClosed is the error of a bulk call on a device without a Bulk-Only
// session: closed, lost in a reset, or opened in UAS.
func (d *Device) bulkClosed(op string) error {
	if d.s != nil {
		return usbdev.NewError(op, d.info, nil, fmt.Errorf("the interface is in its UAS alternate setting"))
	}
	return d.closedErr(op)
}

// MemoryKind implements usbms.BufferAllocator: the kind AllocBuffers
// gives, as the open found it (a small buffer of device memory was
// granted or not).
func (d *Device) MemoryKind() string {
	d.mu.RLock()
	defer d.mu.RUnlock()
	if d.s != nil && d.s.bulk != nil && d.s.bulk.smallZeroCopy {
		return usbms.MemoryZeroCopy
	}
	return usbms.MemoryPageAligned
}
