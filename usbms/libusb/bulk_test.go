//go:build cgo && !nousb && (libusb || !(linux || darwin || windows))

package libusb

import (
	"bytes"
	"context"
	"errors"
	"slices"
	"testing"
	"unsafe"

	"github.com/google/gousb"
)

const mib = 1 << 20

func addrOf(b []byte) uintptr { return uintptr(unsafe.Pointer(unsafe.SliceData(b))) }

// fill gives p a pattern, so a piece sent twice or out of order shows.
func fill(p []byte) {
	for i := range p {
		p[i] = byte(i*7 + i>>12)
	}
}

func TestBulkOutShapes(t *testing.T) {
	tests := []struct {
		name   string
		devMem int                     // usbfs memory the fake grants
		size   int                     // AllocBuffers size; 0: Go memory
		data   func(buf []byte) []byte // the slice BulkOut is given
		pieces []int                   // transfer lengths, in order
		direct bool                    // sent from the caller's memory
	}{
		{"Go memory goes through the bounce buffer", 16 * mib, 0,
			func([]byte) []byte { return make([]byte, 3*mib+mib/2) }, []int{mib, mib, mib, mib / 2}, false},
		{"zero-copy buffer of two DMA areas", 16 * mib, 8 * mib,
			func(b []byte) []byte { return b }, []int{4 * mib, 4 * mib}, true},
		{"part of a zero-copy buffer splits at the area boundary", 16 * mib, 8 * mib,
			func(b []byte) []byte { return b[512 : 512+5*mib] }, []int{4*mib - 512, mib + 512}, true},
		{"a start off the packet size crossing an area is bounced", 16 * mib, 8 * mib,
			func(b []byte) []byte { return b[100 : 100+5*mib] }, []int{mib, mib, mib, mib, mib}, false},
		{"page-aligned fallback is sent as it is, in pieces", 0, 4 * mib,
			func(b []byte) []byte { return b }, []int{mib, mib, mib, mib}, true},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			f := newFakeHandle(tc.devMem)
			b := newFakePath(t, f)
			var regs []region
			var buf []byte
			if tc.size > 0 {
				var err error
				if regs, _, err = allocRegions(f, 1, tc.size, b.piece); err != nil {
					t.Fatal(err)
				}
				buf = regs[0].mem
			}
			p := tc.data(buf)
			fill(p)
			n, err := b.out(context.Background(), p, regs)
			if err != nil || n != len(p) {
				t.Fatalf("out = %d, %v; want %d, nil", n, err, len(p))
			}
			var got []int
			for _, s := range f.submits {
				got = append(got, s.n)
			}
			if !slices.Equal(got, tc.pieces) {
				t.Errorf("transfers %v, want %v", got, tc.pieces)
			}
			if direct := f.submits[0].addr == addrOf(p); direct != tc.direct {
				t.Errorf("sent from the caller's memory: %v, want %v", direct, tc.direct)
			}
			if !bytes.Equal(f.sink, p) {
				t.Errorf("the device received other bytes than were sent")
			}
			if f.maxInflight > len(b.xfers) || (len(tc.pieces) > 1 && f.maxInflight < 2) {
				t.Errorf("%d transfers in flight at most, want 2 to %d", f.maxInflight, len(b.xfers))
			}
		})
	}
}

// An IN data phase never has a second transfer queued: one that ends short
// ends the phase, and the CSW is left for the CSW read.
func TestBulkInOneTransferAtATime(t *testing.T) {
	tests := []struct {
		name     string
		size     int // AllocBuffers size; 0: Go memory
		length   int
		shortAt  int
		wantXfer []int
	}{
		{"zero-copy area read whole", 8 * mib, 4 * mib, 0, []int{4 * mib}},
		{"zero-copy, short in the first area", 8 * mib, 8 * mib, mib, []int{4 * mib}},
		{"zero-copy, two areas in turn", 8 * mib, 8 * mib, 0, []int{4 * mib, 4 * mib}},
		{"Go memory, short in the second bounce", 0, 6 * mib, 5 * mib, []int{4 * mib, 2 * mib}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			f := newFakeHandle(16 * mib)
			f.inData, f.shortIn = 0xA5, tc.shortAt
			b := newFakePath(t, f)
			var regs []region
			p := make([]byte, tc.length)
			if tc.size > 0 {
				var err error
				if regs, _, err = allocRegions(f, 1, tc.size, b.piece); err != nil {
					t.Fatal(err)
				}
				p = regs[0].mem[:tc.length]
			}
			n, err := b.in(context.Background(), p, regs)
			want := tc.length
			if tc.shortAt > 0 {
				want = tc.shortAt
			}
			if err != nil || n != want {
				t.Fatalf("in = %d, %v; want %d, nil", n, err, want)
			}
			if !bytes.Equal(p[:n], bytes.Repeat([]byte{0xA5}, n)) {
				t.Errorf("the data read is not what the device sent")
			}
			var got []int
			for _, s := range f.submits {
				got = append(got, s.n)
			}
			if !slices.Equal(got, tc.wantXfer) || f.maxInflight != 1 {
				t.Errorf("IN transfers %v with %d in flight at most; want %v, one at a time", got, f.maxInflight, tc.wantXfer)
			}
		})
	}
}

