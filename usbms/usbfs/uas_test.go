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
	return k.reapWait(fd, 0)
}

func (k *pipeKernel) reapWait(_ int, ms int) (uintptr, error) {
	k.mu.Lock()
	gone := k.gone
	k.mu.Unlock()
	if gone {
		return 0, unix.ENODEV
	}
	t := time.NewTimer(time.Duration(ms) * time.Millisecond)
	defer t.Stop()
	select {
	case u := <-k.done:
		return uintptr(unsafe.Pointer(u)), nil
	case <-t.C:
		return 0, unix.EAGAIN
	}
}

func uasDevice(k *pipeKernel) *Device {
	d := &Device{io: k, fd: 1000}
	d.info.Bus, d.info.Address = 1, 5
	d.info.UAS = usbdev.UASSetting{Command: 0x01, Status: 0x82, DataIn: 0x83, DataOut: 0x04, MaxStreams: 16}
	d.uas.on, d.uas.streams, d.uas.eps = true, 16, [5]uint8{0, 0x01, 0x82, 0x83, 0x04}
	return d
}

type xfer struct {
	n   int
	err error
}

// TestPipeTransfers: a status read and a data read wait on one stream
// while the command goes out; each URB carries its pipe's endpoint and
// the stream, and each transfer gets its own URB back whatever the order
// they complete in.
func TestPipeTransfers(t *testing.T) {
	k := newPipeKernel()
	d := uasDevice(k)
	defer func() { d.mu.Lock(); d.stopReaper(); d.mu.Unlock() }()
	ctx := context.Background()
	status, data := make([]byte, 112), make([]byte, 4096)
	res := make(chan xfer, 3)
	run := func(pipe usbms.Pipe, stream uint16, p []byte) {
		go func() { n, err := d.PipeTransfer(ctx, pipe, stream, p); res <- xfer{n, err} }()
	}
	run(usbms.PipeStatus, 7, status)
	run(usbms.PipeDataIn, 7, data)
	run(usbms.PipeCommand, 0, make([]byte, 32))
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
	k.complete(got[0x83], nil, 1000, 0) // short: 1000 of 4096
	k.complete(got[0x01], nil, 32, 0)
	ns := map[int]bool{}
	for range 3 {
		x := <-res
		if x.err != nil {
			t.Fatalf("transfer: %v", x.err)
		}
		ns[x.n] = true
	}
	if !ns[4] || !ns[1000] || !ns[32] {
		t.Errorf("lengths %v, want 4, 1000 and 32", ns)
	}
}

// TestPipeTransferCancel: a transfer the device never answers is
// discarded when ctx ends, and says so; a device that goes away fails
// every pending transfer with ErrNoDevice.
func TestPipeTransferCancel(t *testing.T) {
	k := newPipeKernel()
	d := uasDevice(k)
	defer func() { d.mu.Lock(); d.stopReaper(); d.mu.Unlock() }()
	ctx, cancel := context.WithCancel(context.Background())
	res := make(chan xfer, 1)
	go func() {
		n, err := d.PipeTransfer(ctx, usbms.PipeDataOut, 3, make([]byte, 512))
		res <- xfer{n, err}
	}()
	<-k.subs
	cancel()
	if x := <-res; !errors.Is(x.err, context.Canceled) || x.n != 0 {
		t.Fatalf("cancelled: %d, %v; want 0, context.Canceled", x.n, x.err)
	}

	go func() {
		n, err := d.PipeTransfer(context.Background(), usbms.PipeStatus, 3, make([]byte, 112))
		res <- xfer{n, err}
	}()
	<-k.subs
	k.mu.Lock()
	k.gone = true
	k.mu.Unlock()
	if x := <-res; !errors.Is(x.err, usbms.ErrNoDevice) {
		t.Fatalf("device gone: %v, want ErrNoDevice", x.err)
	}
	if _, err := d.PipeTransfer(context.Background(), usbms.PipeStatus, 3, make([]byte, 112)); !errors.Is(err, usbms.ErrNoDevice) {
		t.Fatalf("after the device went: %v, want ErrNoDevice", err)
	}
}
