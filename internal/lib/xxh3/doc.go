// Package xxh3 is the 128-bit xxh3 hash of the engine's per-transfer
// digests, forked from github.com/zeebo/xxh3 v1.1.0 (BSD 2-Clause,
// LICENSE beside this file) for one change: the implementation of the
// long-input accumulation is the caller's choice (an Accum) instead of
// the CPU's features alone. Upstream takes AVX2 (else SSE2) on amd64 and
// NEON on arm64 whenever the CPU has them; under an emulator (qemu's TCG,
// which runs NEON at 165-183 MB/s and the portable code at 434-994 in the
// arm64 guest of issue 45) the vector code can be the slower, so the
// engine times each Accum this CPU runs and takes the faster. Every Accum
// gives the same hash: the tests hold each against upstream's.
//
// Only what the digests need is kept: Hash128 and a streaming Hasher128
// without a seed; the .s files are upstream's, unchanged (generated there
// with avo). AVX-512 is left out: upstream uses it for inputs of 1 KiB
// and more on CPUs that have it, where AVX2 is the next best.
package xxh3
