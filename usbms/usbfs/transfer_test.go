//go:build linux

package usbfs

import (
	"bytes"
	"context"
	"errors"
	"slices"
	"testing"
	"time"
	"unsafe"

	"golang.org/x/sys/unix"

	"github.com/usbflash/usbflash/usbms"
	"github.com/usbflash/usbflash/usbms/usbdev"
)

const mib = 1 << 20

// pattern is n bytes that differ from one piece to the next, so that a
// piece sent twice or out of place shows.
func pattern(n int) []byte {
	p := make([]byte, n)
	for i := range p {
		p[i] = byte(i/4093 + i)
	}
	return p
}

// TestTransferOut: an OUT data phase goes out whole, in order, in pieces
// of at most the URB size that never cross a usbfs mapping's end, with
// depth URBs in flight.
func TestTransferOut(t *testing.T) {
	for _, tt := range []struct {
		name      string
		size      int
		depth     int
		mapped    bool // p lies in a usbfs mapping, starting 512 KiB before a mapPiece boundary
		burst     bool
		wantPiece []int // the URB sizes, when not all 1 MiB
	}{
		{name: "8 MiB at depth 4", size: 8 * mib, depth: 4},
		{name: "8 MiB at depth 4, all done at once", size: 8 * mib, depth: 4, burst: true},
		{name: "depth 1", size: 3 * mib, depth: 1},
		{name: "a tail", size: 2*mib + 100, depth: 4, wantPiece: []int{mib, mib, 100}},
		{name: "across usbfs mappings", size: 3 * mib, depth: 4, mapped: true,
			wantPiece: []int{mib / 2, mib, mib, mib / 2}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			f := newFakeKernel(t, 0x02)
			f.burst = tt.burst
			d := fakeDevice(f, tt.depth, mib, capBulkContinuation)
			p := pattern(tt.size)
			if tt.mapped {
				// Plain memory that pieceLen takes for mappings:
				// it is never freed through region.free.
				mem := make([]byte, 2*mapPiece)
				d.regions = []region{{mem: mem, mapped: true}}
				f.mapBase = uintptr(unsafe.Pointer(unsafe.SliceData(mem)))
				p = mem[mapPiece-mib/2 : mapPiece-mib/2+tt.size]
				copy(p, pattern(tt.size))
			}
			f.start(p)
			n, err := d.BulkOut(context.Background(), p)
			if err != nil || n != len(p) {
				t.Fatalf("BulkOut: %d, %v; want %d, nil", n, err, len(p))
			}
			if !bytes.Equal(f.sink, p) {
				t.Errorf("the device got %d bytes that are not p", len(f.sink))
			}
			want := tt.wantPiece
			if want == nil {
				for range tt.size / mib {
					want = append(want, mib)
				}
			}
			var got []int
			for _, s := range f.subs {
				got = append(got, s.n)
				if s.flags != 0 {
					t.Errorf("OUT urb at %d has flags %#x", s.off, s.flags)
				}
			}
			if !slices.Equal(got, want) {
				t.Errorf("URB sizes %v, want %v", got, want)
			}
			if f.maxInFlight != min(tt.depth, len(want)) {
				t.Errorf("at most %d URBs in flight, want %d", f.maxInFlight, min(tt.depth, len(want)))
			}
			f.checkIdle(d)
		})
	}
}

