package cardfs

import (
	"encoding/binary"
	"fmt"
	"math/bits"
	"unicode"
	"unicode/utf16"
)

// exfat lays out the partition as exFAT, the SD File System
// Specification's way for SDXC: the partition on an erase unit, the FAT
// half an erase unit into it, the cluster heap on the next erase unit
// after the FAT. The heap starts with the allocation bitmap, the up-case
// table and the root directory, in that order, each chained in the FAT.
func (l *Layout) exfat(o Options) error {
	label, err := checkLabel(ExFAT, o.Label)
	if err != nil {
		return err
	}
	l.Label = label
	part := l.PartitionSize / sector
	bu := l.EraseUnit / sector
	spc := l.ClusterSize / sector
	fatOffset := max(bu/2, 24) // after the boot region and its copy
	fatLength := ((part/spc+2)*4 + sector - 1) / sector
	heap := (fatOffset + fatLength + bu - 1) / bu * bu
	clusters := (part - heap) / spc
	if clusters < 16 || clusters > 0xFFFFFFF5-2 {
		return fmt.Errorf("a partition of %d sectors: %w (%d clusters)", part, ErrTooSmall, clusters)
	}
	l.Clusters = clusters
	l.FATStart = l.PartitionStart + fatOffset*sector
	l.DataStart = l.PartitionStart + heap*sector

	bitmapBytes := (clusters + 7) / 8
	upcase := upcaseTable()
	clustersOf := func(n int64) int64 { return (n + l.ClusterSize - 1) / l.ClusterSize }
	bitmapFirst := int64(2)
	upcaseFirst := bitmapFirst + clustersOf(bitmapBytes)
	rootFirst := upcaseFirst + clustersOf(int64(len(upcase)))
	used := rootFirst + 1 - 2

	// The FAT: media and end entries, then each structure's chain.
	fat := make([]byte, (rootFirst+1)*4)
	binary.LittleEndian.PutUint32(fat[0:], 0xFFFFFFF8)
	binary.LittleEndian.PutUint32(fat[4:], 0xFFFFFFFF)
	chain := func(first, last int64) {
		for c := first; c < last; c++ {
			binary.LittleEndian.PutUint32(fat[c*4:], uint32(c+1))
		}
		binary.LittleEndian.PutUint32(fat[last*4:], 0xFFFFFFFF)
	}
	chain(bitmapFirst, upcaseFirst-1)
	chain(upcaseFirst, rootFirst-1)
	chain(rootFirst, rootFirst)
	l.put(l.FATStart, fat)

	// The heap: the bitmap with the used clusters set, the table, the
	// root directory.
	bitmap := make([]byte, bitmapBytes)
	for c := int64(0); c < used; c++ {
		bitmap[c/8] |= 1 << (c % 8)
	}
	cluster := func(c int64) int64 { return l.DataStart + (c-2)*l.ClusterSize }
	l.put(cluster(bitmapFirst), bitmap)
	l.put(cluster(upcaseFirst), upcase)
	root := make([]byte, l.ClusterSize)
	// The volume label's entry, of no characters without a label, as
	// mkfs.exfat writes it.
	e := root
	u := utf16.Encode([]rune(label))
	e[0], e[1] = 0x83, byte(len(u))
	for i, c := range u {
		binary.LittleEndian.PutUint16(e[2+2*i:], c)
	}
	e = e[32:]
	e[0] = 0x81 // the allocation bitmap
	binary.LittleEndian.PutUint32(e[20:], uint32(bitmapFirst))
	binary.LittleEndian.PutUint64(e[24:], uint64(bitmapBytes))
	e = e[32:]
	e[0] = 0x82 // the up-case table
	binary.LittleEndian.PutUint32(e[4:], exfatChecksum(0, upcase, nil))
	binary.LittleEndian.PutUint32(e[20:], uint32(upcaseFirst))
	binary.LittleEndian.PutUint64(e[24:], uint64(len(upcase)))
	l.put(cluster(rootFirst), root)

	// The boot region and its copy: the boot sector, eight extended boot
	// sectors, the OEM parameters, a reserved sector, the checksum.
	region := make([]byte, 12*sector)
	b := region[:sector]
	copy(b, []byte{0xEB, 0x76, 0x90})
	copy(b[3:11], "EXFAT   ")
	binary.LittleEndian.PutUint64(b[64:], uint64(l.PartitionStart/sector))
	binary.LittleEndian.PutUint64(b[72:], uint64(part))
	binary.LittleEndian.PutUint32(b[80:], uint32(fatOffset))
	binary.LittleEndian.PutUint32(b[84:], uint32(fatLength))
	binary.LittleEndian.PutUint32(b[88:], uint32(heap))
	binary.LittleEndian.PutUint32(b[92:], uint32(clusters))
	binary.LittleEndian.PutUint32(b[96:], uint32(rootFirst))
	binary.LittleEndian.PutUint32(b[100:], o.Serial)
	binary.LittleEndian.PutUint16(b[104:], 0x0100) // revision 1.00
	b[108] = byte(bits.TrailingZeros(sector))
	b[109] = byte(bits.TrailingZeros64(uint64(spc)))
	b[110] = 1    // FATs
	b[111] = 0x80 // drive
	b[112] = 0xFF // percent in use: not known
	for i := 120; i < 510; i++ {
		b[i] = 0xF4 // halt, as the boot code of a volume that boots nothing
	}
	b[510], b[511] = 0x55, 0xaa
	for s := 1; s <= 8; s++ {
		binary.LittleEndian.PutUint32(region[s*sector+508:], 0xAA550000)
	}
	sum := exfatChecksum(0, region[:11*sector], func(i int) bool { return i == 106 || i == 107 || i == 112 })
	for i := 11 * sector; i < 12*sector; i += 4 {
		binary.LittleEndian.PutUint32(region[i:], sum)
	}
	l.put(l.PartitionStart, region)
	l.put(l.PartitionStart+12*sector, region)
	return nil
}

