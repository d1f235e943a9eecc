package xxh3

import (
	"unsafe"

	"golang.org/x/sys/cpu"
)

//go:noescape
func accumAVX2(acc *[8]u64, data, key unsafe.Pointer, len u64)

//go:noescape
func accumSSE(acc *[8]u64, data, key unsafe.Pointer, len u64)

//go:noescape
func accumBlockAVX2(acc *[8]u64, data, key unsafe.Pointer)

//go:noescape
func accumBlockSSE(acc *[8]u64, data, key unsafe.Pointer)

// vectorAccums are AVX2 where the CPU has it, and SSE2, which every
// amd64 CPU has.
func vectorAccums() []Accum {
	var as []Accum
	if cpu.X86.HasAVX2 {
		as = append(as, Accum{name: "avx2", long: accumAVX2, block: accumBlockAVX2})
	}
	return append(as, Accum{name: "sse2", long: accumSSE, block: accumBlockSSE})
}
