package xzdec

import (
	"bytes"
	"crypto/sha256"
	"encoding/binary"
	"hash"
	"hash/crc32"
	"hash/crc64"
)

// Sizes fixed by the .xz file format specification (version 1.1.0).
const (
	streamHeaderSize = 12
	streamFooterSize = 12
	maxVLIBytes      = 9
	maxVLI           = 1<<63 - 1
	maxFilters       = 4
)

var (
	headerMagic = []byte{0xFD, '7', 'z', 'X', 'Z', 0x00}
	footerMagic = []byte{'Y', 'Z'}
)

// CheckType is the integrity check a stream stores after every block.
type CheckType uint8

// Check IDs from the specification. Other IDs are reserved; we refuse them
// rather than skip verification silently.
const (
	CheckNone   CheckType = 0x00
	CheckCRC32  CheckType = 0x01
	CheckCRC64  CheckType = 0x04
	CheckSHA256 CheckType = 0x0A
)

func (c CheckType) String() string {
	switch c {
	case CheckNone:
		return "none"
	case CheckCRC32:
		return "CRC32"
	case CheckCRC64:
		return "CRC64"
	case CheckSHA256:
		return "SHA-256"
	}
	return "reserved check 0x" + string("0123456789abcdef"[c>>4]) + string("0123456789abcdef"[c&15])
}

// checkSizes is indexed by check ID; the spec fixes the size even for
// reserved IDs, which lets the index walker compute block sizes.
var checkSizes = [16]int{0, 4, 4, 4, 8, 8, 8, 16, 16, 16, 32, 32, 32, 64, 64, 64}

// Size is the number of bytes the check occupies after each block.
func (c CheckType) Size() int { return checkSizes[c&15] }

func (c CheckType) supported() bool {
	return c == CheckNone || c == CheckCRC32 || c == CheckCRC64 || c == CheckSHA256
}

// newHash returns the hash for c, or nil for CheckNone.
func (c CheckType) newHash() hash.Hash {
	switch c {
	case CheckCRC32:
		return crc32.NewIEEE()
	case CheckCRC64:
		return crc64.New(crc64Table())
	case CheckSHA256:
		return sha256.New()
	}
	return nil
}

// crc64Table returns the ECMA-182 table; crc64.MakeTable caches it
// internally, so this allocates nothing after the first call.
func crc64Table() *crc64.Table { return crc64.MakeTable(crc64.ECMA) }

// streamFlags is the two-byte flags field shared by header and footer.
type streamFlags [2]byte

func (f streamFlags) check() CheckType { return CheckType(f[1] & 0x0F) }

func parseStreamFlags(b []byte, off int64) (streamFlags, error) {
	var f streamFlags
	copy(f[:], b)
	if f[0] != 0 || f[1]&0xF0 != 0 {
		return f, errAt(off, ErrUnsupported, "stream flags 0x%02x%02x (reserved bits set)", f[0], f[1])
	}
	if !f.check().supported() {
		return f, errAt(off, ErrUnsupported, "integrity check ID %#02x (%v)", byte(f.check()), f.check())
	}
	return f, nil
}

// parseStreamHeader validates a 12-byte stream header at offset off.
func parseStreamHeader(b []byte, off int64) (streamFlags, error) {
	if !bytes.Equal(b[:6], headerMagic) {
		return streamFlags{}, errAt(off, ErrFormat, "no xz stream header magic")
	}
	if crc32.ChecksumIEEE(b[6:8]) != binary.LittleEndian.Uint32(b[8:12]) {
		return streamFlags{}, errAt(off+6, ErrFormat, "stream header CRC32 mismatch")
	}
	return parseStreamFlags(b[6:8], off+6)
}

// parseStreamFooter validates a 12-byte footer and returns its flags and the
// index size (backward size) it records.
func parseStreamFooter(b []byte, off int64) (streamFlags, int64, error) {
	if !bytes.Equal(b[10:12], footerMagic) {
		return streamFlags{}, 0, errAt(off+10, ErrFormat, "no xz stream footer magic")
	}
	if crc32.ChecksumIEEE(b[4:10]) != binary.LittleEndian.Uint32(b[0:4]) {
		return streamFlags{}, 0, errAt(off, ErrFormat, "stream footer CRC32 mismatch")
	}
	back := (int64(binary.LittleEndian.Uint32(b[4:8])) + 1) * 4
	f, err := parseStreamFlags(b[8:10], off+8)
	return f, back, err
}

// getVLI decodes a variable-length integer from b. It returns the value and
// the number of bytes used, or n == 0 if b is too short, or n < 0 if the
// encoding is invalid (too long or not minimal).
func getVLI(b []byte) (v uint64, n int) {
	for i := 0; i < maxVLIBytes; i++ {
		if i >= len(b) {
			return 0, 0
		}
		c := b[i]
		v |= uint64(c&0x7F) << (7 * i)
		if c&0x80 == 0 {
			if c == 0 && i > 0 {
				return 0, -1 // non-minimal encoding is forbidden
			}
			return v, i + 1
		}
	}
	return 0, -1
}

