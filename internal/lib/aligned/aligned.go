// Package aligned allocates byte slices that start on a page boundary, as
// O_DIRECT file I/O and DMA-friendly USB buffers need.
package aligned

import (
	"os"
	"unsafe"
)

// Alignment is the boundary every slice from Bytes starts on: at least
// 4096, which satisfies O_DIRECT on every Linux filesystem and block device,
// and at least the host's page size (16 KiB or 64 KiB on some arm64 hosts).
func Alignment() int { return max(4096, os.Getpagesize()) }

// Bytes returns n zeroed bytes starting on an Alignment boundary. Go has no
// aligned allocator, so it over-allocates and slices at the right offset.
func Bytes(n int) []byte {
	align := Alignment()
	mem := make([]byte, n+align)
	skip := 0
	if rem := int(uintptr(unsafe.Pointer(unsafe.SliceData(mem))) % uintptr(align)); rem != 0 {
		skip = align - rem
	}
	return mem[skip : skip+n : skip+n]
}