// exfatChecksum is exFAT's rotating checksum of b, from sum, skipping the
// bytes skip says (the boot sector's flags and percentage in use).
func exfatChecksum(sum uint32, b []byte, skip func(int) bool) uint32 {
	for i, c := range b {
		if skip != nil && skip(i) {
			continue
		}
		sum = bits.RotateLeft32(sum, -1) + uint32(c)
	}
	return sum
}

// upcaseTable is the up-case table of every UTF-16 code unit, from
// Unicode's simple upper-case mappings, in the compressed form the exFAT
// specification allows: a run of characters that map to themselves is
// 0xFFFF and its length.
func upcaseTable() []byte {
	var t []uint16
	for c := 0; c <= 0xFFFF; {
		up := unicode.ToUpper(rune(c))
		if up > 0xFFFF || c >= 0xD800 && c <= 0xDFFF {
			up = rune(c)
		}
		if up != rune(c) {
			t = append(t, uint16(up))
			c++
			continue
		}
		run := 1
		for c+run <= 0xFFFE && unicode.ToUpper(rune(c+run)) == rune(c+run) {
			run++
		}
		if run < 3 {
			for i := range run {
				t = append(t, uint16(c+i))
			}
		} else {
			t = append(t, 0xFFFF, uint16(run))
		}
		c += run
		if c == 0xFFFF {
			// U+FFFF, the last, maps to itself. Readers take 0xFFFF at
			// index 0xFFFF as that (they test for the identity before
			// the run marker), and Linux reads a table until its index
			// passes 0xFFFF, padding included: one that stops short
			// fails its checksum there.
			t = append(t, 0xFFFF)
			break
		}
	}
	b := make([]byte, 2*len(t))
	for i, v := range t {
		binary.LittleEndian.PutUint16(b[2*i:], v)
	}
	return b
}
