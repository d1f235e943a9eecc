//go:build linux || darwin || windows

package libusbdl

import (
	"context"
	"runtime"
	"sync"
	"sync/atomic"
	"time"
)

// xferAPI is what the event thread and the transfers ask of libusb:
// Library over libusb-1.0, a fake in tests, which completes transfers
// inside handleEvents on the event thread as libusb does.
type xferAPI interface {
	newContext() (uintptr, error)
	exitContext(ctx uintptr)
	// handleEvents is libusb_handle_events_timeout_completed with no
	// completion flag: it returns after one round of events or at tv.
	handleEvents(ctx uintptr, tv *timeval) error
	// interrupt wakes the event handler (libusb 1.0.21); false when the
	// library cannot, and the handler's timeout has to do.
	interrupt(ctx uintptr) bool
	allocTransfer() *transferC
	freeTransfer(t *transferC)
	submit(t *transferC) error
	cancel(t *transferC) error
	setStreamID(t *transferC, id uint32)
}

// States of an xfer.
const (
	xferIdle int32 = iota
	xferFlying
	xferDone
)

// An xfer is one libusb transfer, allocated once per open and submitted
// again for every transfer it carries. Completion is polled: the event
// thread sees libusb's status replace statusInFlight and says so on done.
// A Go callback would be simpler to read but costs allocations per call
// (purego makes every call through reflect), and one thread does all of
// libusb's work either way.
type xfer struct {
	t     *transferC
	state atomic.Int32
	done  chan struct{} // capacity 1: the event thread saw it complete
	// cancelled: the owner asked libusb to cancel this flight.
	cancelled bool
	// pin holds the Go memory of the flight (libusb keeps the pointer
	// after libusb_submit_transfer returns: Go's rules for memory that C
	// retains require it pinned).
	pin runtime.Pinner
	// stream is the UAS stream (0: a plain bulk transfer).
	stream uint16
}

// An eventLoop is one libusb context and the goroutine, locked to its OS
// thread, that handles all its events: libusb's own model for programs
// with asynchronous transfers. Transfers are submitted from whichever
// goroutine moves the data (libusb_submit_transfer is thread-safe); they
// complete on the event thread, never in a synchronous call of another.
type eventLoop struct {
	api xferAPI
	ctx uintptr

	mu    sync.Mutex // guards xfers against a scan
	xfers []*xfer
	// anyDone says some transfer completed (UAS reaps whichever did).
	anyDone chan struct{}

	stop   atomic.Bool
	exited chan struct{}
	tv     timeval // the event thread's, reused
	// rounds counts the event rounds handled (tests read it).
	rounds atomic.Int64
}

// eventSlice bounds one libusb_handle_events call: how late a stop is
// seen when the library cannot interrupt the handler (before 1.0.21).
const eventSlice = 200 * time.Millisecond

// startLoop creates a libusb context and starts its event thread.
func startLoop(api xferAPI) (*eventLoop, error) {
	ctx, err := api.newContext()
	if err != nil {
		return nil, err
	}
	l := &eventLoop{api: api, ctx: ctx, anyDone: make(chan struct{}, 1), exited: make(chan struct{})}
	go l.run()
	return l, nil
}

func (l *eventLoop) run() {
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	defer close(l.exited)
	for !l.stop.Load() {
		l.tv = timevalOf(eventSlice)
		err := l.api.handleEvents(l.ctx, &l.tv)
		l.rounds.Add(1)
		l.collect()
		if err != nil && err != ErrInterrupted {
			// A failing poll (a context in trouble): do not spin.
			time.Sleep(10 * time.Millisecond)
		}
	}
}

// collect marks the transfers libusb completed in the round just handled
// and wakes their owners. It runs on the event thread, where libusb wrote
// their status, so reading it races with nothing.
func (l *eventLoop) collect() {
	l.mu.Lock()
	defer l.mu.Unlock()
	woke := false
	for _, x := range l.xfers {
		if x.state.Load() == xferFlying && x.t.status != statusInFlight {
			x.state.Store(xferDone)
			signal(x.done)
			woke = true
		}
	}
	if woke {
		signal(l.anyDone)
	}
}

func signal(c chan struct{}) {
	select {
	case c <- struct{}{}:
	default:
	}
}

