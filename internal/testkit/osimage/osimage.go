// Package osimage generates deterministic test images shaped like OS
// images, for the tests and benchmarks of every package that needs one.
package osimage

import (
	"encoding/binary"
	"math/rand/v2"
)

// Generate returns size deterministic bytes shaped like an OS image: runs
// of zeros (unused blocks, about 30%), text (configs, scripts, docs),
// structured binary (code, tables) and incompressible data (already
// compressed files), in regions of 4 KiB to 1 MiB. Decoder speed depends on
// this mix, so benchmarks on random or all-zero data would mislead.
func Generate(size int64, seed uint64) []byte {
	rng := rand.New(rand.NewPCG(seed, seed^0x9e3779b97f4a7c15))
	out := make([]byte, 0, size)
	words := []string{"the", "kernel", "module", "usr", "lib", "systemd", "service", "enable", "config",
		"true", "false", "root", "boot", "firmware", "device", "mount", "options", "=", "#", "/etc/",
		"ExecStart", "Description", "0x1f", "return", "if", "then", "fi", "echo", "$PATH", "{", "}"}
	for int64(len(out)) < size {
		n := int(min(size-int64(len(out)), int64(4096<<rng.IntN(9))))
		switch k := rng.IntN(100); {
		case k < 30: // zeros
			out = append(out, make([]byte, n)...)
		case k < 55: // text
			end := len(out) + n
			for len(out) < end {
				w := words[rng.IntN(len(words))]
				if rng.IntN(12) == 0 {
					w += "\n"
				} else {
					w += " "
				}
				out = append(out, w[:min(len(w), end-len(out))]...)
			}
		case k < 85: // structured binary: records with counters and small fields
			end := len(out) + n
			var rec [16]byte
			for i := uint32(0); len(out) < end; i++ {
				binary.LittleEndian.PutUint32(rec[0:], i)
				binary.LittleEndian.PutUint32(rec[4:], uint32(rng.IntN(256)))
				binary.LittleEndian.PutUint64(rec[8:], uint64(i)*0x40+0x8000)
				out = append(out, rec[:min(len(rec), end-len(out))]...)
			}
		default: // incompressible
			start := len(out)
			out = append(out, make([]byte, n)...)
			for i := start; i < len(out); i += 8 {
				var w [8]byte
				binary.LittleEndian.PutUint64(w[:], rng.Uint64())
				copy(out[i:], w[:])
			}
		}
	}
	return out
}
