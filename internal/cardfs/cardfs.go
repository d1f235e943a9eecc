// Package cardfs lays a card out as the SD Association's SD Formatter does
// for its capacity: an MBR with one partition, FAT32 up to 32 GiB and exFAT
// above, the partition, the FATs' end and the first cluster on the card's
// erase-unit boundary, clusters of the SD File System Specification's
// size. The layout is bytes to write from the card's first block on (a
// raw image, ReadAt), its file systems empty but for a volume label; it
// does no I/O.
//
// Why a writer of its own: go-diskfs (the project's FAT library) creates
// FAT32 with 32 reserved sectors, mkfs.fat's cluster sizes and no hidden
// sectors, none of which a caller chooses, so its data region cannot be put
// on an erase-unit boundary; and no exFAT writer in Go is kept well enough
// to use (the module proxy serves none). Both layouts are small: a boot
// region, the FATs' first entries, an allocation bitmap, an up-case table
// and a root directory. The tests check them with fsck.fat and fsck.exfat,
// and go-diskfs reads the FAT32 back.
package cardfs

import (
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"slices"
	"strings"
	"time"

	"github.com/usbflash/usbflash/internal/lib/units"
)

// The file systems a card is given.
const (
	FAT32 = "FAT32"
	ExFAT = "exFAT"
)

// sector is the only logical block size laid out: every SD card's.
const sector = 512

// FAT32Max is the largest card given FAT32 (SDSC and SDHC); larger ones
// (SDXC, SDUC) get exFAT.
const FAT32Max = 32 << 30

// Options are what a layout is made for.
type Options struct {
	// Capacity is the card's size in bytes; BlockSize its logical block
	// size (512 only).
	Capacity  int64
	BlockSize int
	// EraseUnit is the boundary in bytes the partition and the first
	// cluster start on: a power of two, 0 for the SD specification's
	// default for the capacity (DefaultEraseUnit).
	EraseUnit int64
	// FS is the file system, "" for the specification's choice for the
	// capacity (DefaultParams): FAT32 or ExFAT, with the cluster size the
	// specification gives that file system (exFAT on a card of 32 GiB or
	// less, for files over FAT32's 4 GiB; FAT32 on a larger one, for a
	// device that reads no exFAT).
	FS string
	// Label is the volume label, "" for none: up to 11 characters, for
	// FAT32 of the characters FAT allows (upper-cased).
	Label string
	// Serial is the volume serial number; Now the time stamped in the
	// layout. The same options make the same bytes.
	Serial uint32
	Now    time.Time
}

// Params are what the SD File System Specification gives a card of a
// capacity: its file system, cluster size and boundary unit.
type Params struct {
	FS          string
	ClusterSize int64
	EraseUnit   int64
}

// DefaultParams is the SD File System Specification's (Part 2, v3.00)
// choice for a card of capacity bytes: FAT32 with 32 KiB clusters and a
// 4 MiB boundary unit up to 32 GiB (SDHC; SDSC cards of 2 GB and less get
// FAT32 too, with clusters halved until FAT32's minimum count of clusters
// is met: 16 KiB on 2 GiB); exFAT with 128 KiB clusters above, on a 16 MiB
// boundary up to 128 GiB, 32 MiB up to 512 GiB, 64 MiB beyond.
func DefaultParams(capacity int64) Params {
	switch {
	case capacity <= FAT32Max:
		return Params{FAT32, 32 << 10, 4 << 20}
	case capacity <= 128<<30:
		return Params{ExFAT, 128 << 10, 16 << 20}
	case capacity <= 512<<30:
		return Params{ExFAT, 128 << 10, 32 << 20}
	}
	return Params{ExFAT, 128 << 10, 64 << 20}
}

// Layout is a card laid out: where things are, and the bytes.
type Layout struct {
	FS             string
	Label          string
	PartitionStart int64 // bytes from the card's start
	PartitionSize  int64
	ClusterSize    int64
	Clusters       int64
	EraseUnit      int64
	FATStart       int64 // the first FAT, bytes from the card's start
	DataStart      int64 // the first cluster, bytes from the card's start
	size           int64
	extents        []extent // sorted by offset, not overlapping
}

// extent is bytes of the layout other than zeros.
type extent struct {
	off  int64
	data []byte
}

// ErrTooSmall: the card cannot hold the file system.
var ErrTooSmall = errors.New("too small for the file system")

// New lays a card out.
func New(o Options) (*Layout, error) {
	if o.BlockSize != sector {
		return nil, fmt.Errorf("a card of %d-byte blocks: only 512-byte blocks are laid out", o.BlockSize)
	}
	p := DefaultParams(o.Capacity)
	switch o.FS {
	case "", p.FS:
	case FAT32:
		p.FS, p.ClusterSize = FAT32, 32<<10
	case ExFAT:
		p.FS, p.ClusterSize = ExFAT, 128<<10
	default:
		return nil, fmt.Errorf("file system %q: want %s or %s", o.FS, FAT32, ExFAT)
	}
	if o.EraseUnit != 0 {
		if o.EraseUnit < sector || o.EraseUnit&(o.EraseUnit-1) != 0 || o.EraseUnit > 1<<30 {
			return nil, fmt.Errorf("an erase unit of %d bytes: not a power of two from 512 bytes to 1 GiB", o.EraseUnit)
		}
		p.EraseUnit = o.EraseUnit
	}
	if o.Capacity < 4*p.EraseUnit {
		return nil, fmt.Errorf("%s card: %w (at least %s with a %s erase unit)", units.FormatSize(o.Capacity), ErrTooSmall,
			units.FormatSize(4*p.EraseUnit), units.FormatSize(p.EraseUnit))
	}
	l := &Layout{FS: p.FS, ClusterSize: p.ClusterSize, EraseUnit: p.EraseUnit, PartitionStart: p.EraseUnit}
	l.PartitionSize = (o.Capacity - l.PartitionStart) / sector * sector
	var err error
	if p.FS == FAT32 {
		err = l.fat32(o)
	} else {
		err = l.exfat(o)
	}
	if err != nil {
		return nil, err
	}
	l.mbr()
	slices.SortFunc(l.extents, func(a, b extent) int { return int(a.off - b.off) })
	return l, nil
}

