package image

import (
	"bytes"
	"encoding/binary"
	"fmt"
	"math"
)

// Format is the container an image arrives in. It is decided from the first
// bytes of the data, never from the file name: images are routinely renamed,
// and a wrong guess here writes compressed garbage to a card.
type Format int

// The formats a Source can decode. Raw means "no recognised container": the
// bytes are the image.
const (
	FormatRaw Format = iota
	FormatGzip
	FormatXz
	FormatZstd
	FormatBzip2
	FormatZip
	FormatLz4
	Format7z
	FormatTar
)

var formatNames = [...]string{
	FormatRaw:   "raw",
	FormatGzip:  "gzip",
	FormatXz:    "xz",
	FormatZstd:  "zstd",
	FormatBzip2: "bzip2",
	FormatZip:   "zip",
	FormatLz4:   "lz4",
	Format7z:    "7z",
	FormatTar:   "tar",
}

func (f Format) String() string {
	if f >= 0 && int(f) < len(formatNames) {
		return formatNames[f]
	}
	return fmt.Sprintf("Format(%d)", int(f))
}

// sniffLen is how many leading bytes sniffing looks at. The tar magic sits
// at offset 257, so 512 (one tar header) covers every signature below.
const sniffLen = 512

// formatMagic lists the signatures of the containers Source decodes.
var formatMagic = []struct {
	format Format
	magic  []byte
}{
	{FormatGzip, []byte{0x1f, 0x8b}},
	{FormatXz, []byte{0xfd, '7', 'z', 'X', 'Z', 0x00}},
	{FormatZstd, []byte{0x28, 0xb5, 0x2f, 0xfd}},
	{FormatBzip2, []byte("BZh")},
	{FormatZip, []byte("PK\x03\x04")},
	// An empty archive: recognised so that it is refused as holding no image
	// rather than written raw.
	{FormatZip, []byte("PK\x05\x06")},
	{FormatLz4, []byte{0x04, 0x22, 0x4d, 0x18}},
	// The legacy format (lz4 -l, the Linux kernel's own): one magic, then
	// blocks of up to 8 MiB.
	{FormatLz4, []byte{0x02, 0x21, 0x4c, 0x18}},
	{Format7z, []byte{'7', 'z', 0xbc, 0xaf, 0x27, 0x1c}},
}

// unsupportedMagic lists containers we recognise but do not decode. Writing
// any of them raw would produce a card that does not boot, so they are
// refused instead.
var unsupportedMagic = []struct {
	name  string
	magic []byte
}{
	{"RAR archive", []byte("Rar!\x1a\x07")},
	{"lzip stream", []byte("LZIP")},
	{"lzop stream", []byte{0x89, 'L', 'Z', 'O', 0x00, 0x0d, 0x0a, 0x1a, 0x0a}},
	{"compress (.Z) stream", []byte{0x1f, 0x9d}},
	{"qcow2 disk image", []byte{'Q', 'F', 'I', 0xfb}},
	{"VMDK disk image", []byte("KDMV")},
	{"VHDX disk image", []byte("vhdxfile")},
	{"Android sparse image", []byte{0x3a, 0xff, 0x26, 0xed}},
}

// The containers recognised without a leading magic: by their structure,
// or (brotli, which has neither) by the file name alone.
const (
	containerLzmaAlone = "lzma (lzma_alone) stream"
	containerBrotli    = "brotli stream"
)

// UnsupportedContainers names every container usbflash recognises but does
// not decode, as Error.Container names them.
func UnsupportedContainers() []string {
	names := make([]string, 0, len(unsupportedMagic)+2)
	for _, m := range unsupportedMagic {
		names = append(names, m.name)
	}
	return append(names, containerLzmaAlone, containerBrotli)
}

// tarMagic is at offset 257 of a tar header ("ustar\x00" POSIX, "ustar  \x00" GNU).
var tarMagic = []byte("ustar")

const tarMagicOffset = 257

// sniffResult is what the leading bytes say.
type sniffResult struct {
	format Format
	// unsupported names a recognised container we refuse; "" otherwise.
	unsupported string
	// truncatedAs is set when the data ends inside a known signature: no
	// real image is that short, so it is a truncated archive.
	truncatedAs Format
	truncated   bool
}

