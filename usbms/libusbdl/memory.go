//go:build linux || darwin || windows

package libusbdl

import (
	"fmt"
	"slices"
	"unsafe"

	"github.com/usbflash/usbflash/internal/lib/aligned"
	"github.com/usbflash/usbflash/usbms"
	"github.com/usbflash/usbflash/usbms/usbdev"
)

// addr is the address of buf's first byte, for a C structure.
func addr(buf []byte) uintptr { return uintptr(unsafe.Pointer(unsafe.SliceData(buf))) }

// maxDevMem is the largest single device-memory allocation asked for:
// usbfs's memory is physically contiguous, and more than 4 MiB at once is
// refused on most hosts.
const maxDevMem = 4 << 20

// region is one buffer AllocBuffers handed out: device memory (usbfs's,
// on Linux: sent without a copy) or page-aligned Go memory, which every
// transfer pins.
type region struct {
	mem    []byte
	devMem bool
}

// limit is how many bytes from address a may go into one transfer
// without leaving the device-memory mapping a lies in (usbfs refuses a
// transfer across two); 0 when a is not in this region or the region is
// Go memory, which has no such bound.
func (r *region) limit(a uintptr) int {
	if !r.devMem || len(r.mem) == 0 {
		return 0
	}
	base := addr(r.mem)
	if a < base || a >= base+uintptr(len(r.mem)) {
		return 0
	}
	return len(r.mem) - int(a-base)
}

func (r *region) free() {
	if r.devMem {
		devMemFree(r.mem)
	}
	r.mem = nil
}

// devMemAlloc is libusb_dev_mem_alloc: n bytes the kernel sends without
// a copy, or nil where there is none (not Linux, libusb before 1.0.21, a
// kernel without it, usbfs_memory_mb spent).
func (l *Library) devMemAlloc(h uintptr, n int) []byte {
	if !devMemSystem || l == nil || l.fn.devMemAlloc == 0 || n > maxDevMem {
		return nil
	}
	p := cptr[byte](call(l.fn.devMemAlloc, h, uintptr(n)))
	if p == nil {
		return nil
	}
	return unsafe.Slice(p, n)
}

// AllocBuffers implements usbms.BufferAllocator: count buffers of size
// bytes of device memory (libusb_dev_mem_alloc: Linux, sent without a
// copy) when the system grants all of them within its bound, else
// page-aligned Go memory for all, which every transfer pins and the
// system copies. The buffers outlive port resets; Close frees what free
// was not called for.
func (d *Device) AllocBuffers(count, size int) ([][]byte, string, func(), error) {
	d.mu.Lock()
	defer d.mu.Unlock()
	const op = "allocating transfer buffers"
	if d.s == nil {
		return nil, "", nil, d.closedErr(op)
	}
	if count <= 0 || size <= 0 {
		return nil, "", nil, usbdev.NewError(op, d.info, nil, fmt.Errorf("%d buffers of %d bytes: both must be positive", count, size))
	}
	regs := make([]*region, 0, count)
	if int64(count)*int64(size) <= devMemBudget(d.opts) {
		for len(regs) < count {
			m := d.lib.devMemAlloc(d.s.h, size)
			if m == nil {
				for _, r := range regs {
					r.free()
				}
				regs = regs[:0]
				break
			}
			regs = append(regs, &region{mem: m, devMem: true})
		}
	}
	kind := usbms.MemoryZeroCopy
	if len(regs) == 0 {
		kind = usbms.MemoryPageAligned
		for range count {
			regs = append(regs, &region{mem: aligned.Bytes(size)})
		}
	}
	d.regions = append(d.regions, regs...)
	bufs := make([][]byte, len(regs))
	for i, r := range regs {
		bufs[i] = r.mem
	}
	free := func() {
		d.mu.Lock()
		defer d.mu.Unlock()
		kept := d.regions[:0]
		for _, r := range d.regions {
			if slices.Contains(regs, r) {
				r.free()
				continue
			}
			kept = append(kept, r)
		}
		clear(d.regions[len(kept):])
		d.regions = kept
	}
	return bufs, kind, free, nil
}