// TestTransferNoMemory: when usbfs_memory_mb refuses a URB while others
// are in flight, the transfer goes on with as many as were in flight; when
// it refuses the first, the caller is told the kernel is out of memory.
func TestTransferNoMemory(t *testing.T) {
	for _, tt := range []struct {
		name     string
		in       bool
		limit    int
		wantMost int // URBs in flight after the refusal
	}{
		{name: "OUT, room for 2 of 4", limit: 2 * mib, wantMost: 2},
		{name: "IN, room for 2 of 4", in: true, limit: 2 * mib, wantMost: 2},
		{name: "OUT, room for 1 of 4", limit: mib + mib/2, wantMost: 1},
	} {
		t.Run(tt.name, func(t *testing.T) {
			ep := uint8(0x02)
			if tt.in {
				ep = 0x81
			}
			f := newFakeKernel(t, ep)
			f.limit = tt.limit
			d := fakeDevice(f, 4, mib, capBulkContinuation)
			p := make([]byte, 8*mib)
			f.src = pattern(len(p))
			if !tt.in {
				copy(p, f.src)
			}
			f.start(p)
			var n int
			var err error
			if tt.in {
				n, err = d.BulkIn(context.Background(), p)
			} else {
				n, err = d.BulkOut(context.Background(), p)
			}
			if err != nil || n != len(p) {
				t.Fatalf("transfer: %d, %v; want %d, nil", n, err, len(p))
			}
			moved := f.sink
			if tt.in {
				moved = p
			}
			if !bytes.Equal(moved, f.src) {
				t.Error("the bytes moved are not the transfer's")
			}
			if f.enomem != 1 {
				t.Errorf("ENOMEM %d times, want once: the depth stays lowered", f.enomem)
			}
			if f.maxAfterNoMem > tt.wantMost {
				t.Errorf("%d URBs in flight after ENOMEM, want at most %d", f.maxAfterNoMem, tt.wantMost)
			}
			f.checkIdle(d)
		})
	}
	t.Run("nothing in flight", func(t *testing.T) {
		f := newFakeKernel(t, 0x02)
		f.limit = mib / 2
		d := fakeDevice(f, 4, mib, capBulkContinuation)
		p := make([]byte, 4*mib)
		f.start(p)
		n, err := d.BulkOut(context.Background(), p)
		if n != 0 || !errors.Is(err, usbdev.ErrNoMemory) {
			t.Errorf("BulkOut: %d, %v; want 0 and %v", n, err, usbdev.ErrNoMemory)
		}
		if f.enomem != noMemoryTries+1 {
			t.Errorf("ENOMEM %d times, want %d: the first try and one after each wait", f.enomem, noMemoryTries+1)
		}
		var le *usbdev.Error
		if !errors.As(err, &le) || le.DevNode != "/dev/bus/usb/001/005" {
			t.Errorf("not the device's *usbdev.Error: %#v", err)
		}
		f.checkIdle(d)
	})
	t.Run("nothing in flight, memory freed while waiting", func(t *testing.T) {
		// The soak's failure: other readers' URBs held the limit for a
		// moment, and a CBW with nothing of its own in flight failed.
		f := newFakeKernel(t, 0x02)
		f.limit = mib / 2
		f.freeAfter = 3
		d := fakeDevice(f, 4, mib, capBulkContinuation)
		p := make([]byte, 4*mib)
		f.src = pattern(len(p))
		copy(p, f.src)
		f.start(p)
		n, err := d.BulkOut(context.Background(), p)
		if err != nil || n != len(p) {
			t.Fatalf("BulkOut: %d, %v; want %d, nil", n, err, len(p))
		}
		if !bytes.Equal(f.sink, f.src) {
			t.Error("the bytes moved are not the transfer's")
		}
		f.checkIdle(d)
	})
	t.Run("nothing in flight, cancelled while waiting", func(t *testing.T) {
		f := newFakeKernel(t, 0x02)
		f.limit = mib / 2
		d := fakeDevice(f, 4, mib, capBulkContinuation)
		d.noMemoryWait = time.Hour
		p := make([]byte, 4*mib)
		f.start(p)
		ctx, cancel := context.WithCancel(context.Background())
		time.AfterFunc(time.Millisecond, cancel)
		n, err := d.BulkOut(ctx, p)
		if n != 0 || !errors.Is(err, context.Canceled) {
			t.Errorf("BulkOut: %d, %v; want 0 and %v", n, err, context.Canceled)
		}
		f.checkIdle(d)
	})
}

