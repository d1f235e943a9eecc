//go:build linux

package usbfs

import (
	"testing"
	"time"
	"unsafe"

	"golang.org/x/sys/unix"
)

// fakeKernel is usbfs as one bulk endpoint's URB queue shows it to the
// transfer loop (drivers/usb/core/devio.c): SUBMITURB queues a URB unless
// the bytes in flight would pass usbfs_memory_mb; URBs complete in order,
// one per poll (or all at once in burst mode); a URB that ends in an error
// or, with SHORT_NOT_OK, short, has the BULK_CONTINUATION URBs behind it
// unlinked (-ECONNRESET) and the endpoint refuses further continuation
// URBs (EREMOTEIO) until a URB without the flag; REAPURBNDELAY returns the
// oldest completed URB or EAGAIN and writes its status and length into it,
// as processcompl does; DISCARDURB unlinks a pending URB; REAPURB blocks,
// which here means the device makes progress.
//
// The device behind it takes the transfer's bytes (OUT) into sink, or
// sends src (IN) up to shortAt, then a short packet; a URB that starts
// past that gets the CSW, as a device would send it. It allocates nothing
// once its slices have grown, so that the loop's allocations can be
// counted.
type fakeKernel struct {
	t *testing.T

	// The script.
	ep       uint8
	limit    int        // usbfs_memory_mb in bytes; 0: none
	shortAt  int        // IN: the data phase's length; -1: all of p
	failAt   int        // the URB holding this byte fails; -1: none
	failWith unix.Errno // its status: EPIPE (stall), ESHUTDOWN (gone)
	gone     bool       // failWith takes the device away
	drop     bool       // ...and the kernel drops its URBs (before CAP_REAP_AFTER_DISCONNECT)
	burst    bool       // poll completes every pending URB, not one
	onPoll   func(n int) bool
	mapBase  uintptr // a usbfs mapping starts here; 0: none

	// The transfer's buffer and the device's side of it.
	base uintptr
	size int
	src  []byte
	sink []byte

	// The queues, in submission and completion order.
	pending   []fakeURB
	completed []fakeURB
	disabled  bool // continuation URBs refused (disabled_bulk_eps)
	halted    bool // the endpoint stalled: what is queued fails too
	unplugged bool

	// What was seen.
	subs          []fakeURB // every URB accepted, in order
	next          int       // the offset the next URB must start at
	enomem        int
	freeAfter     int // the limit is lifted at this ENOMEM (0: never)
	maxInFlight   int
	maxAfterNoMem int
	discards      int
	polls         int
	reaps         int // REAPURB and REAPURBNDELAY calls
}

type fakeURB struct {
	u      *urb
	buf    unsafe.Pointer
	off, n int
	flags  uint32
	status int32
	actual int32
}

const cswLen = 13

func newFakeKernel(t *testing.T, ep uint8) *fakeKernel {
	return &fakeKernel{t: t, ep: ep, shortAt: -1, failAt: -1}
}

// start points the fake at p for the next transfer.
func (f *fakeKernel) start(p []byte) {
	f.base, f.size = uintptr(unsafe.Pointer(unsafe.SliceData(p))), len(p)
	f.subs, f.next, f.sink, f.halted = f.subs[:0], 0, f.sink[:0], false
	f.enomem, f.maxInFlight, f.maxAfterNoMem, f.discards, f.polls = 0, 0, 0, 0, 0
}

func (f *fakeKernel) inFlight() int { return len(f.pending) + len(f.completed) }

func (f *fakeKernel) bytesInFlight() int {
	n := 0
	for _, q := range [][]fakeURB{f.pending, f.completed} {
		for _, x := range q {
			n += x.n
		}
	}
	return n
}