// Filter IDs from the specification and liblzma.
const (
	filterDelta    = 0x03
	filterX86      = 0x04
	filterPowerPC  = 0x05
	filterIA64     = 0x06
	filterARM      = 0x07
	filterARMThumb = 0x08
	filterSPARC    = 0x09
	filterARM64    = 0x0A
	filterLZMA2    = 0x21
)

func filterName(id uint64) string {
	switch id {
	case filterDelta:
		return "delta filter"
	case filterX86:
		return "x86 BCJ filter"
	case filterPowerPC:
		return "PowerPC BCJ filter"
	case filterIA64:
		return "IA-64 BCJ filter"
	case filterARM:
		return "ARM BCJ filter"
	case filterARMThumb:
		return "ARM-Thumb BCJ filter"
	case filterSPARC:
		return "SPARC BCJ filter"
	case filterARM64:
		return "ARM64 BCJ filter"
	case filterLZMA2:
		return "LZMA2 filter"
	case 0x0B:
		return "RISC-V BCJ filter"
	case 0x4000000000000001:
		return "LZMA1 filter"
	}
	return "unknown filter"
}

type filterSpec struct {
	id    uint64
	props []byte
}

// blockHeader is a parsed block header. Sizes are -1 when absent.
type blockHeader struct {
	size         int // header size in bytes, including its CRC32
	compSize     int64
	uncompSize   int64
	filters      []filterSpec // in file order; the last one is LZMA2
	dictSize     uint32
	lzma2PropOff int64
}

// parseBlockHeader parses a complete block header b (b[0] is the size byte)
// found at offset off.
func parseBlockHeader(b []byte, off int64) (blockHeader, error) {
	h := blockHeader{size: len(b), compSize: -1, uncompSize: -1}
	n := len(b)
	if crc32.ChecksumIEEE(b[:n-4]) != binary.LittleEndian.Uint32(b[n-4:]) {
		return h, errAt(off, ErrFormat, "block header CRC32 mismatch")
	}
	flags := b[1]
	if flags&0x3C != 0 {
		return h, errAt(off+1, ErrUnsupported, "block flags %#02x (reserved bits set)", flags)
	}
	p := 2
	body := b[:n-4]
	readVLI := func(what string) (int64, error) {
		v, k := getVLI(body[p:])
		if k <= 0 || v > maxVLI {
			return 0, errAt(off+int64(p), ErrFormat, "bad %s in block header", what)
		}
		p += k
		return int64(v), nil
	}
	var err error
	if flags&0x40 != 0 {
		if h.compSize, err = readVLI("compressed size"); err != nil {
			return h, err
		}
		if h.compSize == 0 {
			return h, errAt(off, ErrFormat, "block header compressed size is zero")
		}
	}
	if flags&0x80 != 0 {
		if h.uncompSize, err = readVLI("uncompressed size"); err != nil {
			return h, err
		}
	}
	nf := int(flags&3) + 1
	for i := 0; i < nf; i++ {
		fpos := p
		id, err := readVLI("filter ID")
		if err != nil {
			return h, err
		}
		psize, err := readVLI("filter properties size")
		if err != nil {
			return h, err
		}
		if psize > int64(len(body)-p) {
			return h, errAt(off+int64(p), ErrFormat, "filter properties overrun block header")
		}
		spec := filterSpec{id: uint64(id), props: body[p : p+int(psize)]}
		if err := checkFilter(spec, i == nf-1, off+int64(fpos)); err != nil {
			return h, err
		}
		if spec.id == filterLZMA2 {
			h.dictSize = lzma2DictSize(spec.props[0])
			h.lzma2PropOff = off + int64(p)
		}
		p += int(psize)
		h.filters = append(h.filters, spec)
	}
	for _, c := range body[p:] {
		if c != 0 {
			return h, errAt(off+int64(p), ErrFormat, "non-zero block header padding")
		}
	}
	return h, nil
}

// checkFilter validates one filter entry; last tells whether it is the last
// filter of the chain, which must be (and only it may be) LZMA2.
func checkFilter(f filterSpec, last bool, off int64) error {
	switch f.id {
	case filterLZMA2:
		if !last {
			return errAt(off, ErrFormat, "LZMA2 is not the last filter")
		}
		if len(f.props) != 1 || f.props[0] > 40 {
			return errAt(off, ErrFormat, "bad LZMA2 properties")
		}
		return nil
	case filterDelta:
		if len(f.props) != 1 {
			return errAt(off, ErrFormat, "bad delta filter properties")
		}
	case filterX86, filterPowerPC, filterIA64, filterARM, filterARMThumb, filterSPARC, filterARM64:
		if len(f.props) != 0 && len(f.props) != 4 {
			return errAt(off, ErrFormat, "bad %s properties", filterName(f.id))
		}
	default:
		return errAt(off, ErrUnsupported, "the %s (ID %#x)", filterName(f.id), f.id)
	}
	if last {
		return errAt(off, ErrUnsupported, "the %s as the last filter (only LZMA2 is decoded there)", filterName(f.id))
	}
	return nil
}

// lzma2DictSize decodes the LZMA2 dictionary size property (p <= 40).
func lzma2DictSize(p byte) uint32 {
	if p == 40 {
		return 0xFFFFFFFF
	}
	return (2 | uint32(p&1)) << (p/2 + 11)
}