// TestTransferShortIn: an IN data phase that ends early gives the bytes
// up to its short packet; the URBs behind it are cancelled by the kernel
// (BULK_CONTINUATION) and reaped, not counted; without the capability one
// URB is in flight at a time, so none is behind to fill with the CSW.
func TestTransferShortIn(t *testing.T) {
	const size = 8 * mib
	for _, tt := range []struct {
		name    string
		caps    uint32
		shortAt int
		burst   bool
	}{
		{name: "inside the 3rd URB", caps: capBulkContinuation, shortAt: 2*mib + 4096},
		{name: "at a URB's start", caps: capBulkContinuation, shortAt: 3 * mib},
		{name: "no data", caps: capBulkContinuation, shortAt: 0},
		{name: "in the last URB", caps: capBulkContinuation, shortAt: size - 512},
		{name: "near the end, all done at once", caps: capBulkContinuation, shortAt: size - mib - 512, burst: true},
		// The short URB completes before the one ahead of it is reaped:
		// the next continuation URB is refused with EREMOTEIO.
		{name: "inside the 2nd URB, all done at once", caps: capBulkContinuation, shortAt: mib + 4096, burst: true},
		{name: "without BULK_CONTINUATION", shortAt: 2*mib + 4096},
		{name: "without BULK_CONTINUATION, in the last URB", shortAt: size - 512},
	} {
		t.Run(tt.name, func(t *testing.T) {
			f := newFakeKernel(t, 0x81)
			f.shortAt, f.burst = tt.shortAt, tt.burst
			d := fakeDevice(f, 4, mib, tt.caps)
			f.src = pattern(size)
			p := bytes.Repeat([]byte{0xEE}, size)
			f.start(p)
			n, err := d.BulkIn(context.Background(), p)
			if err != nil || n != tt.shortAt {
				t.Fatalf("BulkIn: %d, %v; want %d, nil", n, err, tt.shortAt)
			}
			if !bytes.Equal(p[:n], f.src[:n]) {
				t.Error("p[:n] is not what the device sent")
			}
			for i := n; i < len(p); i++ {
				if p[i] != 0xEE {
					t.Errorf("p written past the short packet, at byte %d", i)
					break
				}
			}
			cont := tt.caps&capBulkContinuation != 0
			for i, s := range f.subs {
				last := s.off+s.n == size
				if (s.flags&urbShortNotOK != 0) == last {
					t.Errorf("URB %d (last %v): flags %#x, SHORT_NOT_OK on all but the last", i, last, s.flags)
				}
				if (s.flags&urbBulkContinuation != 0) != (cont && i > 0) {
					t.Errorf("URB %d: flags %#x, BULK_CONTINUATION on all but the first (capability %v)", i, s.flags, cont)
				}
			}
			if !cont && f.maxInFlight != 1 {
				t.Errorf("%d URBs in flight without BULK_CONTINUATION, want 1", f.maxInFlight)
			}
			if cont && f.maxInFlight != 4 {
				t.Errorf("%d URBs in flight with BULK_CONTINUATION, want 4", f.maxInFlight)
			}
			f.checkIdle(d)
		})
	}
}

// TestTransferFails: a URB that fails ends the transfer with its error,
// the bytes moved before it, and the URBs still in flight discarded and
// reaped.
func TestTransferFails(t *testing.T) {
	const size = 8 * mib
	for _, tt := range []struct {
		name      string
		in        bool
		failAt    int
		failWith  unix.Errno
		gone      bool
		drop      bool
		burst     bool
		kind      error
		discarded int
	}{
		{name: "OUT stall", failAt: 2*mib + 512, failWith: unix.EPIPE, kind: usbms.ErrStall, discarded: 3},
		{name: "IN stall", in: true, failAt: 2*mib + 512, failWith: unix.EPIPE, kind: usbms.ErrStall, discarded: 3},
		{name: "OUT stall in the last URB", failAt: size - 512, failWith: unix.EPIPE, kind: usbms.ErrStall},
		{name: "OUT, device gone", failAt: mib, failWith: unix.ESHUTDOWN, gone: true, kind: usbms.ErrNoDevice, discarded: 3},
		{name: "IN, device gone, URBs dropped", in: true, failAt: mib, failWith: unix.ESHUTDOWN, gone: true, drop: true,
			kind: usbms.ErrNoDevice, discarded: 4},
		{name: "IN stall, all done at once", in: true, failAt: mib + 512, failWith: unix.EPIPE, burst: true,
			kind: usbms.ErrStall, discarded: 2},
		{name: "OUT stall, all done at once", failAt: 2*mib + 512, failWith: unix.EPIPE, burst: true, kind: usbms.ErrStall, discarded: 3},
	} {
		t.Run(tt.name, func(t *testing.T) {
			ep := uint8(0x02)
			if tt.in {
				ep = 0x81
			}
			f := newFakeKernel(t, ep)
			f.failAt, f.failWith, f.gone, f.drop, f.burst = tt.failAt, tt.failWith, tt.gone, tt.drop, tt.burst
			d := fakeDevice(f, 4, mib, capBulkContinuation)
			f.src = pattern(size)
			p := make([]byte, size)
			if !tt.in {
				copy(p, f.src)
			}
			f.start(p)
			var n int
			var err error
			if tt.in {
				n, err = d.BulkIn(context.Background(), p)
			} else {
				n, err = d.BulkOut(context.Background(), p)
			}
			if !errors.Is(err, tt.kind) {
				t.Errorf("error %v, want kind %v", err, tt.kind)
			}
			if n != tt.failAt {
				t.Errorf("n = %d, want %d", n, tt.failAt)
			}
			if f.discards != tt.discarded {
				t.Errorf("%d URBs discarded, want %d", f.discards, tt.discarded)
			}
			f.checkIdle(d)
		})
	}
}

