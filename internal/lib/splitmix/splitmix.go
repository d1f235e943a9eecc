// Package splitmix fills bytes with the splitmix64 sequence: a fast,
// seedable stream that a block can be regenerated from (the fake-card
// probe's blocks name themselves by it) or that changes with its seed
// (a simulated fake card's garbage).
package splitmix

import "encoding/binary"

// Fill fills p with splitmix64 output from seed.
func Fill(p []byte, seed uint64) {
	var b [8]byte
	for i := 0; i < len(p); i += 8 {
		seed += 0x9E3779B97F4A7C15
		z := seed
		z = (z ^ z>>30) * 0xBF58476D1CE4E5B9
		z = (z ^ z>>27) * 0x94D049BB133111EB
		binary.LittleEndian.PutUint64(b[:], z^z>>31)
		copy(p[i:], b[:])
	}
}