// newXfer allocates a transfer on the loop's context.
func (l *eventLoop) newXfer() (*xfer, error) {
	t := l.api.allocTransfer()
	if t == nil {
		return nil, ErrNoMem
	}
	x := &xfer{t: t, done: make(chan struct{}, 1)}
	l.mu.Lock()
	l.xfers = append(l.xfers, x)
	l.mu.Unlock()
	return x, nil
}

// stop stops the event thread and frees the transfers; the context
// stays, for the handle to be closed on it, until exit. No transfer may
// be in flight: every owner waits for its own.
func (l *eventLoop) stopThread() {
	if l.stop.Swap(true) {
		return
	}
	l.api.interrupt(l.ctx)
	<-l.exited
	l.mu.Lock()
	for _, x := range l.xfers {
		l.api.freeTransfer(x.t)
		x.t = nil
	}
	l.xfers = nil
	l.mu.Unlock()
}

// exit ends the context (libusb_exit), after stopThread.
func (l *eventLoop) exit() { l.api.exitContext(l.ctx) }

// submit starts x moving buf (pinned here when it is Go memory) on
// endpoint ep as a transfer of type typ; stream is the bulk stream (0:
// none).
func (l *eventLoop) submit(x *xfer, h uintptr, ep uint8, typ uint8, buf []byte, timeout time.Duration, stream uint16) error {
	t := x.t
	x.pin.Pin(&buf[0])
	*t = transferC{devHandle: h, endpoint: ep, typ: typ, timeout: uint32(timeout / time.Millisecond),
		status: statusInFlight, length: int32(len(buf)), buffer: addr(buf)}
	if stream != 0 {
		l.api.setStreamID(t, uint32(stream))
	}
	x.stream, x.cancelled = stream, false
	x.state.Store(xferFlying)
	if err := l.api.submit(t); err != nil {
		x.state.Store(xferIdle)
		x.pin.Unpin()
		return err
	}
	return nil
}

// cancelXfer asks libusb to end x early; it still completes (with
// LIBUSB_TRANSFER_CANCELLED, or how it ended first) and is waited for.
func (l *eventLoop) cancelXfer(x *xfer) {
	if x.state.Load() == xferFlying && !x.cancelled {
		x.cancelled = true
		_ = l.api.cancel(x.t)
	}
}

// finish takes back a completed x: its byte count and, unless it
// completed, its status as an error.
func (l *eventLoop) finish(x *xfer) (int, error) {
	x.pin.Unpin()
	x.state.Store(xferIdle)
	select { // a wake-up not consumed by the wait
	case <-x.done:
	default:
	}
	n := int(x.t.actualLength)
	if st := x.t.status; st != statusCompleted {
		return n, Status(st)
	}
	return n, nil
}

// A waiter waits for transfers of one owner (the bulk path, the UAS
// side): its timer is reused, so a wait allocates nothing.
type waiter struct {
	timer *time.Timer
}

func newWaiter() *waiter {
	t := time.NewTimer(time.Hour)
	t.Stop()
	return &waiter{timer: t}
}

// waitSlice bounds one wait, so a deadline set while waiting is seen.
const waitSlice = 100 * time.Millisecond

// await waits until x completes, cancelling it when ctx is done or the
// deadline (zero: none) has passed, and waiting for it after that too,
// so that libusb is done with its memory when await returns. expired
// says the deadline cancelled it.
func (w *waiter) await(l *eventLoop, ctx context.Context, x *xfer, deadline *time.Time) (n int, err error, expired bool) {
	done := ctx.Done()
	for x.state.Load() != xferDone {
		if !x.cancelled {
			if ctx.Err() != nil {
				l.cancelXfer(x)
			} else if !deadline.IsZero() && !time.Now().Before(*deadline) {
				l.cancelXfer(x)
				expired = true
			}
		}
		if x.cancelled {
			done = nil // done stays done: wait for the completion alone
		}
		w.timer.Reset(w.slice(deadline, x.cancelled))
		select {
		case <-x.done:
		case <-done:
		case <-w.timer.C:
		}
		w.timer.Stop()
	}
	n, err = l.finish(x)
	return n, err, expired
}

// slice is how long the next wait may be: waitSlice, less up to the
// deadline while the transfer has not been cancelled.
func (w *waiter) slice(deadline *time.Time, cancelled bool) time.Duration {
	d := waitSlice
	if !cancelled && !deadline.IsZero() {
		d = min(d, max(time.Until(*deadline), time.Millisecond))
	}
	return d
}
