//go:build linux

package usbfs

import (
	"context"
	"errors"
	"fmt"
	"os"
	"syscall"
	"time"
	"unsafe"

	"golang.org/x/sys/unix"
)

// urbIO is what transfer, reap and discardAll ask of the kernel: usbfs's
// URB ioctls and a wait on the fd. It is a seam so that the loop's paths
// (short packets, stalls, ENOMEM, cancellation, strangers), which a real
// kernel shows only in the e2e suite, can be tested against a fake one.
// Open sets it to usbfsIO. Its methods take what is already on the heap
// (the urbs, d.pfd) and return the reaped address, so that calling them
// through an interface allocates nothing.
type urbIO interface {
	// submit queues u (USBDEVFS_SUBMITURB).
	submit(fd int, u *urb) error
	// reap takes back the oldest completed URB and returns its
	// address: USBDEVFS_REAPURB when wait, else USBDEVFS_REAPURBNDELAY.
	reap(fd int, wait bool) (uintptr, error)
	// discard cancels u (USBDEVFS_DISCARDURB).
	discard(fd int, u *urb) error
	// reapWait is reap(fd, false) that, while no URB has completed,
	// waits up to ms milliseconds for one; EAGAIN when none came. It
	// says what that cost: the reap ioctls it made and the times it
	// slept.
	reapWait(fd int, ms int) (got uintptr, cost waitCost, err error)
}

// waitCost is what one reapWait asked of the kernel.
type waitCost struct{ reaps, sleeps int }

// usbfsIO is urbIO on the running kernel. With a waiter it waits in Go's
// poller; without (a kernel whose usbfs node epoll refuses) in poll(2).
type usbfsIO struct {
	w   *waiter
	pfd *[1]unix.PollFd // the Device's, for poll(2)
}

// SUBMITURB, REAPURBNDELAY and DISCARDURB queue, take or cancel a URB and
// return: none of them waits for the device. They go as raw system calls
// (rawIoctl), without the runtime's bookkeeping for one that may block:
// with it, a call that took long (a submit is charged an emulated
// controller's work) let sysmon hand the goroutine's processor to another
// thread and keep waking every 20 µs, a context switch each time. Only
// REAPURB, which sleeps until a URB completes, is an ordinary one.

func (usbfsIO) submit(fd int, u *urb) error {
	return rawIoctl(fd, ioctlSubmitURB, unsafe.Pointer(u))
}

func (usbfsIO) reap(fd int, wait bool) (uintptr, error) {
	var got uintptr
	if !wait {
		err := rawIoctl(fd, ioctlReapURBNDelay, unsafe.Pointer(&got))
		return got, err
	}
	_, err := ioctl(fd, ioctlReapURB, unsafe.Pointer(&got))
	return got, err
}

func (usbfsIO) discard(fd int, u *urb) error {
	return rawIoctl(fd, ioctlDiscardURB, unsafe.Pointer(u))
}

func (io usbfsIO) reapWait(fd int, ms int) (uintptr, waitCost, error) {
	if io.w != nil {
		return io.w.reapWait(ms)
	}
	if _, err := unix.Poll(io.pfd[:], ms); err != nil && err != unix.EINTR {
		return 0, waitCost{sleeps: 1}, err
	}
	got, err := io.reap(fd, false)
	return got, waitCost{reaps: 1, sleeps: 1}, err
}

// A waiter waits for completed URBs in Go's network poller instead of
// in poll(2). A goroutine blocked in poll(2) holds an OS thread in a
// system call: the runtime hands its processor to another thread, and
// sysmon, seeing system calls all the time, keeps waking every few
// microseconds. Waiting for a URB three times a command, that was 30
// context switches and a dozen timer interrupts per command in the arm64
// guest (where each costs several times what it does on amd64), and the
// process's CPU per GiB was 4.8 times dd's. Parked in the poller, the
// goroutine gives its thread back and the usbfs node's readiness
// (POLLOUT: a completed URB waits to be reaped) wakes it.
type waiter struct {
	f     *os.File // a duplicate of the node, non-blocking, in the poller
	rc    syscall.RawConn
	try   func(uintptr) bool // tryReap, bound once so that a wait allocates nothing
	got   uintptr
	err   error
	tries int // tryReap's calls in this wait: the first is before any sleep
}

