package usbms_test

import (
	"context"
	"errors"
	"testing"
	"unsafe"

	"github.com/usbflash/usbflash/usbms"
	"github.com/usbflash/usbflash/usbms/sim"
)

// dmaWire is an Endpoint that offers its own buffers, as the libusb backend
// does; it records the allocation so the test can see the LUN asked it.
type dmaWire struct {
	*wire
	asked int
	fail  error
}

func (w *dmaWire) AllocBuffers(count, size int) ([][]byte, string, func(), error) {
	w.asked++
	if w.fail != nil {
		return nil, "", nil, w.fail
	}
	bufs := make([][]byte, count)
	for i := range bufs {
		bufs[i] = make([]byte, size)
	}
	return bufs, usbms.MemoryZeroCopy, func() {}, nil
}

func (w *dmaWire) MemoryKind() string { return usbms.MemoryZeroCopy }

func TestAllocBuffers(t *testing.T) {
	tests := []struct {
		name     string
		offer    bool  // the Endpoint is a BufferAllocator
		fail     error // its AllocBuffers fails
		count    int
		size     int
		wantKind string
		wantErr  bool
	}{
		{"simulator: page-aligned fallback", false, nil, 3, 1 << 20, usbms.MemoryPageAligned, false},
		{"odd size still page-aligned", false, nil, 2, 3*512 + 512, usbms.MemoryPageAligned, false},
		{"the Endpoint's own memory", true, nil, 2, 1 << 20, usbms.MemoryZeroCopy, false},
		{"the Endpoint refuses", true, errors.New("test: out of memory"), 2, 1 << 20, "", true},
		{"no buffers", false, nil, 0, 1 << 20, "", true},
		{"empty buffers", true, nil, 2, 0, "", true},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			dev, err := sim.New(oneLUN(1 << 14))
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { dev.Close() })
			var ep usbms.Endpoint = &wire{Endpoint: dev}
			dw := &dmaWire{wire: &wire{Endpoint: dev}, fail: tc.fail}
			if tc.offer {
				ep = dw
			}
			l, err := usbms.OpenLUN(context.Background(), usbms.NewTransport(ep, testTransport), 0, testLUN)
			if err != nil {
				t.Fatal(err)
			}
			if before := l.MemoryKind(); before != map[bool]string{true: usbms.MemoryZeroCopy, false: usbms.MemoryPageAligned}[tc.offer] {
				t.Errorf("MemoryKind before AllocBuffers = %q", before)
			}
			bufs, kind, free, err := l.AllocBuffers(tc.count, tc.size)
			if (err != nil) != tc.wantErr || kind != tc.wantKind {
				t.Fatalf("AllocBuffers = %q, %v; want %q, error %v", kind, err, tc.wantKind, tc.wantErr)
			}
			if tc.offer && dw.asked != 1 && tc.size > 0 {
				t.Errorf("the Endpoint was asked %d times, want once", dw.asked)
			}
			if err != nil {
				return
			}
			defer free()
			if len(bufs) != tc.count || l.MemoryKind() != kind {
				t.Fatalf("%d buffers, MemoryKind %q; want %d, %q", len(bufs), l.MemoryKind(), tc.count, kind)
			}
			for i, b := range bufs {
				if len(b) != tc.size || cap(b) != tc.size {
					t.Errorf("buffer %d: len %d cap %d, want %d", i, len(b), cap(b), tc.size)
				}
				if a := uintptr(unsafe.Pointer(unsafe.SliceData(b))); !tc.offer && a%4096 != 0 {
					t.Errorf("buffer %d at 0x%x is not page-aligned", i, a)
				}
				// The buffers carry data both ways.
				copy(b, pattern(len(b), byte(i)))
				blocks := len(b) / 512 * 512
				lba := int64(i * 4096)
				if err := l.WriteBlocks(context.Background(), lba, b[:blocks]); err != nil {
					t.Fatal(err)
				}
				r := &rig{lun: l}
				r.readBack(t, lba, pattern(len(b), byte(i))[:blocks])
			}
		})
	}
}
