// Package parttable finds where the partitions of a disk end, from its MBR
// or GPT, so a backup can stop after the last one.
package parttable

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
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

// ErrDamaged is a partition table that names places outside the disk.
var ErrDamaged = errors.New("damaged partition table")

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
		return Table{}, fmt.Errorf("%w: the MBR's partitions end at byte %d, past the disk's %d", ErrDamaged, end, capacity)
	}
	return Table{Kind: MBR, End: end}, nil
}

// gptEnd reads the primary GPT header at LBA 1 and its partition entries.
func gptEnd(read ReadAt, bs, capacity int64) (Table, error) {
	hdr := make([]byte, bs)
	if err := read(bs, hdr); err != nil {
		return Table{}, err
	}
	if !bytes.Equal(hdr[:8], []byte("EFI PART")) {
		return Table{}, fmt.Errorf("%w: a protective MBR but no GPT header at LBA 1", ErrDamaged)
	}
	entriesLBA := int64(binary.LittleEndian.Uint64(hdr[72:]))
	count := int64(binary.LittleEndian.Uint32(hdr[80:]))
	size := int64(binary.LittleEndian.Uint32(hdr[84:]))
	if size < 128 || count > 1<<16 || entriesLBA*bs+count*size > capacity {
		return Table{}, fmt.Errorf("%w: GPT header lists %d entries of %d bytes at LBA %d", ErrDamaged, count, size, entriesLBA)
	}
	entries := make([]byte, (count*size+bs-1)/bs*bs)
	if err := read(entriesLBA*bs, entries); err != nil {
		return Table{}, err
	}
	var end int64
	for i := range count {
		e := entries[i*size : (i+1)*size]
		if bytes.Equal(e[:16], make([]byte, 16)) {
			continue // unused entry
		}
		last := int64(binary.LittleEndian.Uint64(e[40:]))
		end = max(end, (last+1)*bs)
	}
	if end > capacity {
		return Table{}, fmt.Errorf("%w: the GPT's partitions end at byte %d, past the disk's %d", ErrDamaged, end, capacity)
	}
	if end == 0 { // a GPT without partitions: keep the table itself
		end = entriesLBA*bs + int64(len(entries))
	}
	return Table{Kind: GPT, End: end}, nil
}
