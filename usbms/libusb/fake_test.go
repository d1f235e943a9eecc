//go:build cgo && !nousb && (libusb || !(linux || darwin || windows))

package libusb

import (
	"encoding/binary"
	"testing"
	"time"
	"unsafe"

	"github.com/google/gousb"

	"github.com/usbflash/usbflash/usbms/usbdev"
)

// fakeHandle stands in for libusb (usbHandle) and for a Bulk-Only device
// behind it. It counts every allocation the backend asks of C, hands out
// "usbfs" memory top-down from one arena as mmap does (so parts of a large
// buffer lie next to each other), and refuses it past its budget as
// usbfs_memory_mb does.
type fakeHandle struct {
	arena   []byte
	top     int // arena[top:] is handed out
	budget  int // usbfs memory left; negative: none at all
	allocs  int // memAlloc and newTransfer calls
	frees   int
	submits []submission
	clears  []uint8

	inflight, maxInflight int
	cancels               int

	// The device: what each transfer returns.
	tag     uint32
	sink    []byte            // data received on OUT
	inData  byte              // fill byte of IN data
	shortIn int               // an IN data phase ends after this many bytes (0: never)
	fail    func(i int) error // the i-th transfer submitted fails with this
	hang    bool              // transfers complete only when cancelled
}

type submission struct {
	ep   uint8
	n    int
	addr uintptr
}

const (
	fakeIn  = 0x81
	fakeOut = 0x02
)

var fakeInfo = usbdev.Info{Bus: 1, Address: 7, PortPath: "1-2", VID: 0x46f4, PID: 0x0001, Supported: true,
	Config: 1, BulkIn: fakeIn, BulkOut: fakeOut, BulkOutMaxPacket: 512}

func newFakeHandle(devMem int) *fakeHandle {
	// The arena has room for memory freed and mapped again.
	return &fakeHandle{arena: make([]byte, 4*devMem), top: 4 * devMem, budget: devMem}
}

func (f *fakeHandle) clearHalt(ep uint8) error {
	f.clears = append(f.clears, ep)
	return nil
}
func (f *fakeHandle) control(uint8, uint8, uint16, uint16, []byte, time.Duration) (int, error) {
	return 0, gousb.ErrorPipe
}
func (f *fakeHandle) resetDevice() error                   { return nil }
func (f *fakeHandle) setAutoDetach(bool) error             { return nil }
func (f *fakeHandle) kernelDriverActive(int) (bool, error) { return false, nil }
func (f *fakeHandle) attachKernelDriver(int) error         { return nil }
func (f *fakeHandle) newTransfer() (transfer, error)       { f.allocs++; return &fakeTransfer{f: f}, nil }
func (f *fakeHandle) memFree(b []byte, zeroCopy bool) {
	f.frees += min(1, len(b))
	if zeroCopy {
		f.budget += len(b)
	}
}
func (f *fakeHandle) memAlloc(n int, zeroCopy bool) []byte {
	f.allocs++
	if !zeroCopy {
		return make([]byte, n)
	}
	if n > maxDevMem || n > f.budget || n > f.top {
		return nil
	}
	f.budget -= n
	f.top -= n
	return f.arena[f.top : f.top+n : f.top+n]
}

type fakeTransfer struct {
	f    *fakeHandle
	idx  int
	busy bool
	n    int
	err  error
	ep   uint8
	buf  []byte
}

func (t *fakeTransfer) submit(ep uint8, buf []byte) error {
	f := t.f
	t.idx = len(f.submits)
	f.submits = append(f.submits, submission{ep, len(buf), uintptr(unsafe.Pointer(unsafe.SliceData(buf)))})
	t.busy, t.ep, t.buf, t.n, t.err = true, ep, buf, 0, nil
	f.inflight++
	f.maxInflight = max(f.maxInflight, f.inflight)
	return nil
}

// wait completes the transfer: the device acts on it now.
func (t *fakeTransfer) wait(int) bool {
	if !t.busy {
		return true
	}
	f := t.f
	if f.hang && t.err == nil {
		return false
	}
	t.busy = false
	f.inflight--
	if t.err != nil {
		return true
	}
	if f.fail != nil {
		if err := f.fail(t.idx); err != nil {
			t.err = err
			return true
		}
	}
	t.n, t.err = f.device(t.ep, t.buf)
	return true
}

func (t *fakeTransfer) cancel() {
	if t.busy && t.err == nil {
		t.f.cancels++
		t.err = gousb.TransferCancelled
	}
}
func (t *fakeTransfer) result() (int, error) { return t.n, t.err }
func (t *fakeTransfer) free()                { t.f.frees++ }

// device answers one transfer as a Bulk-Only device that passes every
// command: it takes CBWs and data, sends IN data (ending short after
// shortIn bytes) and a CSW with the last CBW's tag.
func (f *fakeHandle) device(ep uint8, buf []byte) (int, error) {
	switch {
	case ep == fakeOut && len(buf) == 31 && binary.LittleEndian.Uint32(buf) == 0x43425355:
		f.tag = binary.LittleEndian.Uint32(buf[4:])
		f.sink = f.sink[:0]
		return len(buf), nil
	case ep == fakeOut:
		f.sink = append(f.sink, buf...)
		return len(buf), nil
	case len(buf) == 13:
		binary.LittleEndian.PutUint32(buf, 0x53425355)
		binary.LittleEndian.PutUint32(buf[4:], f.tag)
		binary.LittleEndian.PutUint32(buf[8:], 0)
		buf[12] = 0
		return 13, nil
	}
	n := len(buf)
	if f.shortIn > 0 {
		n = min(n, f.shortIn)
		f.shortIn -= n
		if f.shortIn == 0 {
			f.shortIn = -1 // the phase has ended
		}
	} else if f.shortIn < 0 {
		n = 0
	}
	for i := range buf[:n] {
		buf[i] = f.inData
	}
	return n, nil
}

// newFakePath opens a bulkPath on f with the default options.
func newFakePath(t *testing.T, f *fakeHandle) *bulkPath {
	t.Helper()
	b, err := newBulkPath(f, fakeInfo, usbdev.OpenOptions{}.WithDefaults())
	if err != nil {
		t.Fatal(err)
	}
	return b
}
