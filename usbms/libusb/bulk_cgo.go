//go:build cgo && !nousb && (libusb || !(linux || darwin || windows))

package libusb

import (
	"context"
	"errors"
	"fmt"
	"time"
	"unsafe"

	"github.com/usbflash/usbflash/usbms/usbdev"
)

// usbHandle is every libusb call the backend makes on an open device beyond
// gousb's own (libusb_cgo.go implements it over C; tests swap a fake that
// counts what is allocated).
type usbHandle interface {
	clearHalt(ep uint8) error
	resetDevice() error
	setAutoDetach(on bool) error
	kernelDriverActive(iface int) (bool, error)
	attachKernelDriver(iface int) error
	control(rType, request uint8, value, index uint16, data []byte, timeout time.Duration) (int, error)
	// memAlloc returns n bytes of C memory, usbfs DMA memory with
	// zeroCopy, or nil when refused.
	memAlloc(n int, zeroCopy bool) []byte
	memFree(b []byte, zeroCopy bool)
	newTransfer() (transfer, error)
}

// transfer is one bulk transfer allocated once and resubmitted.
type transfer interface {
	// submit starts moving buf (C memory from memAlloc) on endpoint ep.
	submit(ep uint8, buf []byte) error
	// wait waits up to ms milliseconds and reports whether the transfer
	// completed (a transfer never submitted counts as completed).
	wait(ms int) bool
	// cancel asks for the transfer to end early; it must still be waited
	// for.
	cancel()
	// result is the completed transfer's byte count and error.
	result() (int, error)
	free()
}

const (
	// smallLen is the buffer for CBW, CSW and small data phases (the
	// identification commands): one transfer, one copy of a few bytes.
	smallLen = 4096
	// maxDevMem is the largest single usbfs DMA allocation Linux grants
	// in practice: it must be physically contiguous (4 MiB + 4 KiB was
	// refused in the emulator).
	maxDevMem = 4 << 20
	// waitSlice is how often a wait for a transfer looks at its context.
	waitSlice = 20
)

// region is memory AllocBuffers handed out. It is made of areas of area
// bytes (the last may be shorter): a transfer never crosses an area
// boundary, since each usbfs DMA allocation is its own mapping and the
// kernel refuses a URB that spans two.
type region struct {
	mem      []byte
	area     int
	zeroCopy bool
	parts    [][]byte // the allocations, in address order, for memFree
}

// bulkPath moves the bulk data of one open device through transfers and
// C memory allocated once per open: nothing is allocated per command.
//
// OUT data phases go out as pieces, up to len(xfers) transfers in flight,
// so the controller never waits for the host. IN data phases go in one
// transfer at a time and stop at the first short one: a second IN transfer
// queued behind one that ends short would take the CSW as data.
type bulkPath struct {
	h             usbHandle
	epIn, epOut   uint8
	maxPacket     int
	piece         int // transfer size for memory the kernel copies
	xfers         []transfer
	lens          []int // expected length of the transfer in each slot
	small         []byte
	smallZeroCopy bool
	bounce        []byte // len(xfers)*piece, allocated on first use
	// deadline bounds every transfer (usbms.DeadlineSetter); zero: none.
	deadline time.Time
}

// newBulkPath allocates the transfers and the small buffer of one open.
func newBulkPath(h usbHandle, info usbdev.Info, opts usbdev.OpenOptions) (*bulkPath, error) {
	mp := info.BulkOutMaxPacket
	if mp <= 0 {
		mp = 512
	}
	b := &bulkPath{h: h, epIn: info.BulkIn, epOut: info.BulkOut, maxPacket: mp,
		piece: max(mp, opts.OutStreamChunk/mp*mp), lens: make([]int, opts.OutStreamDepth)}
	for range opts.OutStreamDepth {
		x, err := h.newTransfer()
		if err != nil {
			b.close()
			return nil, fmt.Errorf("allocating a bulk transfer: %w", err)
		}
		b.xfers = append(b.xfers, x)
	}
	if b.small = h.memAlloc(smallLen, true); b.small != nil {
		b.smallZeroCopy = true
	} else if b.small = h.memAlloc(smallLen, false); b.small == nil {
		b.close()
		return nil, errors.New("allocating the command buffer: out of memory")
	}
	return b, nil
}

