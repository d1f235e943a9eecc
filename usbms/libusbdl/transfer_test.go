//go:build linux || darwin || windows

package libusbdl

import (
	"bytes"
	"context"
	"errors"
	"testing"
	"time"

	"github.com/usbflash/usbflash/internal/lib/aligned"
	"github.com/usbflash/usbflash/usbms"
	"github.com/usbflash/usbflash/usbms/usbdev"
)

const mib = 1 << 20

func pattern(n int) []byte {
	b := aligned.Bytes(n)
	for i := range b {
		b[i] = byte(i*7 + i>>9)
	}
	return b
}

// A data phase goes out whole and in order through the event thread,
// whatever its length against the pieces, small ones through the
// command buffer; one comes back in the same way.
func TestBulkOutIn(t *testing.T) {
	for _, n := range []int{31, 4096, 4097, mib, 3*mib + 512, 9*mib + 13} {
		f := newFakeUSB()
		d, stop := fakeDevice(f, 4, mib, false)
		p := pattern(n)
		got, err := d.BulkOut(context.Background(), p)
		if err != nil || got != n || !bytes.Equal(f.sink, p) {
			t.Errorf("OUT %d bytes: %d, %v; device got %d bytes, equal %v", n, got, err, len(f.sink), bytes.Equal(f.sink, p))
		}
		f.src = p
		back := make([]byte, n)
		got, err = d.BulkIn(context.Background(), back)
		if err != nil || got != n || !bytes.Equal(back, p) {
			t.Errorf("IN %d bytes: %d, %v, equal %v", n, got, err, bytes.Equal(back, p))
		}
		stop()
	}
}

// A short IN transfer ends the data phase: no second transfer is queued
// behind it, which would take the next status as data.
func TestBulkInShort(t *testing.T) {
	f := newFakeUSB()
	d, stop := fakeDevice(f, 4, mib, false)
	defer stop()
	f.src = pattern(5*mib + 100)
	p := make([]byte, 16*mib)
	n, err := d.BulkIn(context.Background(), p)
	if err != nil || n != 5*mib+100 {
		t.Fatalf("short IN: %d, %v; want %d, nil", n, err, 5*mib+100)
	}
	if len(f.queue) != 0 {
		t.Errorf("%d transfers left queued behind the short one", len(f.queue))
	}
}

// A stalled transfer is usbms.ErrStall; the ones in flight behind it are
// cancelled and waited for, and n counts what went before.
func TestBulkOutStall(t *testing.T) {
	f := newFakeUSB()
	f.stallAt = 3
	d, stop := fakeDevice(f, 4, mib, false)
	defer stop()
	n, err := d.BulkOut(context.Background(), pattern(8*mib))
	if !errors.Is(err, usbms.ErrStall) || n != 2*mib {
		t.Errorf("stall on the third piece: %d, %v; want %d and ErrStall", n, err, 2*mib)
	}
	var ue *usbdev.Error
	if !errors.As(err, &ue) || ue.Device == "" {
		t.Errorf("not a *usbdev.Error naming the device: %#v", err)
	}
	for _, x := range d.s.bulk.xfers {
		if x.state.Load() != xferIdle {
			t.Errorf("a transfer left in state %d", x.state.Load())
		}
	}
}

// A transfer the device never answers ends when the context is cancelled
// or the deadline passes: it is cancelled, waited for, and reported with
// the reason, and the next transfer works.
func TestBulkCancelAndDeadline(t *testing.T) {
	for _, tt := range []struct {
		name string
		run  func(d *Device, p []byte) (int, error)
		want error
	}{
		{"cancelled", func(d *Device, p []byte) (int, error) {
			ctx, cancel := context.WithCancel(context.Background())
			go func() { time.Sleep(20 * time.Millisecond); cancel() }()
			return d.BulkOut(ctx, p)
		}, context.Canceled},
		{"past the deadline", func(d *Device, p []byte) (int, error) {
			d.SetDeadline(time.Now().Add(20 * time.Millisecond))
			defer d.SetDeadline(time.Time{})
			return d.BulkIn(context.Background(), p)
		}, context.DeadlineExceeded},
	} {
		t.Run(tt.name, func(t *testing.T) {
			f := newFakeUSB()
			f.hold = true
			d, stop := fakeDevice(f, 4, mib, false)
			defer stop()
			if _, err := tt.run(d, make([]byte, 2*mib)); !errors.Is(err, tt.want) {
				t.Fatalf("held transfer: %v, want %v", err, tt.want)
			}
			if len(f.queue) != 0 {
				t.Fatalf("%d transfers still with the device", len(f.queue))
			}
			f.hold = false
			if n, err := d.BulkOut(context.Background(), pattern(mib)); err != nil || n != mib {
				t.Errorf("the next transfer: %d, %v", n, err)
			}
		})
	}
}

// A gone device fails the transfer in flight and every later submit with
// usbms.ErrNoDevice.
func TestBulkNoDevice(t *testing.T) {
	f := newFakeUSB()
	f.hold = true
	d, stop := fakeDevice(f, 4, mib, false)
	defer stop()
	go func() {
		time.Sleep(20 * time.Millisecond)
		f.mu.Lock()
		f.gone = true
		f.mu.Unlock()
		signal(f.kick)
	}()
	if _, err := d.BulkOut(context.Background(), pattern(2*mib)); !errors.Is(err, usbms.ErrNoDevice) {
		t.Errorf("in flight: %v, want ErrNoDevice", err)
	}
	if _, err := d.BulkIn(context.Background(), make([]byte, 13)); !errors.Is(err, usbms.ErrNoDevice) {
		t.Errorf("after: %v, want ErrNoDevice", err)
	}
}

