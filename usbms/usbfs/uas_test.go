//go:build linux

package usbfs

import (
	"context"
	"errors"
	"sync"
	"testing"
	"time"
	"unsafe"

	"golang.org/x/sys/unix"

	"github.com/usbflash/usbflash/usbms"
	"github.com/usbflash/usbflash/usbms/usbdev"
)

// pipeKernel is usbfs as URBs on several endpoints show it: SUBMITURB
// hands each URB to the test (subs), which completes it (complete) in
// any order; DISCARDURB completes a pending URB with -ENOENT, as an
// unlinked one is given back; a reap takes completed URBs in the order
// they completed, or ENODEV once the device is gone.
type pipeKernel struct {
	mu      sync.Mutex
	pending map[*urb]bool
	subs    chan *urb
	done    chan *urb
	gone    bool
}

func newPipeKernel() *pipeKernel {
	return &pipeKernel{pending: map[*urb]bool{}, subs: make(chan *urb, 16), done: make(chan *urb, 16)}
}

func (k *pipeKernel) submit(_ int, u *urb) error {
	k.mu.Lock()
	defer k.mu.Unlock()
	if k.gone {
		return unix.ENODEV
	}
	k.pending[u] = true
	k.subs <- u
	return nil
}

// complete ends u with status, moving data into (IN) or counting (OUT) it.
func (k *pipeKernel) complete(u *urb, data []byte, n int, status unix.Errno) {
	k.mu.Lock()
	defer k.mu.Unlock()
	if !k.pending[u] {
		return
	}
	delete(k.pending, u)
	if data != nil {
		copy(unsafe.Slice((*byte)(u.Buffer), u.BufferLength), data)
		n = len(data)
	}
	u.ActualLength, u.Status = int32(n), -int32(status)
	k.done <- u
}

func (k *pipeKernel) discard(_ int, u *urb) error {
	k.complete(u, nil, 0, unix.ENOENT)
	return nil
}

func (k *pipeKernel) reap(fd int, wait bool) (uintptr, error) {
	got, _, err := k.reapWait(fd, 0)
	return got, err
}

func (k *pipeKernel) reapWait(_ int, ms int) (uintptr, waitCost, error) {
	k.mu.Lock()
	gone := k.gone
	k.mu.Unlock()
	if gone {
		return 0, waitCost{reaps: 1}, unix.ENODEV
	}
	t := time.NewTimer(time.Duration(ms) * time.Millisecond)
	defer t.Stop()
	select {
	case u := <-k.done:
		return uintptr(unsafe.Pointer(u)), waitCost{reaps: 1, sleeps: 1}, nil
	case <-t.C:
		return 0, waitCost{reaps: 1, sleeps: 1}, unix.EAGAIN
	}
}

func uasDevice(k *pipeKernel) *Device {
	d := &Device{io: k, fd: 1000}
	d.info.Bus, d.info.Address = 1, 5
	d.info.UAS = usbdev.UASSetting{Command: 0x01, Status: 0x82, DataIn: 0x83, DataOut: 0x04, MaxStreams: 16}
	d.uas.on, d.uas.streams, d.uas.eps = true, 16, [5]uint8{0, 0x01, 0x82, 0x83, 0x04}
	return d
}