// newWaiter registers a duplicate of the usbfs node fd with Go's poller;
// nil when the kernel does not let epoll watch it (then poll(2) waits).
func newWaiter(fd int) *waiter {
	dup, err := unix.FcntlInt(uintptr(fd), unix.F_DUPFD_CLOEXEC, 0)
	if err != nil {
		return nil
	}
	// O_NONBLOCK is the open file's, shared with fd: usbfs's ioctls do
	// not look at it (REAPURB still blocks, REAPURBNDELAY never does).
	if err := unix.SetNonblock(dup, true); err != nil {
		unix.Close(dup)
		return nil
	}
	f := os.NewFile(uintptr(dup), "usbfs")
	rc, err := f.SyscallConn()
	if err != nil || f.SetDeadline(time.Time{}) != nil { // not in the poller
		f.Close()
		return nil
	}
	w := &waiter{f: f, rc: rc}
	w.try = w.tryReap
	return w
}

// tryReap reaps a completed URB if there is one; false (wait for the node
// to say one completed) when there is none. The poller resets the node's
// readiness before the first call, so a URB that completes after this
// call's EAGAIN wakes the wait, and one that completed before it is
// reaped here.
func (w *waiter) tryReap(fd uintptr) bool {
	var got uintptr
	w.tries++
	err := rawIoctl(int(fd), ioctlReapURBNDelay, unsafe.Pointer(&got))
	if err == unix.EAGAIN {
		return false
	}
	w.got, w.err = got, err
	return true
}

func (w *waiter) reapWait(ms int) (uintptr, waitCost, error) {
	if err := w.f.SetWriteDeadline(time.Now().Add(time.Duration(ms) * time.Millisecond)); err != nil {
		return 0, waitCost{}, err
	}
	w.got, w.err, w.tries = 0, nil, 0
	if err := w.rc.Write(w.try); err != nil {
		// Every try found nothing and was followed by a sleep, the
		// last of which ended at the deadline.
		if errors.Is(err, os.ErrDeadlineExceeded) {
			return 0, waitCost{reaps: w.tries, sleeps: w.tries}, unix.EAGAIN
		}
		return 0, waitCost{reaps: w.tries, sleeps: max(w.tries-1, 0)}, err
	}
	// The first try comes before any sleep, each later one after one.
	return w.got, waitCost{reaps: w.tries, sleeps: w.tries - 1}, w.err
}

func (w *waiter) close() {
	if w != nil {
		w.f.Close()
	}
}

// pollSlice bounds one wait for a URB, so that a cancelled context is
// seen within it without a goroutine or an allocation per transfer.
const pollSlice = 100 * time.Millisecond

// BulkOut sends p on the bulk-OUT endpoint as one data phase: URBs of
// OpenOptions.OutStreamChunk bytes straight from p (usbfs memory from
// AllocBuffers goes out without a copy; other memory is copied by the
// kernel), up to OpenOptions.OutStreamDepth in flight. Every URB but the
// last is whole max-size packets, so the device sees one data phase. On an
// error the URBs still in flight are discarded and n counts the bytes the
// device accepted before it.
func (d *Device) BulkOut(ctx context.Context, p []byte) (int, error) {
	d.mu.RLock()
	defer d.mu.RUnlock()
	if d.fd < 0 {
		return 0, d.closedErr("bulk OUT transfer")
	}
	n, err := d.transfer(ctx, d.info.BulkOut, p, len(d.urbs), false)
	if err != nil {
		return n, mapError(ctx, fmt.Sprintf("bulk OUT transfer of %d bytes to endpoint 0x%02x", len(p), d.info.BulkOut), d.info, err)
	}
	return n, nil
}

