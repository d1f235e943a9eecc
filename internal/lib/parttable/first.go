package parttable

import (
	"bytes"
	"encoding/binary"
	"fmt"
)

// Partition is where a partition lies on the disk, in bytes.
type Partition struct {
	Kind        string // MBR or GPT: the table it was found in
	Start, Size int64
}

// ErrNoPartition is a disk whose table lists no partition.
var ErrNoPartition = fmt.Errorf("no partition")

// First reads the disk's first partition: the first used entry of an MBR
// (an extended one skipped), or the first used entry of a GPT, as a
// Raspberry Pi's firmware and most boot loaders find their boot
// partition. The table is checked as End checks it.
func First(read ReadAt, blockSize int, capacity int64) (Partition, error) {
	t, err := End(read, blockSize, capacity)
	if err != nil {
		return Partition{}, err
	}
	bs := int64(blockSize)
	sector := make([]byte, max(bs, 512))
	switch t.Kind {
	case MBR:
		if err := read(0, sector[:bs]); err != nil {
			return Partition{}, err
		}
		for i := range 4 {
			e := sector[446+16*i : 446+16*(i+1)]
			start := int64(binary.LittleEndian.Uint32(e[8:]))
			count := int64(binary.LittleEndian.Uint32(e[12:]))
			switch e[4] {
			case 0, 0x05, 0x0F, 0x85:
				continue
			}
			if count > 0 {
				return Partition{Kind: MBR, Start: start * bs, Size: count * bs}, nil
			}
		}
	case GPT:
		hdr := make([]byte, bs)
		if err := read(bs, hdr); err != nil {
			return Partition{}, err
		}
		entriesLBA := int64(binary.LittleEndian.Uint64(hdr[72:]))
		count := int64(binary.LittleEndian.Uint32(hdr[80:]))
		size := int64(binary.LittleEndian.Uint32(hdr[84:]))
		entries := make([]byte, (count*size+bs-1)/bs*bs)
		if err := read(entriesLBA*bs, entries); err != nil {
			return Partition{}, err
		}
		for i := range count {
			e := entries[i*size : (i+1)*size]
			if bytes.Equal(e[:16], make([]byte, 16)) {
				continue
			}
			first, last := int64(binary.LittleEndian.Uint64(e[32:])), int64(binary.LittleEndian.Uint64(e[40:]))
			if last < first {
				return Partition{}, fmt.Errorf("%w: GPT entry %d ends at LBA %d before its start at %d", ErrDamaged, i+1, last, first)
			}
			return Partition{Kind: GPT, Start: first * bs, Size: (last - first + 1) * bs}, nil
		}
	}
	return Partition{}, ErrNoPartition
}