// TestPipeTransfers: a status read and a data read wait on one stream
// while the command goes out, all three submitted at once; each URB
// carries its pipe's endpoint and the stream, and each reap gives back
// its own transfer whatever the order they complete in, with what moved
// and how it ended (a stall on the data pipe is ErrStall).
func TestPipeTransfers(t *testing.T) {
	for _, stall := range []bool{false, true} {
		k := newPipeKernel()
		d := uasDevice(k)
		ctx := context.Background()
		st := &usbms.PipeXfer{Pipe: usbms.PipeStatus, Stream: 7, Buf: make([]byte, 112)}
		data := &usbms.PipeXfer{Pipe: usbms.PipeDataIn, Stream: 7, Buf: make([]byte, 4096)}
		cmd := &usbms.PipeXfer{Pipe: usbms.PipeCommand, Buf: make([]byte, 32)}
		for _, x := range []*usbms.PipeXfer{st, data, cmd} {
			if err := d.PipeSubmit(x); err != nil {
				t.Fatalf("PipeSubmit %s: %v", x.Pipe, err)
			}
		}
		got := map[uint8]*urb{}
		for range 3 {
			u := <-k.subs
			got[u.Endpoint] = u
		}
		for ep, stream := range map[uint8]int32{0x01: 0, 0x82: 7, 0x83: 7} {
			if u := got[ep]; u == nil || u.NumPackets != stream || u.Type != urbTypeBulk {
				t.Fatalf("endpoint 0x%02x: urb %+v, want stream %d", ep, u, stream)
			}
		}
		// Status first, then the data, then the command: any order.
		k.complete(got[0x82], []byte{3, 0, 0, 7}, 0, 0)
		if stall {
			k.complete(got[0x83], nil, 512, unix.EPIPE)
		} else {
			k.complete(got[0x83], nil, 1000, 0) // short: 1000 of 4096
		}
		k.complete(got[0x01], nil, 32, 0)
		for i, want := range []*usbms.PipeXfer{st, data, cmd} {
			x, err := d.PipeReap(ctx)
			if err != nil || x != want {
				t.Fatalf("reap %d: %v, %v; want the %s transfer", i, x, err, want.Pipe)
			}
		}
		switch {
		case st.N != 4 || st.Err != nil || cmd.N != 32 || cmd.Err != nil:
			t.Errorf("status %d %v, command %d %v; want 4 and 32 bytes, no error", st.N, st.Err, cmd.N, cmd.Err)
		case stall && (data.N != 512 || !errors.Is(data.Err, usbms.ErrStall)):
			t.Errorf("stalled data: %d, %v; want 512, ErrStall", data.N, data.Err)
		case !stall && (data.N != 1000 || data.Err != nil):
			t.Errorf("data: %d, %v; want 1000 bytes", data.N, data.Err)
		}
		if x, err := d.PipeReap(ctx); x != nil || err == nil {
			t.Errorf("reap with nothing pending: %v, %v; want an error", x, err)
		}
	}
}

// TestPipeTransferCancel: a reap whose ctx ends, or whose deadline
// passed, gives nothing back and leaves the transfer pending; once
// cancelled it is discarded and given back whatever ctx says, as
// cancelled; a device that goes away ends every pending transfer with
// ErrNoDevice, and a submit after that fails.
func TestPipeTransferCancel(t *testing.T) {
	k := newPipeKernel()
	d := uasDevice(k)
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	x := &usbms.PipeXfer{Pipe: usbms.PipeDataOut, Stream: 3, Buf: make([]byte, 512)}
	if err := d.PipeSubmit(x); err != nil {
		t.Fatal(err)
	}
	<-k.subs
	if got, err := d.PipeReap(ctx); got != nil || !errors.Is(err, context.Canceled) {
		t.Fatalf("reap, ctx done: %v, %v; want nothing, context.Canceled", got, err)
	}
	d.deadline = time.Now().Add(-time.Second)
	if got, err := d.PipeReap(context.Background()); got != nil || !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("reap past the deadline: %v, %v; want nothing, DeadlineExceeded", got, err)
	}
	d.PipeCancel(x)
	if got, err := d.PipeReap(ctx); got != x || err != nil || x.N != 0 || !errors.Is(x.Err, context.Canceled) {
		t.Fatalf("cancelled: %v, %v (%d, %v); want the transfer, 0 bytes, context.Canceled", got, err, x.N, x.Err)
	}
	d.deadline = time.Time{}

	xs := []*usbms.PipeXfer{
		{Pipe: usbms.PipeStatus, Stream: 3, Buf: make([]byte, 112)},
		{Pipe: usbms.PipeDataOut, Stream: 3, Buf: make([]byte, 512)},
	}
	for _, x := range xs {
		if err := d.PipeSubmit(x); err != nil {
			t.Fatal(err)
		}
		<-k.subs
	}
	k.mu.Lock()
	k.gone = true
	k.mu.Unlock()
	for range xs {
		got, err := d.PipeReap(context.Background())
		if err != nil || got == nil || !errors.Is(got.Err, usbms.ErrNoDevice) {
			t.Fatalf("device gone: %v, %v; want a transfer ended with ErrNoDevice", got, err)
		}
	}
	if err := d.PipeSubmit(xs[0]); !errors.Is(err, usbms.ErrNoDevice) {
		t.Fatalf("submit after the device went: %v, want ErrNoDevice", err)
	}
}