func (f *fakeKernel) submit(_ int, u *urb) error {
	if f.unplugged {
		return unix.ENODEV
	}
	for _, x := range f.pending {
		if x.u == u {
			f.t.Errorf("urb %p submitted again while in flight", u)
		}
	}
	addr, n := uintptr(u.Buffer), int(u.BufferLength)
	off := int(addr - f.base)
	switch {
	case u.Type != urbTypeBulk || u.Endpoint != f.ep:
		f.t.Errorf("urb type %d endpoint 0x%02x, want bulk 0x%02x", u.Type, u.Endpoint, f.ep)
	case addr < f.base || n <= 0 || off+n > f.size:
		f.t.Errorf("urb buffer %#x+%d outside p (%#x+%d)", addr, n, f.base, f.size)
	case off != f.next:
		f.t.Errorf("urb at byte %d, want %d (in order, no gap)", off, f.next)
	case f.mapBase != 0 && (addr-f.mapBase)/mapPiece != (addr+uintptr(n)-1-f.mapBase)/mapPiece:
		f.t.Errorf("urb at byte %d+%d straddles a usbfs mapping's end", off, n)
	}
	if f.limit > 0 && f.bytesInFlight()+n > f.limit {
		f.enomem++
		if f.freeAfter > 0 && f.enomem >= f.freeAfter {
			f.limit = 0 // another user's URBs ended: the memory is back
		}
		return unix.ENOMEM
	}
	if u.Flags&urbBulkContinuation == 0 {
		f.disabled = false
	} else if f.disabled {
		return unix.EREMOTEIO
	}
	x := fakeURB{u: u, buf: u.Buffer, off: off, n: n, flags: u.Flags}
	f.pending = append(f.pending, x)
	f.subs = append(f.subs, x)
	f.next = off + n
	f.maxInFlight = max(f.maxInFlight, f.inFlight())
	if f.enomem > 0 {
		f.maxAfterNoMem = max(f.maxAfterNoMem, f.inFlight())
	}
	return nil
}

// completeOldest lets the device finish the oldest pending URB.
func (f *fakeKernel) completeOldest() {
	x := f.pending[0]
	f.pending = f.pending[:copy(f.pending, f.pending[1:])]
	buf := unsafe.Slice((*byte)(x.buf), x.n)
	moved := x.n
	var status unix.Errno
	switch {
	case f.halted:
		moved, status = 0, unix.EPIPE
	case f.failAt >= x.off && f.failAt < x.off+x.n:
		moved, status = f.failAt-x.off, f.failWith
	case f.ep&0x80 != 0 && f.shortAt >= 0 && x.off > f.shortAt:
		// Past the data phase: the device sends its CSW.
		moved = min(cswLen, x.n)
	case f.ep&0x80 != 0 && f.shortAt >= 0 && f.shortAt < x.off+x.n:
		moved = f.shortAt - x.off
	}
	if f.ep&0x80 != 0 {
		if x.off > f.shortAt && f.shortAt >= 0 {
			copy(buf[:moved], "USBS\x00\x00\x00\x00\x00\x00\x00\x00\x00")
		} else {
			copy(buf[:moved], f.src[x.off:])
		}
		if status == 0 && moved < x.n && x.flags&urbShortNotOK != 0 {
			status = unix.EREMOTEIO
		}
	} else {
		if moved > 0 && x.off != len(f.sink) {
			f.t.Errorf("the device got byte %d after %d bytes", x.off, len(f.sink))
		}
		f.sink = append(f.sink, buf[:moved]...)
	}
	x.status, x.actual = -int32(status), int32(moved)
	f.completed = append(f.completed, x)
	f.halted = f.halted || status == unix.EPIPE
	if f.gone && status != 0 {
		f.unplug()
		return
	}
	if status != 0 {
		f.cancelContinuations()
	}
}

// cancelContinuations is cancel_bulk_urbs: the continuation URBs queued
// behind a failed or short one are unlinked, and when no URB of a new
// transfer is queued, the endpoint refuses continuations until one comes.
func (f *fakeKernel) cancelContinuations() {
	k := 0
	for k < len(f.pending) && f.pending[k].flags&urbBulkContinuation != 0 {
		k++
	}
	if k == len(f.pending) {
		f.disabled = true
	}
	for _, x := range f.pending[:k] {
		x.status, x.actual = -int32(unix.ECONNRESET), 0
		f.completed = append(f.completed, x)
	}
	f.pending = f.pending[:copy(f.pending, f.pending[k:])]
}