// TestTransferCancel: a transfer cancelled, or past the device's
// deadline, while URBs are in flight discards and reaps every one of them
// before p goes back to the caller.
func TestTransferCancel(t *testing.T) {
	for _, tt := range []struct {
		name string
		in   bool
		stop func(cancel context.CancelFunc, d *Device)
		kind error
	}{
		{name: "OUT cancelled", stop: func(c context.CancelFunc, _ *Device) { c() }, kind: context.Canceled},
		{name: "IN cancelled", in: true, stop: func(c context.CancelFunc, _ *Device) { c() }, kind: context.Canceled},
		{name: "OUT past the deadline", kind: context.DeadlineExceeded,
			stop: func(_ context.CancelFunc, d *Device) { d.deadline = time.Now().Add(-time.Second) }},
	} {
		t.Run(tt.name, func(t *testing.T) {
			ep := uint8(0x02)
			if tt.in {
				ep = 0x81
			}
			f := newFakeKernel(t, ep)
			d := fakeDevice(f, 4, mib, capBulkContinuation)
			ctx, cancel := context.WithCancel(context.Background())
			defer cancel()
			inFlight := 0
			f.onPoll = func(n int) bool {
				if n < 3 {
					return true
				}
				inFlight = f.inFlight()
				tt.stop(cancel, d)
				return false
			}
			p := make([]byte, 8*mib)
			f.src = pattern(len(p))
			f.start(p)
			var n int
			var err error
			if tt.in {
				n, err = d.BulkIn(ctx, p)
			} else {
				n, err = d.BulkOut(ctx, p)
			}
			if !errors.Is(err, tt.kind) {
				t.Errorf("error %v, want it to wrap %v", err, tt.kind)
			}
			if n != 2*mib {
				t.Errorf("n = %d, want the 2 URBs done before", n)
			}
			if inFlight != 4 || f.discards != inFlight {
				t.Errorf("%d URBs discarded of %d in flight, want all 4", f.discards, inFlight)
			}
			f.checkIdle(d)
		})
	}
}

// TestTransferStranger: a URB of ours reaped from an earlier transfer's
// discard is not taken for one of this transfer's.
func TestTransferStranger(t *testing.T) {
	f := newFakeKernel(t, 0x02)
	d := fakeDevice(f, 4, mib, capBulkContinuation)
	p := pattern(2 * mib)
	f.start(p)
	f.completed = append(f.completed, fakeURB{u: d.urbs[3], status: -int32(unix.ENOENT)})
	n, err := d.BulkOut(context.Background(), p)
	if err != nil || n != len(p) {
		t.Fatalf("BulkOut: %d, %v; want %d, nil", n, err, len(p))
	}
	if !bytes.Equal(f.sink, p) {
		t.Error("the device did not get p")
	}
	f.checkIdle(d)
}

// TestTransferAllocs: the hot path allocates nothing per transfer, the
// call through urbIO included; nor does usbfsIO's reap.
func TestTransferAllocs(t *testing.T) {
	for _, in := range []bool{false, true} {
		ep := uint8(0x02)
		if in {
			ep = 0x81
		}
		f := newFakeKernel(t, ep)
		d := fakeDevice(f, 4, mib, capBulkContinuation)
		p := make([]byte, 4*mib+512)
		f.src = p
		f.sink = make([]byte, 0, len(p))
		ctx := context.Background()
		allocs := testing.AllocsPerRun(20, func() {
			f.start(p)
			var err error
			if in {
				_, err = d.BulkIn(ctx, p)
			} else {
				_, err = d.BulkOut(ctx, p)
			}
			if err != nil {
				t.Fatal(err)
			}
		})
		if allocs != 0 {
			t.Errorf("in %v: %v allocations per transfer, want 0", in, allocs)
		}
	}
	if a := testing.AllocsPerRun(20, func() { _, _ = usbfsIO{}.reap(-1, false) }); a != 0 {
		t.Errorf("usbfsIO.reap: %v allocations, want 0", a)
	}
}

