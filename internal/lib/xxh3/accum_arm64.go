package xxh3

import "unsafe"

//go:noescape
func accumNEON(acc *[8]u64, data, key unsafe.Pointer, len u64)

//go:noescape
func accumBlockNEON(acc *[8]u64, data, key unsafe.Pointer)

// vectorAccums is NEON, which every arm64 CPU has (upstream's arm64
// path).
func vectorAccums() []Accum {
	return []Accum{{name: "neon", long: accumNEON, block: accumBlockNEON}}
}
