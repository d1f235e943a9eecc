//go:build linux || darwin || windows

package libusbdl

import (
	"sync"
	"time"
	"unsafe"

	"github.com/usbflash/usbflash/usbms/usbdev"
)

// fakeUSB is xferAPI without libusb: a device at the end of its
// endpoints. Transfers complete in handleEvents, on the event thread, as
// libusb completes them: OUT data lands in sink, IN data comes from src,
// until a rule says otherwise. It allocates nothing per transfer, so
// that the allocation counts are the backend's.
type fakeUSB struct {
	mu      sync.Mutex
	queue   []*transferC // submitted, not yet completed
	kick    chan struct{}
	timer   *time.Timer
	sink    []byte
	src     []byte
	stallAt int // complete the n-th OUT transfer with a stall (1-based); 0: none
	hold    bool
	gone    bool
	outs    int
	// streams records the stream of each bulk-stream transfer submitted.
	streams []uint32
	freed   int
	exited  bool
}

func newFakeUSB() *fakeUSB {
	t := time.NewTimer(time.Hour)
	t.Stop()
	return &fakeUSB{kick: make(chan struct{}, 1), timer: t, queue: make([]*transferC, 0, 64)}
}

func (f *fakeUSB) newContext() (uintptr, error) { return 1, nil }
func (f *fakeUSB) exitContext(uintptr)          { f.mu.Lock(); f.exited = true; f.mu.Unlock() }
func (f *fakeUSB) interrupt(uintptr) bool       { signal(f.kick); return true }
func (f *fakeUSB) allocTransfer() *transferC    { return new(transferC) }
func (f *fakeUSB) freeTransfer(*transferC)      { f.mu.Lock(); f.freed++; f.mu.Unlock() }

func (f *fakeUSB) submit(t *transferC) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.gone {
		return ErrNoDevice
	}
	f.queue = append(f.queue, t)
	signal(f.kick)
	return nil
}

func (f *fakeUSB) cancel(t *transferC) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	t.flags |= 0x80 // marks the cancel for handleEvents
	signal(f.kick)
	return nil
}

func (f *fakeUSB) setStreamID(t *transferC, id uint32) {
	f.mu.Lock()
	f.streams = append(f.streams, id)
	f.mu.Unlock()
}

// handleEvents waits for work up to tv, then completes what it may.
func (f *fakeUSB) handleEvents(_ uintptr, tv *timeval) error {
	f.timer.Reset(time.Duration(tv.sec)*time.Second + time.Duration(tv.usec)*time.Microsecond)
	select {
	case <-f.kick:
	case <-f.timer.C:
	}
	f.timer.Stop()
	f.mu.Lock()
	defer f.mu.Unlock()
	kept := f.queue[:0]
	for _, t := range f.queue {
		buf := unsafe.Slice(cptr[byte](t.buffer), t.length)
		switch {
		case f.gone:
			t.status = statusNoDevice
		case t.flags&0x80 != 0:
			t.status = statusCancelled
		case f.hold:
			kept = append(kept, t)
			continue
		case t.typ == transferTypeControl:
			n := copy(buf[controlSetupLen:], f.src)
			t.actualLength, t.status = int32(n), statusCompleted
		case t.endpoint&0x80 == 0:
			f.outs++
			if f.outs == f.stallAt {
				t.status = statusStall
				break
			}
			f.sink = append(f.sink, buf...)
			t.actualLength, t.status = t.length, statusCompleted
		default:
			n := copy(buf, f.src)
			f.src = f.src[n:]
			t.actualLength, t.status = int32(n), statusCompleted
		}
	}
	clear(f.queue[len(kept):])
	f.queue = kept
	return nil
}

// fakeDevice is a Device opened in Bulk-Only (or, with uas, UAS with
// streams) over f, with depth transfers of piece bytes.
func fakeDevice(f *fakeUSB, depth, piece int, uas bool) (*Device, func()) {
	loop, _ := startLoop(f)
	info := usbdev.Info{VID: 0x46f4, PID: 1, BulkIn: 0x81, BulkOut: 0x02, BulkOutMaxPacket: 512, Supported: true}
	opts := usbdev.OpenOptions{OutStreamDepth: depth, OutStreamChunk: piece}.WithDefaults()
	s := &session{loop: loop, h: 1}
	s.ctrl, _ = loop.newXfer()
	s.ctrlBuf = make([]byte, controlSetupLen+smallLen)
	s.ctrlWait = newWaiter()
	if uas {
		s.uas = &uasSide{eps: [5]uint8{0, 0x01, 0x82, 0x83, 0x04}, streams: 16, w: newWaiter()}
	} else {
		s.bulk, _ = newBulkPath(s, info, opts)
	}
	d := &Device{opts: opts, info: info, s: s}
	return d, func() { loop.stopThread(); loop.exit() }
}