// close frees what newBulkPath and the bounce buffer took. No transfer may
// be in flight: every call of out and in waits for its own.
func (b *bulkPath) close() {
	for _, x := range b.xfers {
		x.free()
	}
	b.xfers = nil
	b.h.memFree(b.small, b.smallZeroCopy)
	b.h.memFree(b.bounce, false)
	b.small, b.bounce = nil, nil
}

// bounceBuf returns the bounce buffer for memory that is not C memory.
func (b *bulkPath) bounceBuf() ([]byte, error) {
	if b.bounce == nil {
		if b.bounce = b.h.memAlloc(len(b.xfers)*b.piece, false); b.bounce == nil {
			return nil, fmt.Errorf("allocating a %d-byte transfer buffer: out of memory", len(b.xfers)*b.piece)
		}
	}
	return b.bounce, nil
}

// direct finds the region p lies in, and whether its transfers can be sent
// from there: every piece but the last must be whole packets, or the
// device would see the data phase end early.
func (b *bulkPath) direct(regions []region, p []byte) (region, int, bool) {
	start := uintptr(unsafe.Pointer(unsafe.SliceData(p)))
	for _, r := range regions {
		rs := uintptr(unsafe.Pointer(unsafe.SliceData(r.mem)))
		if start < rs || start+uintptr(len(p)) > rs+uintptr(len(r.mem)) {
			continue
		}
		off := int(start - rs)
		if off%b.maxPacket != 0 && len(p) > r.area-off%r.area {
			return region{}, 0, false
		}
		return r, off, true
	}
	return region{}, 0, false
}

// memory says where the transfers of p go from: the region p lies in, or
// the bounce buffer.
func (b *bulkPath) memory(regions []region, p []byte) (r region, off int, direct bool, bounce []byte, err error) {
	if r, off, direct = b.direct(regions, p); direct {
		return r, off, true, nil, nil
	}
	bounce, err = b.bounceBuf()
	return region{}, 0, false, bounce, err
}

// pieceLen is the length of the next transfer of a data phase with left
// bytes to go: up to the end of the area at off in a region, or the
// bounce buffer's piece (whole for IN, which has one transfer in flight).
func pieceLen(direct bool, r region, off, left, bounce int) int {
	if direct {
		return min(left, r.area-off%r.area)
	}
	return min(left, bounce)
}

// out sends p as one data phase. On an error the transfers still in flight
// are cancelled and waited for; n counts the bytes of the transfers that
// completed, in order, before it.
func (b *bulkPath) out(ctx context.Context, p []byte, regions []region) (int, error) {
	if len(p) <= len(b.small) {
		copy(b.small, p)
		return b.one(ctx, b.epOut, b.small[:len(p)])
	}
	r, off, direct, bounce, err := b.memory(regions, p)
	if err != nil {
		return 0, err
	}
	depth := len(b.xfers)
	var (
		moved, sent int
		s, c        int // transfers submitted, completed
		stop        bool
	)
	for {
		for !stop && sent < len(p) && s-c < depth {
			slot := s % depth
			n := pieceLen(direct, r, off+sent, len(p)-sent, b.piece)
			var buf []byte
			if direct {
				buf = r.mem[off+sent : off+sent+n]
			} else {
				buf = bounce[slot*b.piece : slot*b.piece+n]
				copy(buf, p[sent:sent+n])
			}
			if e := b.xfers[slot].submit(b.epOut, buf); e != nil {
				err, stop = e, true
				b.cancel(c, s)
				break
			}
			b.lens[slot] = n
			sent += n
			s++
		}
		if c == s {
			return moved, err
		}
		slot := c % depth
		got, e := b.await(ctx, b.xfers[slot])
		c++
		if stop {
			continue // draining after an error or a short transfer
		}
		moved += got
		if e != nil || got < b.lens[slot] {
			err, stop = e, true
			b.cancel(c, s)
		}
	}
}

// cancel cancels the transfers from the c-th to the one before the s-th.
func (b *bulkPath) cancel(c, s int) {
	for i := c; i < s; i++ {
		b.xfers[i%len(b.xfers)].cancel()
	}
}

// in reads one data phase into p, one transfer at a time, and ends at the
// first short transfer.
func (b *bulkPath) in(ctx context.Context, p []byte, regions []region) (int, error) {
	if len(p) <= len(b.small) {
		n, err := b.one(ctx, b.epIn, b.small[:len(p)])
		copy(p, b.small[:n])
		return n, err
	}
	r, off, direct, bounce, err := b.memory(regions, p)
	if err != nil {
		return 0, err
	}
	moved := 0
	for moved < len(p) {
		n := pieceLen(direct, r, off+moved, len(p)-moved, len(bounce))
		var buf []byte
		if direct {
			buf = r.mem[off+moved : off+moved+n]
		} else {
			buf = bounce[:n]
		}
		got, err := b.one(ctx, b.epIn, buf)
		got = max(0, min(got, n))
		if !direct {
			copy(p[moved:], buf[:got])
		}
		moved += got
		if err != nil || got < n {
			return moved, err
		}
	}
	return moved, nil
}

