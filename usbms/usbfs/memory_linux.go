//go:build linux

package usbfs

import (
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"unsafe"

	"golang.org/x/sys/unix"

	"github.com/usbflash/usbflash/internal/lib/aligned"
	"github.com/usbflash/usbflash/usbms"
)

// mapPiece is the largest usbfs mapping asked for at once: the kernel's
// coherent DMA memory is physically contiguous, and more than 4 MiB in one
// piece is refused on most hosts (the page allocator's largest order). A
// larger buffer is several mappings placed next to each other.
const mapPiece = 4 << 20

// region is one buffer AllocBuffers handed out.
type region struct {
	mem    []byte
	mapped bool // usbfs memory (munmap to free); else Go memory
}

// limit is how many bytes from addr may go into one URB without crossing
// a usbfs mapping's end; 0 when addr is not in this region.
func (r region) limit(addr uintptr) int {
	if !r.mapped || len(r.mem) == 0 {
		return 0
	}
	base := uintptr(unsafe.Pointer(unsafe.SliceData(r.mem)))
	if addr < base || addr >= base+uintptr(len(r.mem)) {
		return 0
	}
	off := int(addr - base)
	return (off/mapPiece+1)*mapPiece - off
}

func (r region) free() {
	if r.mapped && len(r.mem) > 0 {
		_ = unix.MunmapPtr(unsafe.Pointer(unsafe.SliceData(r.mem)), uintptr(len(r.mem)))
	}
}

// mapUsbfs maps size bytes of usbfs memory on fd at one address range:
// a reservation, then each piece of at most mapPiece placed in it.
func mapUsbfs(fd, size int) ([]byte, error) {
	if size <= mapPiece {
		m, err := unix.MmapPtr(fd, 0, nil, uintptr(size), unix.PROT_READ|unix.PROT_WRITE, unix.MAP_SHARED)
		if err != nil {
			return nil, err
		}
		return unsafe.Slice((*byte)(m), size), nil
	}
	res, err := unix.MmapPtr(-1, 0, nil, uintptr(size), unix.PROT_NONE, unix.MAP_PRIVATE|unix.MAP_ANONYMOUS)
	if err != nil {
		return nil, err
	}
	for off := 0; off < size; off += mapPiece {
		n := min(mapPiece, size-off)
		at := unsafe.Add(res, off)
		if _, err := unix.MmapPtr(fd, 0, at, uintptr(n), unix.PROT_READ|unix.PROT_WRITE, unix.MAP_SHARED|unix.MAP_FIXED); err != nil {
			_ = unix.MunmapPtr(res, uintptr(size))
			return nil, err
		}
	}
	return unsafe.Slice((*byte)(res), size), nil
}

// probeMmap tells whether the kernel hands out usbfs memory at all.
func (d *Device) probeMmap() bool {
	if d.caps&capMmap == 0 {
		return false
	}
	m, err := mapUsbfs(d.fd, 4096)
	if err != nil {
		return false
	}
	region{mem: m, mapped: true}.free()
	return true
}