// A stall mid-phase cancels the transfers queued behind it and counts only
// what completed before it.
func TestBulkOutErrorCancelsInFlight(t *testing.T) {
	tests := []struct {
		name string
		err  error
	}{
		{"stall", gousb.TransferStall},
		{"device gone", gousb.TransferNoDevice},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			f := newFakeHandle(0)
			f.fail = func(i int) error {
				if i == 1 {
					return tc.err
				}
				return nil
			}
			b := newFakePath(t, f)
			n, err := b.out(context.Background(), make([]byte, 8*mib), nil)
			if !errors.Is(err, tc.err) || n != mib {
				t.Fatalf("out = %d, %v; want %d, %v", n, err, mib, tc.err)
			}
			// Transfer 0 completed and a fifth took its slot; 2 to 4
			// were queued behind the failed one.
			if len(f.submits) != 5 || f.cancels != 3 || f.inflight != 0 {
				t.Errorf("%d submitted, %d cancelled, %d left in flight; want 5, 3 (those behind the failure), 0",
					len(f.submits), f.cancels, f.inflight)
			}
		})
	}
}

func TestBulkCancelledContext(t *testing.T) {
	f := newFakeHandle(0)
	f.hang = true
	b := newFakePath(t, f)
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	for _, dir := range []string{"out", "in"} {
		var err error
		if dir == "out" {
			_, err = b.out(ctx, make([]byte, 2*mib), nil)
		} else {
			_, err = b.in(ctx, make([]byte, 13), nil)
		}
		if !errors.Is(err, gousb.TransferCancelled) || f.inflight != 0 {
			t.Errorf("%s with a cancelled context = %v with %d in flight; want TransferCancelled, none", dir, err, f.inflight)
		}
	}
}

func TestAllocRegions(t *testing.T) {
	tests := []struct {
		name         string
		devMem       int
		count, size  int
		wantZeroCopy bool
		wantErr      bool
	}{
		{"three 4 MiB buffers fit usbfs_memory_mb", 16 * mib, 3, 4 * mib, true, false},
		{"two 8 MiB buffers are four adjacent areas", 16 * mib, 2, 8 * mib, true, false},
		{"past the budget everything falls back", 12 * mib, 4, 4 * mib, false, false},
		{"no usbfs memory", 0, 2, mib, false, false},
		{"odd area sizes are not joined", 16 * mib, 1, 8*mib + 512, false, false},
		{"no buffers", 16 * mib, 0, mib, false, true},
		{"empty buffers", 16 * mib, 1, 0, false, true},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			f := newFakeHandle(tc.devMem)
			regs, zc, err := allocRegions(f, tc.count, tc.size, mib)
			if (err != nil) != tc.wantErr || zc != tc.wantZeroCopy {
				t.Fatalf("allocRegions = zero-copy %v, %v; want %v, error %v", zc, err, tc.wantZeroCopy, tc.wantErr)
			}
			if err != nil {
				return
			}
			if len(regs) != tc.count {
				t.Fatalf("%d regions, want %d", len(regs), tc.count)
			}
			for _, r := range regs {
				if len(r.mem) != tc.size || r.zeroCopy != zc || r.area > tc.size {
					t.Errorf("region of %d bytes, areas of %d, zero-copy %v", len(r.mem), r.area, r.zeroCopy)
				}
			}
			if !zc && f.budget != tc.devMem {
				t.Errorf("after the fallback %d bytes of usbfs memory are still held", tc.devMem-f.budget)
			}
		})
	}
}
