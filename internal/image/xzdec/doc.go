// Package xzdec decodes .xz files, the format OS images are usually
// shipped in, faster than github.com/ulikunitz/xz and, on multi-block
// files, on several cores.
//
// Three front ends share one block decoder:
//
//   - NewReader streams from any io.Reader on one goroutine. It handles
//     concatenated streams and stream padding and verifies every check,
//     index and footer as it goes.
//   - NewParallelReader takes an io.ReaderAt and a size. It reads the index
//     from the end of the file (ReadIndex) and, when the file has more than
//     one block, decodes blocks concurrently and delivers them in order; see
//     Options for the memory bound. Otherwise it falls back to NewReader.
//     A caller that needs the index too (for the decoded size) reads it
//     once with ReadIndex and passes it to NewParallelReaderIndex.
//   - NewParallelStreamReader takes an io.Reader read once (a download):
//     blocks whose headers record their sizes (xz -T) are read whole and
//     decoded concurrently, the others on the goroutine reading the input.
//
// All implement io.WriterTo, which hands the writer slices of the decoder's
// own buffers: decoded bytes are written once into the LZMA window (which,
// in parallel mode, is the block's output buffer) and copied only by Read.
//
// Integrity: CRC32, CRC64 and SHA-256 checks are verified for every block
// (check "none" has nothing to verify); reserved check IDs are refused.
// Block header sizes are cross-checked against the data and, in parallel
// mode, against the index; index records, index CRC32, backward size and
// stream header/footer flags are verified. Every error is an *Error giving
// the compressed byte offset where the problem was found.
//
// Filters: LZMA2 with any chain of the delta filter and the BCJ filters
// x86, ARM, ARM-Thumb, ARM64, PowerPC, IA-64 and SPARC (xz --x86, --arm,
// --armthumb, --arm64, --powerpc, --ia64, --sparc, --delta) is decoded.
// Other filters (RISC-V BCJ from xz 5.6, LZMA1 in .xz) fail before any
// output with ErrUnsupported and a message naming the filter.
package xzdec
