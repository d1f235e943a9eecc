package cardfs

import (
	"encoding/binary"
	"fmt"

	"github.com/usbflash/usbflash/internal/lib/units"
)

// fat32MinClusters is the fewest clusters a FAT32 volume may have: with
// fewer, every implementation reads it as FAT16.
const fat32MinClusters = 65525

// fat32 lays out the partition as FAT32, the SD File System
// Specification's way for SDHC: the partition starts on an erase unit,
// the reserved sectors are as many as end the second FAT on one, so the
// first cluster (the root directory) starts on one too and every cluster
// after it stays within one.
func (l *Layout) fat32(o Options) error {
	label, err := checkLabel(FAT32, o.Label)
	if err != nil {
		return err
	}
	l.Label = label
	part := l.PartitionSize / sector
	bu := l.EraseUnit / sector
	var spc, rsc, spf, clusters int64
	// The cluster size is the specification's, halved while the card
	// holds too few of them for FAT32 (an SDSC card's size).
	for spc = l.ClusterSize / sector; ; spc /= 2 {
		// The FAT for every cluster the partition could hold: at most a
		// few sectors more than what the clusters left need.
		spf = ((part/spc+2)*4 + sector - 1) / sector
		rsc = bu - (2*spf)%bu
		for rsc < 32 { // boot sector, FSInfo, their copies at 6 and 7, and room
			rsc += bu
		}
		clusters = (part - rsc - 2*spf) / spc
		if clusters >= fat32MinClusters+16 || spc == 1 {
			break
		}
	}
	if clusters < fat32MinClusters {
		return fmt.Errorf("a %s partition: %w (FAT32 needs %d clusters, it holds %d of 512 bytes)",
			units.FormatSize(l.PartitionSize), ErrTooSmall, fat32MinClusters, clusters)
	}
	clusters = min(clusters, 0x0FFFFFF5-2)
	l.ClusterSize, l.Clusters = spc*sector, clusters
	l.FATStart = l.PartitionStart + rsc*sector
	l.DataStart = l.FATStart + 2*spf*sector

	boot := make([]byte, sector)
	copy(boot, []byte{0xEB, 0x58, 0x90})
	copy(boot[3:11], "MSWIN4.1")
	binary.LittleEndian.PutUint16(boot[11:], sector)
	boot[13] = byte(spc)
	binary.LittleEndian.PutUint16(boot[14:], uint16(rsc))
	boot[16] = 2    // FATs
	boot[21] = 0xF8 // a fixed medium, as SD cards are given
	binary.LittleEndian.PutUint16(boot[24:], 63)
	binary.LittleEndian.PutUint16(boot[26:], 255)
	binary.LittleEndian.PutUint32(boot[28:], uint32(l.PartitionStart/sector)) // hidden sectors
	binary.LittleEndian.PutUint32(boot[32:], uint32(part))
	binary.LittleEndian.PutUint32(boot[36:], uint32(spf))
	binary.LittleEndian.PutUint32(boot[44:], 2) // the root directory's cluster
	binary.LittleEndian.PutUint16(boot[48:], 1) // FSInfo
	binary.LittleEndian.PutUint16(boot[50:], 6) // the boot sector's copy
	boot[64] = 0x80
	boot[66] = 0x29
	binary.LittleEndian.PutUint32(boot[67:], o.Serial)
	copy(boot[71:82], "NO NAME    ")
	if label != "" {
		copy(boot[71:82], fmt.Sprintf("%-11s", label))
	}
	copy(boot[82:90], "FAT32   ")
	// Boot code that says the card is no boot disk and waits for a key,
	// as formatters write it.
	code := []byte{0x0E, 0x1F, 0xBE, 0x77, 0x7C, 0xAC, 0x22, 0xC0, 0x74, 0x0B, 0x56, 0xB4, 0x0E, 0xBB, 0x07, 0x00,
		0xCD, 0x10, 0x5E, 0xEB, 0xF0, 0x32, 0xE4, 0xCD, 0x16, 0xCD, 0x19, 0xEB, 0xFE}
	copy(boot[90:], code)
	copy(boot[90+len(code):], "This is not a bootable disk.\r\n\x00")
	boot[510], boot[511] = 0x55, 0xaa

	info := make([]byte, sector)
	binary.LittleEndian.PutUint32(info[0:], 0x41615252)
	binary.LittleEndian.PutUint32(info[484:], 0x61417272)
	binary.LittleEndian.PutUint32(info[488:], uint32(clusters-1)) // free: all but the root's
	binary.LittleEndian.PutUint32(info[492:], 3)                  // the next free cluster
	binary.LittleEndian.PutUint32(info[508:], 0xAA550000)

	// Sectors 0-2 and their copy at 6-8: the boot sector, FSInfo, and a
	// third boot sector carrying only its signature.
	third := make([]byte, sector)
	third[510], third[511] = 0x55, 0xaa
	for _, at := range []int64{0, 6} {
		l.put(l.PartitionStart+at*sector, boot)
		l.put(l.PartitionStart+(at+1)*sector, info)
		l.put(l.PartitionStart+(at+2)*sector, third)
	}
	// Both FATs: the medium, the end-of-chain marker, and the root
	// directory's one cluster; zeros (free) after them, written.
	fat := make([]byte, 12)
	binary.LittleEndian.PutUint32(fat[0:], 0x0FFFFFF8)
	binary.LittleEndian.PutUint32(fat[4:], 0x0FFFFFFF)
	binary.LittleEndian.PutUint32(fat[8:], 0x0FFFFFFF)
	l.put(l.FATStart, fat)
	l.put(l.FATStart+spf*sector, fat)
	// The root directory: the label's entry, zeros after it.
	root := make([]byte, l.ClusterSize)
	if label != "" {
		copy(root[0:11], fmt.Sprintf("%-11s", label))
		root[11] = 0x08 // volume label
		date, clock := fatTime(o.Now)
		binary.LittleEndian.PutUint16(root[22:], clock)
		binary.LittleEndian.PutUint16(root[24:], date)
	}
	l.put(l.DataStart, root)
	return nil
}
