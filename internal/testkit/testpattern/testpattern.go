// Package testpattern makes the deterministic test data the packages' tests
// write to devices: bytes that differ from block to block and are never
// zero, so a misplaced, missing or zeroed block shows.
package testpattern

// Bytes returns n bytes of the pattern numbered seed.
func Bytes(n int, seed byte) []byte {
	p := make([]byte, n)
	x := uint32(seed)*2654435761 + 1
	for i := range p {
		x ^= x << 13
		x ^= x >> 17
		x ^= x << 5
		p[i] = byte(x) | 1
	}
	return p
}