// A control request goes out as an asynchronous control transfer with
// its setup packet, and an IN one brings its data back.
func TestClassRequest(t *testing.T) {
	f := newFakeUSB()
	f.src = []byte{3}
	d, stop := fakeDevice(f, 4, mib, false)
	defer stop()
	d.info.Interface = 2
	var maxLUN [1]byte
	n, err := d.ClassRequest(context.Background(), true, 0xFE, 0, maxLUN[:])
	if err != nil || n != 1 || maxLUN[0] != 3 {
		t.Fatalf("Get Max LUN: %d %v %v", n, err, maxLUN)
	}
	want := []byte{0xA1, 0xFE, 0, 0, 2, 0, 1, 0}
	if got := d.s.ctrlBuf[:8]; !bytes.Equal(got, want) {
		t.Errorf("setup packet % x, want % x", got, want)
	}
}

// Over Bulk-Only a READ or WRITE's transfers allocate nothing: not the
// submit, not the event thread's round, not the wait.
func TestBulkAllocations(t *testing.T) {
	f := newFakeUSB()
	d, stop := fakeDevice(f, 4, mib, false)
	defer stop()
	p := pattern(4*mib + 512)
	f.sink = make([]byte, 0, 64*len(p))
	ctx := context.Background()
	cbw := make([]byte, 31)
	for _, in := range []bool{false, true} {
		allocs := testing.AllocsPerRun(20, func() {
			f.sink = f.sink[:0]
			f.src = p
			var err error
			if _, err = d.BulkOut(ctx, cbw); err == nil {
				if in {
					_, err = d.BulkIn(ctx, p)
				} else {
					_, err = d.BulkOut(ctx, p)
				}
			}
			if err != nil {
				t.Fatal(err)
			}
		})
		if allocs != 0 {
			t.Errorf("in %v: %v allocations per command, want 0", in, allocs)
		}
	}
}

// UAS: transfers on streams are submitted at once and reaped as they
// complete, each with its stream; a cancelled one comes back with
// context.Canceled even when the context is done; a gone device ends
// every one pending.
func TestUAS(t *testing.T) {
	f := newFakeUSB()
	d, stop := fakeDevice(f, 4, mib, true)
	defer stop()
	if on, streams := d.UASMode(); !on || streams != 16 {
		t.Fatalf("UASMode %v %d", on, streams)
	}
	f.src = []byte{3, 0, 0, 1, 0, 0, 0, 0}
	status := &usbms.PipeXfer{Pipe: usbms.PipeStatus, Stream: 1, Buf: make([]byte, 8)}
	data := &usbms.PipeXfer{Pipe: usbms.PipeDataOut, Stream: 1, Buf: pattern(mib)}
	cmd := &usbms.PipeXfer{Pipe: usbms.PipeCommand, Buf: make([]byte, 32)}
	for _, x := range []*usbms.PipeXfer{status, data, cmd} {
		if err := d.PipeSubmit(x); err != nil {
			t.Fatal(err)
		}
	}
	seen := map[*usbms.PipeXfer]bool{}
	for range 3 {
		x, err := d.PipeReap(context.Background())
		if err != nil || x.Err != nil {
			t.Fatalf("reap: %v %v", err, x)
		}
		seen[x] = true
	}
	if !seen[status] || !seen[data] || !seen[cmd] || status.N != 8 || data.N != mib {
		t.Errorf("reaped %v; status %d bytes, data %d", seen, status.N, data.N)
	}
	if len(f.streams) != 2 || f.streams[0] != 1 || f.streams[1] != 1 {
		t.Errorf("streams set %v, want [1 1] (none on the command pipe)", f.streams)
	}
	if _, err := d.PipeReap(context.Background()); err == nil {
		t.Error("a reap with nothing pending did not fail")
	}

	f.hold = true
	x := &usbms.PipeXfer{Pipe: usbms.PipeStatus, Stream: 2, Buf: make([]byte, 8)}
	if err := d.PipeSubmit(x); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if _, err := d.PipeReap(ctx); !errors.Is(err, context.Canceled) {
		t.Errorf("reap on a done context: %v", err)
	}
	d.PipeCancel(x)
	if got, err := d.PipeReap(ctx); err != nil || got != x || !errors.Is(x.Err, context.Canceled) {
		t.Errorf("cancelled: %v %v %v", got, err, x.Err)
	}

	y := &usbms.PipeXfer{Pipe: usbms.PipeDataIn, Stream: 3, Buf: make([]byte, 512)}
	if err := d.PipeSubmit(y); err != nil {
		t.Fatal(err)
	}
	f.mu.Lock()
	f.gone = true
	f.mu.Unlock()
	signal(f.kick)
	if got, err := d.PipeReap(context.Background()); err != nil || got != y || !errors.Is(y.Err, usbms.ErrNoDevice) {
		t.Errorf("gone: %v %v %v", got, err, y.Err)
	}
	if err := d.PipeSubmit(y); !errors.Is(err, usbms.ErrNoDevice) {
		t.Errorf("submit after gone: %v", err)
	}
}

// The event thread stops when asked, frees every transfer, and the
// context is ended after it.
func TestEventLoopStops(t *testing.T) {
	f := newFakeUSB()
	l, err := startLoop(f)
	if err != nil {
		t.Fatal(err)
	}
	for range 3 {
		if _, err := l.newXfer(); err != nil {
			t.Fatal(err)
		}
	}
	l.stopThread()
	l.stopThread() // twice: nothing more
	l.exit()
	select {
	case <-l.exited:
	default:
		t.Fatal("the event thread did not end")
	}
	if f.freed != 3 || !f.exited {
		t.Errorf("freed %d transfers of 3, context ended %v", f.freed, f.exited)
	}
}