// BulkIn reads up to len(p) bytes from the bulk-IN endpoint and stops at
// the first short packet. Where the kernel has USBFS_CAP_BULK_CONTINUATION
// several URBs are in flight, every one but the last with SHORT_NOT_OK and
// every one but the first with BULK_CONTINUATION, so that the kernel
// cancels those behind a short one instead of filling them with the CSW;
// without it, one URB at a time.
func (d *Device) BulkIn(ctx context.Context, p []byte) (int, error) {
	d.mu.RLock()
	defer d.mu.RUnlock()
	if d.fd < 0 {
		return 0, d.closedErr("bulk IN transfer")
	}
	depth := 1
	if d.caps&capBulkContinuation != 0 {
		depth = len(d.urbs)
	}
	n, err := d.transfer(ctx, d.info.BulkIn, p, depth, true)
	if err != nil {
		return n, mapError(ctx, fmt.Sprintf("bulk IN transfer of %d bytes from endpoint 0x%02x", len(p), d.info.BulkIn), d.info, err)
	}
	return n, nil
}

// pieceLen is the length of the URB that starts at p[off:]: at most
// piece bytes, and never past the end of the usbfs mapping it lies in
// (the kernel refuses a URB that straddles two).
func (d *Device) pieceLen(p []byte, off int) int {
	n := min(len(p)-off, d.piece)
	addr := uintptr(unsafe.Pointer(&p[off]))
	for _, r := range d.regions {
		if lim := r.limit(addr); lim > 0 {
			return min(n, lim)
		}
	}
	return n
}

// transfer moves p through up to depth URBs in flight on endpoint ep.
func (d *Device) transfer(ctx context.Context, ep uint8, p []byte, depth int, in bool) (int, error) {
	if err := ctx.Err(); err != nil {
		return 0, err
	}
	if len(p) == 0 {
		// A zero-length data phase has no packet in BOT.
		return 0, nil
	}
	var (
		done      int // bytes completed
		off       int // bytes submitted
		head, cnt int // ring of in-flight URBs in d.urbs
		short     bool
		refused   bool // a continuation URB was refused: see below
		firstErr  error
		memWaits  int // waits for usbfs memory with nothing in flight
	)
	for (off < len(p) && !short && !refused && firstErr == nil) || cnt > 0 {
		for cnt < depth && off < len(p) && !short && !refused && firstErr == nil {
			u := d.urbs[(head+cnt)%len(d.urbs)]
			n := d.pieceLen(p, off)
			*u = urb{Type: urbTypeBulk, Endpoint: ep, Buffer: unsafe.Pointer(&p[off]), BufferLength: int32(n)}
			if in {
				if off+n < len(p) {
					u.Flags |= urbShortNotOK
				}
				if off > 0 && depth > 1 {
					u.Flags |= urbBulkContinuation
				}
			}
			d.counts.Submits++
			if err := d.io.submit(d.fd, u); err != nil {
				u.Buffer = nil
				if err == unix.ENOMEM && cnt == 0 && memWaits < noMemoryTries {
					// usbfs_memory_mb is one limit for every usbfs
					// user: other readers' URBs in flight hold it
					// and end within a transfer's time, so wait for
					// them rather than fail this card.
					if werr := d.waitForMemory(ctx, memWaits); werr != nil {
						firstErr = werr
						break
					}
					memWaits++
					continue
				}
				if err == unix.ENOMEM && cnt > 0 {
					// usbfs_memory_mb is spent by the URBs in flight:
					// fewer at once for the rest of this transfer.
					depth = cnt
					break
				}
				if err == unix.EREMOTEIO && cnt > 0 && u.Flags&urbBulkContinuation != 0 {
					// A URB in flight ended short or failed
					// before it was reaped, and the kernel now
					// refuses continuations: stop submitting,
					// and let that URB, reaped below, say which.
					refused = true
					break
				}
				firstErr = err
				break
			}
			off += n
			cnt++
		}
		if cnt == 0 {
			break
		}
		u, err := d.reap(ctx, d.urbs, &d.deadline)
		if err != nil {
			// Cancelled, past the deadline, or the device is gone:
			// take back every URB before p goes back to the caller.
			d.discardAll(head, cnt)
			if firstErr == nil {
				firstErr = err
			}
			return done, firstErr
		}
		want := d.urbs[head]
		if u != want {
			// usbfs completes one endpoint's URBs in order; a
			// stranger is a URB of ours from an earlier discard.
			continue
		}
		head = (head + 1) % len(d.urbs)
		cnt--
		st := unix.Errno(-u.Status)
		u.Buffer = nil
		if firstErr != nil || short {
			// Draining behind an error or a short packet: the
			// kernel cancelled these (BULK_CONTINUATION).
			if u.Status == 0 || st == unix.EREMOTEIO {
				done += int(u.ActualLength)
			}
			continue
		}
		done += int(u.ActualLength)
		switch {
		case u.Status == 0:
			if in && int(u.ActualLength) < int(u.BufferLength) {
				short = true
			}
		case in && st == unix.EREMOTEIO:
			short = true
		default:
			firstErr = urbStatus(st)
			if cnt > 0 {
				d.discardAll(head, cnt)
				return done, firstErr
			}
		}
	}
	if refused && !short && firstErr == nil {
		// No URB in flight explained the refusal.
		firstErr = unix.EREMOTEIO
	}
	return done, firstErr
}