// sniff classifies head, the first bytes of the data (fewer than sniffLen
// only when the whole input is shorter).
func sniff(head []byte) sniffResult {
	for _, m := range formatMagic {
		if bytes.HasPrefix(head, m.magic) {
			return sniffResult{format: m.format}
		}
		if len(head) < len(m.magic) && bytes.HasPrefix(m.magic, head) && len(head) > 0 {
			return sniffResult{truncated: true, truncatedAs: m.format}
		}
	}
	// A zstd stream may open with a skippable frame (magic 0x184D2A5?),
	// and so may an lz4 one: the two formats share that frame, so the
	// frame after it decides.
	if len(head) >= 4 && head[0]&0xf0 == 0x50 && bytes.Equal(head[1:4], []byte{0x2a, 0x4d, 0x18}) {
		return sniffResult{format: afterSkippable(head)}
	}
	if isTar(head) {
		return sniffResult{format: FormatTar}
	}
	if r, ok := sniffUnsupported(head); ok {
		return r
	}
	return sniffResult{format: FormatRaw}
}

// isTar recognises a POSIX or GNU tar header by its magic at offset 257. A
// header whose checksum does not add up is still a tar's, damaged: the
// decoder says so.
func isTar(head []byte) bool {
	return len(head) >= tarMagicOffset+len(tarMagic) &&
		bytes.Equal(head[tarMagicOffset:tarMagicOffset+len(tarMagic)], tarMagic)
}

// afterSkippable is the format of a stream that opens with skippable
// frames, which zstd and lz4 share: that of the first frame after them;
// zstd when head does not reach one.
func afterSkippable(head []byte) Format {
	for off := 0; off+4 <= len(head); {
		b := head[off:]
		switch {
		case bytes.HasPrefix(b, []byte{0x04, 0x22, 0x4d, 0x18}):
			return FormatLz4
		case b[0]&0xf0 != 0x50 || !bytes.Equal(b[1:4], []byte{0x2a, 0x4d, 0x18}) || len(b) < 8:
			return FormatZstd
		}

		next := int64(off) + 8 + int64(binary.LittleEndian.Uint32(b[4:8]))
		if next > int64(len(head)) {
			break
		}
		off = int(next)
	}
	return FormatZstd

}

// sniffUnsupported reports containers we know but do not decode, including
// a bare LZMA ("lzma_alone") stream.
func sniffUnsupported(head []byte) (sniffResult, bool) {
	for _, m := range unsupportedMagic {
		if bytes.HasPrefix(head, m.magic) {
			return sniffResult{unsupported: m.name}, true
		}
	}

	if isLzmaAlone(head) {
		return sniffResult{unsupported: containerLzmaAlone}, true
	}
	return sniffResult{}, false
}

// isLzmaAlone recognises the legacy .lzma header. It has no magic, so its
// structure decides, as liblzma's own format detection does: a properties
// byte (lc + lp*9 + pb*45) below 225; a dictionary size that encoders write
// (2^n or 2^n + 2^(n-1) from 4 KiB, as xz writes them, or a whole number of
// MiB from 4 MiB, as the LZMA SDK rounds larger ones); an uncompressed size
// that is unknown (all ones) or from 1 byte to 256 GiB (xz's own limit); and
// the range coder's first byte, which is always zero. A disk image starts
// with boot code (a jump opcode of 0xe9 or above, or code whose next four
// bytes make no such dictionary size) or with zeros (no dictionary at all).
func isLzmaAlone(head []byte) bool {
	if len(head) < lzmaAloneHeaderLen+1 || head[0] >= 9*5*5 || head[lzmaAloneHeaderLen] != 0 {
		return false
	}
	dict := binary.LittleEndian.Uint32(head[1:5])
	size := binary.LittleEndian.Uint64(head[5:13])
	return lzmaDictPlausible(dict) && (size == math.MaxUint64 || size > 0 && size < 1<<38)
}

// lzmaAloneHeaderLen is the properties byte, the dictionary size and the
// uncompressed size.
const lzmaAloneHeaderLen = 13

// lzmaDictPlausible reports whether an encoder writes dict as an lzma_alone
// dictionary size: xz rounds to 2^n or 2^n + 2^(n-1), the LZMA SDK likewise
// below 4 MiB and to whole MiB above; neither writes less than 4 KiB, and
// 7-Zip writes at most 3840 MiB.
func lzmaDictPlausible(dict uint32) bool {
	if dict < 1<<12 || dict > 0xf0000000 {
		return false
	}
	if dict >= 4<<20 && dict%(1<<20) == 0 {
		return true
	}
	low := dict & -dict // the lowest set bit
	rest := dict - low
	return rest == 0 || rest == low<<1
}