// TestReapWhenDone: once ctx is done or the device's deadline has passed,
// reap still takes a URB that has completed, then returns why it stops,
// and waits for nothing.
func TestReapWhenDone(t *testing.T) {
	for _, tt := range []struct {
		name string
		stop func(cancel context.CancelFunc, d *Device)
		want error
	}{
		{name: "cancelled", stop: func(c context.CancelFunc, _ *Device) { c() }, want: context.Canceled},
		{name: "past the deadline", want: context.DeadlineExceeded,
			stop: func(_ context.CancelFunc, d *Device) { d.deadline = time.Now().Add(-time.Second) }},
	} {
		t.Run(tt.name, func(t *testing.T) {
			f := newFakeKernel(t, 0x02)
			d := fakeDevice(f, 4, mib, capBulkContinuation)
			ctx, cancel := context.WithCancel(context.Background())
			defer cancel()
			tt.stop(cancel, d)
			stranger := new(urb)
			f.completed = append(f.completed, fakeURB{u: stranger}, fakeURB{u: d.urbs[1], actual: 512})
			if u, err := d.reap(ctx, d.urbs, &d.deadline); err != nil || u != d.urbs[1] {
				t.Fatalf("reap = %p, %v; want the completed URB %p", u, err, d.urbs[1])
			}
			if u, err := d.reap(ctx, d.urbs, &d.deadline); !errors.Is(err, tt.want) {
				t.Errorf("reap with none completed = %p, %v; want %v", u, err, tt.want)
			}
			if f.polls != 0 {
				t.Errorf("reap waited %d times after it was told to stop", f.polls)
			}
		})
	}
}

// TestReapCalls: a URB that has to be waited for costs one wait and one
// reap after it (the kernel wakes the wait when a URB completes), not a
// reap before the wait too; a system call is dear on a slow host.
func TestReapCalls(t *testing.T) {
	f := newFakeKernel(t, 0x02)
	d := fakeDevice(f, 4, mib, capBulkContinuation)
	p := pattern(8 * mib)
	f.start(p)
	if n, err := d.BulkOut(context.Background(), p); err != nil || n != len(p) {
		t.Fatalf("BulkOut: %d, %v; want %d, nil", n, err, len(p))
	}
	if f.polls != 8 || f.reaps != 8 {
		t.Errorf("8 URBs, each completed by a wait: %d waits and %d reaps, want 8 and 8", f.polls, f.reaps)
	}
	// The device's own counts are what the kernel saw.
	want := usbms.IOCounts{Submits: 8, Reaps: int64(f.reaps), Waits: int64(f.polls)}
	if got := d.IOCounts(); got != want {
		t.Errorf("IOCounts %+v, want %+v", got, want)
	}
	f.checkIdle(d)
}

// TestIOCountsOfFailures: a transfer cut short by a failure counts what
// it asked of the kernel too: the URBs it submitted, the discards of those
// still in flight and the blocking reaps that took them back.
func TestIOCountsOfFailures(t *testing.T) {
	f := newFakeKernel(t, 0x02)
	f.failAt, f.failWith = mib+5, unix.EPROTO
	d := fakeDevice(f, 4, mib, capBulkContinuation)
	p := pattern(8 * mib)
	f.start(p)
	if _, err := d.BulkOut(context.Background(), p); err == nil {
		t.Fatal("BulkOut past a failing URB succeeded")
	}
	got := d.IOCounts()
	if got.Submits != int64(len(f.subs)) || got.Reaps != int64(f.reaps) || got.Waits != int64(f.polls) || got.Other != int64(f.discards) {
		t.Errorf("IOCounts %+v; the kernel saw %d submits, %d reaps, %d waits, %d discards", got, len(f.subs), f.reaps, f.polls, f.discards)
	}
	if f.discards == 0 {
		t.Errorf("no URB was discarded: the case tests nothing")
	}
	f.checkIdle(d)
}