// Size is how many bytes of the card the layout writes, from its first:
// past them the card's old bytes stay, in clusters the file system marks
// free.
func (l *Layout) Size() int64 { return l.size }

// ReadAt reads the layout's bytes: its structures, zeros between them.
func (l *Layout) ReadAt(p []byte, off int64) (int, error) {
	if off >= l.size {
		return 0, io.EOF
	}
	var err error
	if rest := l.size - off; int64(len(p)) > rest {
		p, err = p[:rest], io.EOF
	}
	clear(p)
	end := off + int64(len(p))
	for _, e := range l.extents {
		eEnd := e.off + int64(len(e.data))
		if eEnd <= off || e.off >= end {
			continue
		}
		from, to := max(e.off, off), min(eEnd, end)
		copy(p[from-off:to-off], e.data[from-e.off:to-e.off])
	}
	return len(p), err
}

func (l *Layout) put(off int64, data []byte) {
	l.extents = append(l.extents, extent{off, data})
	l.size = max(l.size, off+int64(len(data)))
}

// mbr writes the partition table: one primary partition, FAT32 (LBA,
// 0x0C) or exFAT (0x07), as SD Formatter writes it.
func (l *Layout) mbr() {
	b := make([]byte, sector)
	e := b[446:462]
	e[4] = 0x07
	if l.FS == FAT32 {
		e[4] = 0x0C
	}
	start, count := uint32(l.PartitionStart/sector), uint32(min(l.PartitionSize/sector, 0xFFFFFFFF))
	copy(e[1:4], chs(int64(start)))
	copy(e[5:8], chs(int64(start)+int64(count)-1))
	binary.LittleEndian.PutUint32(e[8:], start)
	binary.LittleEndian.PutUint32(e[12:], count)
	b[510], b[511] = 0x55, 0xaa
	l.put(0, b)
}

// chs is a sector's cylinder-head-sector address in a partition entry, in
// the 255-head, 63-sector geometry every system assumes, or the maximum
// (1023, 254, 63) past what it reaches.
func chs(lba int64) []byte {
	const heads, spt = 255, 63
	c, h, s := lba/(heads*spt), lba/spt%heads, lba%spt+1
	if c > 1023 {
		c, h, s = 1023, 254, 63
	}
	return []byte{byte(h), byte(s) | byte(c>>8)<<6, byte(c)}
}

// checkLabel validates a label for fs: what it would be written as.
func checkLabel(fs, label string) (string, error) {
	if label == "" {
		return "", nil
	}
	if n := len([]rune(label)); n > 11 {
		return "", fmt.Errorf("volume label %q: %d characters, more than the 11 %s allows", label, n, fs)
	}
	if fs == ExFAT {
		for _, r := range label {
			if r < 0x20 || strings.ContainsRune(`"*/:<>?\|`, r) || r > 0xFFFF {
				return "", fmt.Errorf("volume label %q: %q is not allowed in an exFAT label", label, r)
			}
		}
		return label, nil
	}
	up := strings.ToUpper(label)
	if len(up) > 11 {
		return "", fmt.Errorf("volume label %q: %d bytes, more than the 11 FAT32 allows", label, len(up))
	}
	for _, r := range up {
		if r < 0x20 || r > 0x7E || strings.ContainsRune(`"*+,./:;<=>?[\]|`, r) {
			return "", fmt.Errorf("volume label %q: %q is not allowed in a FAT label (ASCII letters, digits, spaces and !#$%%&'()-@^_`{}~)", label, r)
		}
	}
	return up, nil
}

// CheckLabel says whether label can name a card's volume of either file
// system, before any card is open.
func CheckLabel(label string) error {
	if _, err := checkLabel(FAT32, label); err != nil {
		return err
	}
	_, err := checkLabel(ExFAT, label)
	return err
}

// fatTime is a FAT directory entry's date and time.
func fatTime(t time.Time) (date, clock uint16) {
	if t.Year() < 1980 {
		return 0x21, 0 // 1980-01-01
	}
	date = uint16(t.Year()-1980)<<9 | uint16(t.Month())<<5 | uint16(t.Day())
	clock = uint16(t.Hour())<<11 | uint16(t.Minute())<<5 | uint16(t.Second()/2)
	return date, clock
}

// ParseFS is the file system a name (any case) stands for: FAT32, ExFAT,
// or "" for "auto" and "".
func ParseFS(name string) (string, error) {
	switch strings.ToLower(name) {
	case "", "auto":
		return "", nil
	case "fat32", "vfat":
		return FAT32, nil
	case "exfat":
		return ExFAT, nil
	}
	return "", fmt.Errorf("file system %q: want fat32, exfat or auto", name)
}