// reap waits for one URB of pool to complete, honouring ctx and
// *deadline (none when zero; read at each wait, as SetDeadline may move
// it). A URB that has completed is taken even when ctx is
// done or the deadline has passed. reapWait tries to reap before it waits, so a URB that
// completed already costs no wait, and one that has not costs one
// REAPURBNDELAY before the wait and one after it.
func (d *Device) reap(ctx context.Context, pool []*urb, deadline *time.Time) (*urb, error) {
	for {
		wait := pollSlice
		now := time.Now()
		if dl, ok := ctx.Deadline(); ok {
			wait = min(wait, dl.Sub(now))
		}
		var stop error
		if !deadline.IsZero() {
			left := deadline.Sub(now)
			if left <= 0 {
				stop = context.DeadlineExceeded
			}
			wait = min(wait, left)
		}
		if err := ctx.Err(); err != nil {
			stop = err
		}
		if stop != nil {
			// Too late to wait; one that completed still counts.
			d.counts.Reaps++
			got, err := d.io.reap(d.fd, false)
			if err == nil {
				if u := ours(pool, got); u != nil {
					return u, nil
				}
				continue
			}
			if err != unix.EAGAIN {
				return nil, err
			}
			return nil, stop
		}
		ms := int(max(wait/time.Millisecond, 1))
		got, cost, err := d.io.reapWait(d.fd, ms)
		d.counts.Reaps += int64(cost.reaps)
		d.counts.Waits += int64(cost.sleeps)
		if err == nil {
			if u := ours(pool, got); u != nil {
				return u, nil
			}
			continue
		}
		if err != unix.EAGAIN && err != unix.EINTR {
			return nil, err
		}
	}
}

// ours is the URB of pool at address got; nil for one that is not (a URB
// of an earlier discard, reaped late).
func ours(pool []*urb, got uintptr) *urb {
	for _, u := range pool {
		if uintptr(unsafe.Pointer(u)) == got {
			return u
		}
	}
	return nil
}

// discardAll cancels the cnt URBs in flight from head and reaps them, so
// the kernel no longer writes to them or their buffers.
func (d *Device) discardAll(head, cnt int) {
	for i := 0; i < cnt; i++ {
		u := d.urbs[(head+i)%len(d.urbs)]
		d.counts.Other++
		_ = d.io.discard(d.fd, u)
	}
	for i := 0; i < cnt; i++ {
		d.counts.Reaps++
		if _, err := d.io.reap(d.fd, true); err != nil {
			// The device is gone: the kernel dropped the URBs
			// and will not write to them.
			break
		}
	}
	for _, u := range d.urbs {
		u.Buffer = nil
	}
}

// noMemoryTries is how often a transfer with no URB in flight waits for
// usbfs memory before it fails: 10 ms doubled each time, 1.27 s in all,
// which is many transfers' time for the readers holding it.
const noMemoryTries = 7

// waitForMemory waits before the try-th retry of a URB usbfs refused
// memory for, or returns ctx's error.
func (d *Device) waitForMemory(ctx context.Context, try int) error {
	first := d.noMemoryWait
	if first == 0 {
		first = 10 * time.Millisecond
	}
	t := time.NewTimer(first << try)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-t.C:
		return nil
	}
}
