package image

import (
	"errors"
	"fmt"
	"io"
	"os"
	"runtime"
	"runtime/debug"
	"sync/atomic"
)

// mappedFile reads a regular image file through a read-only mapping of
// the whole file: ReadAt is a copy in this process, not a read(2). The
// engine reads a raw image straight into the device's buffers, so the one
// copy it cannot avoid (page cache to usbfs memory) is then made by Go's
// memmove instead of the kernel's copy_to_user, which on a slow host is
// the dearer of the two (under emulation, the kernel's `rep movsb` ran at
// a quarter of memmove's speed), and costs no system call per transfer.
// Reads from many goroutines at once need no lock.
type mappedFile struct {
	data  []byte                // the file's first size bytes, mapped read-only
	size  func() (int64, error) // the file's size now
	unmap func() error
	// drop takes whole pages of data out of this process's page tables
	// (the page cache keeps them, and a later read maps them again);
	// nil where that cannot be done.
	drop func(b []byte) error
	// dropped is how far data has been dropped behind the reader.
	dropped atomic.Int64
}

// dropChunk is how far a reader gets past the last drop before the pages
// behind it are dropped: a multiple of every page size, and few calls,
// each of which flushes the TLB (in the arm64 TCG guest 4 MiB drops made
// a 384 MiB write slower in one of two same-boot A/Bs; 32 MiB ones made
// it 11% faster).
const dropChunk = 32 << 20

// errMappedFault is a page of the mapped image that faulted though the
// file still reaches past it: the kernel could not read it from the disk.
var errMappedFault = errors.New("the kernel could not read this part of the image file from its disk (an I/O error)")

// ReadAt copies from the mapping. A page the file lost since it was mapped
// (truncated by another program) is a fault the runtime turns into a
// panic for this goroutine only (debug.SetPanicOnFault); then the read
// ends where the file now ends, as read(2) would, and the engine reports
// the image as changed.
func (m *mappedFile) ReadAt(p []byte, off int64) (n int, err error) {
	if off < 0 {
		return 0, fmt.Errorf("read at negative offset %d", off)
	}
	if off >= int64(len(m.data)) {
		return 0, io.EOF
	}
	n, ok := m.copyAt(p, off)
	if !ok {
		end, err := m.size()
		if err != nil {
			return 0, err
		}
		if end <= off {
			return 0, io.EOF
		}
		if n, ok = m.copyAt(p[:min(int64(len(p)), end-off)], off); !ok {
			// The bytes before the page that failed are good: hand
			// them over, as read(2) does before an I/O error, so
			// the caller names where the image became unreadable
			// (Source's Unreadable error names the file and the
			// offset; this says only what went wrong).
			return m.copyBefore(p, off), errMappedFault
		}
	}
	m.dropBehind(off + int64(n))
	if n < len(p) {
		err = io.EOF
	}
	return n, err
}

// dropBehind drops the mapping's pages before end once a reader has got a
// dropChunk past the last drop. Left mapped, the pages of a whole image
// would all be unmapped at Close, after the last write, while the user
// waits (384 MiB took 77 ms in the amd64 TCG guest, 177-285 ms in the
// arm64 one, and page tables grow with the image). Dropped as the reader
// goes, the same work is done by the goroutine that fills the buffers,
// which mostly waits for the device. A reader going back finds the
// bytes again, through a fault; one that skips ahead drops what it
// skipped, which costs nothing.
func (m *mappedFile) dropBehind(end int64) {
	if m.drop == nil {
		return
	}
	from := m.dropped.Load()
	to := end / dropChunk * dropChunk
	if to-from < dropChunk || !m.dropped.CompareAndSwap(from, to) {
		return
	}
	_ = m.drop(m.data[from:to]) // advice: pages left mapped cost only the unmapping
}

// copyAt copies from the mapping at off; ok is false when a page of it
// faulted. A fault is a runtime.Error, with the faulting address where
// the kernel reports one (not under user-mode emulation, where SIGBUS comes
// as a nil dereference); the copy, its bounds checked before, can raise no
// other.
func (m *mappedFile) copyAt(p []byte, off int64) (n int, ok bool) {
	defer debug.SetPanicOnFault(debug.SetPanicOnFault(true))
	defer func() {
		if r := recover(); r != nil {
			if _, fault := r.(runtime.Error); !fault {
				panic(r)
			}
			n, ok = 0, false
		}
	}()
	return copy(p, m.data[off:]), true
}

// copyBefore copies from off up to the first page of the mapping that
// faults, page by page: the slow path of a read that already faulted.
func (m *mappedFile) copyBefore(p []byte, off int64) int {
	page := int64(os.Getpagesize())
	n := 0
	for n < len(p) {
		next := min((off+int64(n))/page*page+page-off, int64(len(p))) // to the next page boundary
		k, ok := m.copyAt(p[n:next], off+int64(n))
		n += k
		if !ok || k < int(next)-n+k {
			break // the faulting page, or the mapping's end
		}
	}
	return n
}

// Close unmaps the file; reads after it fail (a fault, as above).
func (m *mappedFile) Close() error { return m.unmap() }

// maxMapped is the largest file mapped whole: all of it on 64-bit
// systems; on 32-bit ones a mapping that takes most of the address space
// would starve the buffers allocated after it, so those larger files are
// read with read(2).
const maxMapped = int64(^uint(0) >> 2) // 1 GiB on 32-bit systems