// one runs a single transfer of buf on ep and waits for it.
func (b *bulkPath) one(ctx context.Context, ep uint8, buf []byte) (int, error) {
	x := b.xfers[0]
	if err := x.submit(ep, buf); err != nil {
		return 0, err
	}
	return b.await(ctx, x)
}

// await waits for x to complete, cancelling it when ctx is done or the
// deadline has passed; the latter is reported as
// context.DeadlineExceeded.
func (b *bulkPath) await(ctx context.Context, x transfer) (int, error) {
	cancelled, expired := false, false
	for !x.wait(waitSlice) {
		if cancelled {
			continue
		}
		if ctx.Err() != nil {
			x.cancel()
			cancelled = true
		} else if !b.deadline.IsZero() && time.Now().After(b.deadline) {
			x.cancel()
			cancelled, expired = true, true
		}
	}
	n, err := x.result()
	if expired && err != nil {
		return n, fmt.Errorf("%w (%w)", context.DeadlineExceeded, err)
	}
	return n, err
}

// allocRegions allocates count buffers of size bytes: usbfs DMA memory when
// the kernel grants all of it, else page-aligned memory (the kernel then
// copies each transfer). piece is the area size of page-aligned memory.
func allocRegions(h usbHandle, count, size, piece int) ([]region, bool, error) {
	if count <= 0 || size <= 0 {
		return nil, false, fmt.Errorf("%d buffers of %d bytes: both must be positive", count, size)
	}
	if regs, ok := allocDevMem(h, count, size); ok {
		return regs, true, nil
	}
	regs := make([]region, 0, count)
	for range count {
		m := h.memAlloc(size, false)
		if m == nil {
			freeRegions(h, regs)
			return nil, false, fmt.Errorf("allocating %d buffers of %d bytes: out of memory", count, size)
		}
		regs = append(regs, region{mem: m, area: piece, parts: [][]byte{m}})
	}
	return regs, false, nil
}

// allocDevMem allocates count buffers of usbfs DMA memory, each made of
// equal page-sized parts of at most maxDevMem bytes that the kernel mapped
// next to each other (mmap usually places them so, in descending order).
// It gives everything back and reports false when any part is refused or
// a buffer's parts are not contiguous.
func allocDevMem(h usbHandle, count, size int) ([]region, bool) {
	parts := (size + maxDevMem - 1) / maxDevMem
	area := size / parts
	if size%parts != 0 || (parts > 1 && area%4096 != 0) {
		return nil, false
	}
	regs := make([]region, 0, count)
	for range count {
		r := region{area: area, zeroCopy: true}
		for range parts {
			m := h.memAlloc(area, true)
			if m == nil {
				freeRegions(h, append(regs, r))
				return nil, false
			}
			r.parts = append(r.parts, m)
		}
		mem, ok := joinParts(r.parts)
		if !ok {
			freeRegions(h, append(regs, r))
			return nil, false
		}
		r.mem = mem
		regs = append(regs, r)
	}
	return regs, true
}

// joinParts sorts parts by address and returns them as one slice when
// each starts where the one before ends.
func joinParts(parts [][]byte) ([]byte, bool) {
	addr := func(b []byte) uintptr { return uintptr(unsafe.Pointer(unsafe.SliceData(b))) }
	for i := 1; i < len(parts); i++ {
		for j := i; j > 0 && addr(parts[j]) < addr(parts[j-1]); j-- {
			parts[j], parts[j-1] = parts[j-1], parts[j]
		}
	}
	total := 0
	for i, p := range parts {
		if i > 0 && addr(p) != addr(parts[i-1])+uintptr(len(parts[i-1])) {
			return nil, false
		}
		total += len(p)
	}
	return unsafe.Slice(unsafe.SliceData(parts[0]), total), true
}

// freeRegions gives the regions' memory back.
func freeRegions(h usbHandle, regs []region) {
	for _, r := range regs {
		for _, p := range r.parts {
			h.memFree(p, r.zeroCopy)
		}
	}
}