// unplug: the host controller gives every pending URB back with
// -ESHUTDOWN; a kernel before CAP_REAP_AFTER_DISCONNECT drops them all.
func (f *fakeKernel) unplug() {
	f.unplugged = true
	for _, x := range f.pending {
		x.status, x.actual = -int32(unix.ESHUTDOWN), 0
		f.completed = append(f.completed, x)
	}
	f.pending = f.pending[:0]
	if f.drop {
		f.completed = f.completed[:0]
	}
}

func (f *fakeKernel) reap(_ int, wait bool) (uintptr, error) {
	f.reaps++
	if f.unplugged && f.drop {
		return 0, unix.ENODEV
	}
	if len(f.completed) == 0 {
		switch {
		case f.unplugged:
			return 0, unix.ENODEV
		case !wait:
			return 0, unix.EAGAIN
		case len(f.pending) == 0:
			f.t.Errorf("REAPURB with no URB in flight: it would block for ever")
			return 0, unix.EDEADLK
		}
		f.completeOldest()
	}
	x := f.completed[0]
	f.completed = f.completed[:copy(f.completed, f.completed[1:])]
	x.u.Status, x.u.ActualLength = x.status, x.actual
	return uintptr(unsafe.Pointer(x.u)), nil
}

func (f *fakeKernel) discard(_ int, u *urb) error {
	f.discards++
	if f.unplugged {
		return unix.ENODEV
	}
	for i, x := range f.pending {
		if x.u == u {
			x.status, x.actual = -int32(unix.ECONNRESET), 0
			f.completed = append(f.completed, x)
			f.pending = append(f.pending[:i], f.pending[i+1:]...)
			return nil
		}
	}
	return unix.EINVAL
}

// reapWait is poll(2) and then a reap, as usbfsIO waits without a waiter.
func (f *fakeKernel) reapWait(fd int, ms int) (uintptr, waitCost, error) {
	f.poll(nil, ms)
	got, err := f.reap(fd, false)
	return got, waitCost{reaps: 1, sleeps: 1}, err
}

func (f *fakeKernel) poll(_ []unix.PollFd, _ int) (int, error) {
	f.polls++
	if f.polls > 100000 {
		f.t.Fatalf("transfer polls for ever")
	}
	if f.onPoll != nil && !f.onPoll(f.polls) {
		return 0, nil
	}
	if f.unplugged {
		return 1, nil // POLLHUP
	}
	if len(f.pending) == 0 {
		return 0, nil
	}
	f.completeOldest()
	for f.burst && len(f.pending) > 0 && !f.unplugged {
		f.completeOldest()
	}
	return 1, nil
}

// checkIdle: after a transfer the kernel holds none of its URBs, and no
// urb points into p any more.
func (f *fakeKernel) checkIdle(d *Device) {
	f.t.Helper()
	if n := f.inFlight(); n != 0 {
		f.t.Errorf("%d URBs left in the kernel (%d pending, %d completed)", n, len(f.pending), len(f.completed))
	}
	for i, u := range d.urbs {
		if u.Buffer != nil {
			f.t.Errorf("urbs[%d] still points at %p", i, u.Buffer)
		}
	}
}

// fakeDevice is an open Device whose transfers go to f: depth URBs of
// piece bytes, with the kernel's capabilities caps.
func fakeDevice(f *fakeKernel, depth, piece int, caps uint32) *Device {
	d := &Device{io: f, fd: 1000, caps: caps, piece: piece, noMemoryWait: time.Microsecond}
	d.info.Bus, d.info.Address, d.info.BulkIn, d.info.BulkOut = 1, 5, 0x81, 0x02
	d.urbs = make([]*urb, depth)
	for i := range d.urbs {
		d.urbs[i] = new(urb)
	}
	return d
}

var _ urbIO = (*fakeKernel)(nil)
