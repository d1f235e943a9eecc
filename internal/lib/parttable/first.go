package parttable

import (
	"bytes"
	"encoding/binary"
	"fmt"
)

// Partition is where a partition lies on the disk, in bytes, and what its
// table says it is.
type Partition struct {
	Kind        string // MBR or GPT: the table it was found in
	Start, Size int64
	// Number is its entry's number in the table, from 1 (the N of
	// /dev/sdXN).
	Number int
	// MBRType is an MBR entry's type byte; TypeGUID a GPT entry's type,
	// as its 16 bytes stand in the entry.
	MBRType  byte
	TypeGUID [16]byte
}

// espGUID is the EFI System Partition's type, C12A7328-F81F-11D2-BA4B-
// 00A0C93EC93B, as its bytes stand in a GPT entry (the first three fields
// little-endian).
var espGUID = [16]byte{0x28, 0x73, 0x2A, 0xC1, 0x1F, 0xF8, 0xD2, 0x11, 0xBA, 0x4B, 0x00, 0xA0, 0xC9, 0x3E, 0xC9, 0x3B}

// basicDataGUID is Microsoft basic data, EBD0A0A2-B9E5-4433-87C0-
// 68B6B72699C7: the type of a GPT's FAT data partitions (a Raspberry Pi
// image's boot partition in a GPT).
var basicDataGUID = [16]byte{0xA2, 0xA0, 0xD0, 0xEB, 0xE5, 0xB9, 0x33, 0x44, 0x87, 0xC0, 0x68, 0xB6, 0xB7, 0x26, 0x99, 0xC7}

// BasicDataGUID is Microsoft basic data's type as a GPT entry holds it.
func BasicDataGUID() [16]byte { return basicDataGUID }

// ESP says whether the partition is an EFI System Partition (MBR type
// 0xEF, or its GPT type), which UEFI firmware boots from and no operating
// system reads its settings from.
func (p Partition) ESP() bool {
	return (p.Kind == MBR && p.MBRType == 0xEF) || (p.Kind == GPT && p.TypeGUID == espGUID)
}

// MayBeFAT says whether the partition's type is one a FAT file system is
// given: MBR's FAT12, FAT16, FAT32 and ESP types, GPT's ESP and basic data.
func (p Partition) MayBeFAT() bool {
	if p.Kind == GPT {
		return p.TypeGUID == espGUID || p.TypeGUID == basicDataGUID
	}
	switch p.MBRType {
	case 0x01, 0x04, 0x06, 0x0B, 0x0C, 0x0E, 0xEF:
		return true
	}
	return false
}

// Type is the partition's type as fdisk names it: "MBR type 0x0c", "GPT
// type C12A7328-F81F-11D2-BA4B-00A0C93EC93B".
func (p Partition) Type() string {
	if p.Kind == MBR {
		return fmt.Sprintf("MBR type 0x%02x", p.MBRType)
	}
	g := p.TypeGUID
	return fmt.Sprintf("GPT type %08X-%04X-%04X-%X-%X", binary.LittleEndian.Uint32(g[0:]), binary.LittleEndian.Uint16(g[4:]),
		binary.LittleEndian.Uint16(g[6:]), g[8:10], g[10:16])
}

// ErrNoPartition is a disk whose table lists no partition.
var ErrNoPartition = fmt.Errorf("no partition")

// First reads the disk's first partition: the first used entry of an MBR
// (an extended one skipped), or the first used entry of a GPT, as a
// Raspberry Pi's firmware and most boot loaders find their boot
// partition. The table is checked as End checks it.
func First(read ReadAt, blockSize int, capacity int64) (Partition, error) {
	parts, err := List(read, blockSize, capacity)
	if err != nil {
		return Partition{}, err
	}
	if len(parts) == 0 {
		return Partition{}, ErrNoPartition
	}
	return parts[0], nil
}

// List reads the disk's partitions in their table's order: an MBR's
// primary entries (extended ones skipped), or a GPT's used entries. The
// table is checked as End checks it; no table is no partition.
func List(read ReadAt, blockSize int, capacity int64) ([]Partition, error) {
	t, err := End(read, blockSize, capacity)
	if err != nil {
		return nil, err
	}
	bs := int64(blockSize)
	sector := make([]byte, max(bs, 512))
	var parts []Partition
	switch t.Kind {
	case MBR:
		if err := read(0, sector[:bs]); err != nil {
			return nil, err
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
				parts = append(parts, Partition{Kind: MBR, Start: start * bs, Size: count * bs, Number: i + 1, MBRType: e[4]})
			}
		}
	case GPT:
		hdr := make([]byte, bs)
		if err := read(bs, hdr); err != nil {
			return nil, err
		}
		entriesLBA := int64(binary.LittleEndian.Uint64(hdr[72:]))
		count := int64(binary.LittleEndian.Uint32(hdr[80:]))
		size := int64(binary.LittleEndian.Uint32(hdr[84:]))
		entries := make([]byte, (count*size+bs-1)/bs*bs)
		if err := read(entriesLBA*bs, entries); err != nil {
			return nil, err
		}
		for i := range count {
			e := entries[i*size : (i+1)*size]
			if bytes.Equal(e[:16], make([]byte, 16)) {
				continue
			}
			first, last := int64(binary.LittleEndian.Uint64(e[32:])), int64(binary.LittleEndian.Uint64(e[40:]))
			if last < first {
				return nil, fmt.Errorf("%w: GPT entry %d ends at LBA %d before its start at %d", ErrDamaged, i+1, last, first)
			}
			p := Partition{Kind: GPT, Start: first * bs, Size: (last - first + 1) * bs, Number: int(i + 1)}
			copy(p.TypeGUID[:], e[:16])
			parts = append(parts, p)
		}
	}
	return parts, nil
}
