// Package parttable finds where the partitions of a disk end, from its MBR
// or GPT, so a backup can stop after the last one.
package parttable

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"hash/crc32"

	"github.com/usbflash/usbflash/internal/lib/units"
)

// Kinds of partition table.
const (
	MBR  = "MBR"
	GPT  = "GPT"
	None = ""
)

// ReadAt reads len(p) bytes at byte offset off of the disk.
type ReadAt func(off int64, p []byte) error

// Table is what End found.
type Table struct {
	Kind string // MBR, GPT, or None
	// End is the byte just past the last partition (for GPT, past the
	// last partition, not the backup header at the end of the disk); 0
	// with None.
	End int64
}

// ErrDamaged is a partition table that names places outside the disk, or
// a GPT whose header or entries fail their checks.
var ErrDamaged = errors.New("damaged partition table")

// maxEntriesBytes bounds the GPT partition entry array read: the usual
// one is 16 KiB (128 entries of 128 bytes), and a damaged header must not
// make End allocate what it claims.
const maxEntriesBytes = 1 << 20

// End reads the partition table of a disk of capacity bytes with logical
// blocks of blockSize bytes.
func End(read ReadAt, blockSize int, capacity int64) (Table, error) {
	bs := int64(blockSize)
	sector := make([]byte, max(bs, 512))
	if err := read(0, sector[:bs]); err != nil {
		return Table{}, err
	}
	if sector[510] != 0x55 || sector[511] != 0xAA {
		return Table{Kind: None}, nil
	}
	var end int64
	protective := false
	for i := range 4 {
		e := sector[446+16*i : 446+16*(i+1)]
		typ := e[4]
		start := int64(binary.LittleEndian.Uint32(e[8:]))
		count := int64(binary.LittleEndian.Uint32(e[12:]))
		if typ == 0 || count == 0 {
			continue
		}
		if typ == 0xEE {
			protective = true
			continue
		}
		// An extended partition (05, 0F, 85) holds the logical ones, so
		// its end covers theirs.
		end = max(end, (start+count)*bs)
	}
	if protective {
		return gptEnd(read, bs, capacity)
	}
	if end == 0 {
		return Table{Kind: None}, nil
	}
	if end > capacity {
		return Table{}, fmt.Errorf("%w: the MBR's partitions end at %s, past the disk's %s", ErrDamaged, units.FormatBytes(end), units.FormatBytes(capacity))
	}
	return Table{Kind: MBR, End: end}, nil
}

// gptEnd reads the primary GPT header at LBA 1 and its partition entries,
// each checked against its CRC-32 as firmware checks them, so that bytes
// that only start like a header are not taken for one.
func gptEnd(read ReadAt, bs, capacity int64) (Table, error) {
	hdr := make([]byte, bs)
	if err := read(bs, hdr); err != nil {
		return Table{}, err
	}
	if !bytes.Equal(hdr[:8], []byte("EFI PART")) {
		return Table{}, fmt.Errorf("%w: a protective MBR but no GPT header at LBA 1", ErrDamaged)
	}
	hdrSize := int64(binary.LittleEndian.Uint32(hdr[12:]))
	if hdrSize < 92 || hdrSize > bs {
		return Table{}, fmt.Errorf("%w: the GPT header at LBA 1 says it is %d bytes long", ErrDamaged, hdrSize)
	}
	check := append([]byte(nil), hdr[:hdrSize]...)
	clear(check[16:20]) // the header's CRC is computed with its own field zeroed
	if crc32.ChecksumIEEE(check) != binary.LittleEndian.Uint32(hdr[16:]) {
		return Table{}, fmt.Errorf("%w: the GPT header at LBA 1 fails its CRC-32", ErrDamaged)
	}
	entriesLBA := binary.LittleEndian.Uint64(hdr[72:])
	count := int64(binary.LittleEndian.Uint32(hdr[80:]))
	size := int64(binary.LittleEndian.Uint32(hdr[84:]))
	blocks := uint64(capacity / bs)
	if size < 128 || size%8 != 0 || count*size > maxEntriesBytes || entriesLBA < 2 || entriesLBA >= blocks ||
		int64(entriesLBA)*bs+count*size > capacity {
		return Table{}, fmt.Errorf("%w: GPT header lists %d entries of %d bytes at LBA %d", ErrDamaged, count, size, entriesLBA)
	}
	entries := make([]byte, (count*size+bs-1)/bs*bs)
	if err := read(int64(entriesLBA)*bs, entries); err != nil {
		return Table{}, err
	}
	if crc32.ChecksumIEEE(entries[:count*size]) != binary.LittleEndian.Uint32(hdr[88:]) {
		return Table{}, fmt.Errorf("%w: the GPT partition entries at LBA %d fail their CRC-32", ErrDamaged, entriesLBA)
	}
	var end int64
	for i := range count {
		e := entries[i*size : (i+1)*size]
		if bytes.Equal(e[:16], make([]byte, 16)) {
			continue // unused entry
		}
		last := binary.LittleEndian.Uint64(e[40:])
		if last >= blocks {
			return Table{}, fmt.Errorf("%w: the GPT's partitions end past the disk's %d blocks", ErrDamaged, blocks)
		}
		end = max(end, int64(last+1)*bs)
	}
	if end == 0 { // a GPT without partitions: keep the table itself
		end = int64(entriesLBA)*bs + int64(len(entries))
	}
	return Table{Kind: GPT, End: end}, nil
}