// AllocBuffers implements usbms.BufferAllocator: count buffers of size
// bytes, as many of them usbfs memory (sent without a copy) as the kernel
// grants, in order, and the rest page-aligned Go memory, which the kernel
// copies. usbfs_memory_mb bounds the total (16 MiB by default); callers
// put the buffers that cycle first (pipeline.BuffersFor keeps them under
// that bound), so what the bound refuses is a buffer sent once. The
// buffers outlive port resets; Close frees what free was not called for.
func (d *Device) AllocBuffers(count, size int) ([][]byte, string, func(), error) {
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.fd < 0 {
		return nil, "", nil, d.closedErr("allocating transfer buffers")
	}
	regs := make([]region, 0, count)
	var raised string
	if d.caps&capMmap != 0 {
		lim := usbfsLimitOf(sysModuleParams)
		for len(regs) < count {
			var m []byte
			var err error = unix.ENOMEM
			if b := mappable(lim.bytes, d.piece); b < 0 || int64(len(regs)+1)*int64(size) <= b {
				m, err = mapUsbfs(d.fd, size)
			}
			if err == nil {
				regs = append(regs, region{mem: m, mapped: true})
				continue
			}
			// Refused for the limit (this process's buffers, or
			// everyone's usbfs memory): raise it once, by what is
			// left to map, where we may.
			if err != unix.ENOMEM || raised != "" || lim.bytes == 0 {
				break
			}
			more := int64(count-len(regs))*int64(size) + int64(d.piece) + 64<<10
			if raised = lim.raise(more); raised == "" {
				break
			}
		}
	}
	mapped := len(regs)
	for len(regs) < count {
		regs = append(regs, region{mem: aligned.Bytes(size)})
	}
	kind := memoryKind(mapped, count)
	if raised != "" {
		kind += " (" + raised + ")"
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
			if containsRegion(regs, r) {
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

// sysModuleParams is where the kernel shows usbcore's parameters.
const sysModuleParams = "/sys/module/usbcore/parameters"

// usbfsLimit is the kernel's bound on all usbfs memory, read from
// usbfs_memory_mb in dir (where it can be raised).
type usbfsLimit struct {
	dir   string
	bytes int64 // 0: none; 16 MiB, the default, when unreadable
}

func usbfsLimitOf(dir string) usbfsLimit {
	l := usbfsLimit{dir: dir, bytes: 16 << 20}
	b, err := os.ReadFile(filepath.Join(dir, "usbfs_memory_mb"))
	if err != nil {
		return l
	}
	if mb, err := strconv.ParseInt(strings.TrimSpace(string(b)), 10, 64); err == nil && mb >= 0 {
		l.bytes = mb << 20
	}
	return l
}

// raise lifts the limit by more bytes (whole MiB), when this process may
// (root), and says what it did; "" when it could not. The limit is a cap
// on what usbfs users may take, not memory set aside, and Linux's advice
// for large transfers is to raise it; it is never lowered, nor put back
// (another program may be relying on it by then).
func (l *usbfsLimit) raise(more int64) string {
	old := l.bytes
	mb := (old + more + 1<<20 - 1) >> 20
	if err := os.WriteFile(filepath.Join(l.dir, "usbfs_memory_mb"), []byte(strconv.FormatInt(mb, 10)), 0o644); err != nil {
		return ""
	}
	now := usbfsLimitOf(l.dir).bytes
	if now != 0 && now <= old {
		return ""
	}
	l.bytes = now
	return fmt.Sprintf("usbfs_memory_mb raised from %d to %d", old>>20, l.bytes>>20)
}

// mappable is how much of the kernel's usbfs limit buffers may map (-1:
// no bound), leaving room for what is sent from other memory: a piece of
// piece bytes from a copied buffer, and the commands and statuses. Every
// in-flight URB counts against the same limit, so mapping all of it
// would leave the next command nothing.
func mappable(limit int64, piece int) int64 {
	if limit == 0 {
		return -1
	}
	return max(limit-int64(piece)-64<<10, 0)
}

// memoryKind names the memory of count buffers of which the first mapped
// are usbfs memory.
func memoryKind(mapped, count int) string {
	switch mapped {
	case count:
		return usbms.MemoryZeroCopy
	case 0:
		return usbms.MemoryPageAligned
	}
	return fmt.Sprintf("%s for %d of %d buffers (usbfs_memory_mb bounds it)", usbms.MemoryZeroCopy, mapped, count)
}

func containsRegion(regs []region, r region) bool {
	for _, x := range regs {
		if unsafe.SliceData(x.mem) == unsafe.SliceData(r.mem) {
			return true
		}
	}
	return false
}

// MemoryKind implements usbms.BufferAllocator: the kind AllocBuffers
// gives, as the open found it (a small usbfs mapping was granted or not).
func (d *Device) MemoryKind() string {
	d.mu.RLock()
	defer d.mu.RUnlock()
	if d.smallZeroCopy {
		return usbms.MemoryZeroCopy
	}
	return usbms.MemoryPageAligned
}
