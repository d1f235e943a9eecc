package imagesrc

import (
	"bytes"
	"encoding/binary"
	"hash/crc32"
	"io"
	"math"
)

// xzMaxIndex bounds the index we read: a 100 GiB image in 1 MiB blocks has an
// index of a few hundred KiB; a corrupt backward size must not allocate GiBs.
const xzMaxIndex = 16 << 20

var xzHeaderMagic = []byte{0xfd, '7', 'z', 'X', 'Z', 0x00}

// xzIndexedSize sums the uncompressed sizes recorded in the index of every
// stream of a seekable xz input, walking backwards from the end over stream
// footers, indexes and stream padding, as xz --list does.
func xzIndexedSize(ra io.ReaderAt, size int64) (int64, bool) {
	var total int64
	pos := size
	for pos > 0 {
		var err error
		if pos, err = xzSkipPadding(ra, pos); err != nil || pos == 0 {
			return 0, false
		}
		start, n, ok := xzStreamBack(ra, pos)
		if !ok || n > math.MaxInt64-total {
			return 0, false
		}
		total += n
		pos = start
	}
	return total, true
}

// xzSkipPadding moves pos back over stream padding: zero bytes in multiples
// of four after a stream.
func xzSkipPadding(ra io.ReaderAt, pos int64) (int64, error) {
	end := pos
	buf := make([]byte, 4096)
	for pos > 0 {
		n := int64(len(buf))
		if n > pos {
			n = pos
		}
		if _, err := ra.ReadAt(buf[:n], pos-n); err != nil {
			return 0, err
		}
		i := len(bytes.TrimRight(buf[:n], "\x00"))
		pos = pos - n + int64(i)
		if i > 0 {
			break
		}
	}
	if (end-pos)%4 != 0 {
		return 0, io.ErrUnexpectedEOF
	}
	return pos, nil
}

// xzStreamBack reads the stream that ends at end: it checks the footer,
// parses the index, and returns where the stream starts and the sum of its
// blocks' uncompressed sizes.
func xzStreamBack(ra io.ReaderAt, end int64) (start, uncompressed int64, ok bool) {
	const hdrLen, ftrLen = 12, 12
	if end < hdrLen+ftrLen+8 {
		return 0, 0, false
	}
	var ftr [ftrLen]byte
	if _, err := ra.ReadAt(ftr[:], end-ftrLen); err != nil || string(ftr[10:]) != "YZ" ||
		crc32.ChecksumIEEE(ftr[4:10]) != binary.LittleEndian.Uint32(ftr[:4]) {
		return 0, 0, false
	}
	indexLen := (int64(binary.LittleEndian.Uint32(ftr[4:8])) + 1) * 4
	if indexLen > xzMaxIndex || indexLen > end-hdrLen-ftrLen {
		return 0, 0, false
	}
	index := make([]byte, indexLen)
	if _, err := ra.ReadAt(index, end-ftrLen-indexLen); err != nil {
		return 0, 0, false
	}
	blocksLen, uncompressed, ok := parseXzIndex(index)
	if !ok {
		return 0, 0, false
	}
	start = end - ftrLen - indexLen - blocksLen - hdrLen
	if start < 0 {
		return 0, 0, false
	}
	var hdr [hdrLen]byte
	if _, err := ra.ReadAt(hdr[:], start); err != nil || !bytes.HasPrefix(hdr[:], xzHeaderMagic) ||
		!bytes.Equal(hdr[6:8], ftr[8:10]) { // stream flags must agree
		return 0, 0, false
	}
	return start, uncompressed, true
}

// parseXzIndex decodes an xz index: indicator 0x00, record count, (unpadded
// size, uncompressed size) per block, zero padding to 4 bytes, CRC32.
func parseXzIndex(index []byte) (blocksLen, uncompressed int64, ok bool) {
	n := len(index)
	if n < 8 || index[0] != 0 ||
		crc32.ChecksumIEEE(index[:n-4]) != binary.LittleEndian.Uint32(index[n-4:]) {
		return 0, 0, false
	}
	p := index[1 : n-4]
	count, p, ok := xzVarint(p)
	if !ok || count > uint64(len(p)/2) {
		return 0, 0, false
	}
	for range count {
		var unpadded, size uint64
		if unpadded, p, ok = xzVarint(p); !ok {
			return 0, 0, false
		}
		if size, p, ok = xzVarint(p); !ok {
			return 0, 0, false
		}
		padded := (unpadded + 3) &^ 3
		if padded > math.MaxInt64-uint64(blocksLen) || size > math.MaxInt64-uint64(uncompressed) {
			return 0, 0, false
		}
		blocksLen += int64(padded)
		uncompressed += int64(size)
	}
	if len(p) > 3 || len(bytes.TrimLeft(p, "\x00")) != 0 {
		return 0, 0, false
	}
	return blocksLen, uncompressed, true
}

// xzVarint decodes xz's multibyte integer: 7 bits per byte, low first, at
// most 9 bytes.
func xzVarint(p []byte) (uint64, []byte, bool) {
	var v uint64
	for i := 0; i < len(p) && i < 9; i++ {
		v |= uint64(p[i]&0x7f) << (7 * i)
		if p[i]&0x80 == 0 {
			if i > 0 && p[i] == 0 { // non-minimal encoding is invalid
				return 0, nil, false
			}
			return v, p[i+1:], true
		}
	}
	return 0, nil, false
}
