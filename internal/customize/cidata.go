package customize

import (
	"crypto/rand"
	"encoding/binary"
	"fmt"
	"hash/crc32"
	"io"
	"unicode/utf16"

	"github.com/diskfs/go-diskfs/filesystem/fat12"

	"github.com/usbflash/usbflash/internal/failure"
	"github.com/usbflash/usbflash/internal/lib/parttable"
)

// An image whose only FAT is an EFI System Partition (a generic cloud
// image, memtest86+'s hybrid ISO) has no file system its cloud-init reads
// settings from: firmware boots from an ESP, and cloud-init's NoCloud
// reads its seed from a file system labelled CIDATA (or cidata). Written
// into the ESP, the settings would be said to be written and read by
// nothing. So a cloud-init customisation of such an image adds, after its
// last partition, a small FAT12 partition labelled CIDATA holding the
// seed, where NoCloud looks on every boot (ds-identify finds it by label,
// with no kernel command line to change) — on a card with room for it;
// without, it is refused before anything is written.

// cidataSize is the CIDATA partition's size: room for meta-data,
// user-data and network-config, the user's own too.
const cidataSize = 2 << 20

// cidataAlign is where it starts: on a MiB, as partitioning tools put
// partitions, past the last one (and a GPT's backup).
const cidataAlign = 1 << 20

// cidataLabel is the label NoCloud looks for.
const cidataLabel = "CIDATA"

// ErrNoRoom is a disk without room after its last partition for the
// CIDATA partition a cloud-init customisation needs.
var ErrNoRoom = failure.New(failure.Refused, "no room after the last partition for a CIDATA partition")

// ErrNoSlot is an MBR whose four entries are all used: a CIDATA partition
// cannot be added.
var ErrNoSlot = failure.New(failure.Refused, "no free partition table entry for a CIDATA partition")

// ErrESP is a setting that only a Raspberry Pi's boot partition takes,
// asked of an image whose FAT is an EFI System Partition.
var ErrESP = failure.New(failure.Refused, "the image's FAT partition is an EFI System Partition, which its system does not read first-boot settings from")

// cidataPlace is where a CIDATA partition goes on a disk: its entry and
// its bytes.
type cidataPlace struct {
	kind   string // the table's: parttable.MBR or GPT
	number int    // its partition number, from 1
	start  int64  // byte offset
	// needs is the disk size it takes: its end, and a GPT's backup after
	// it.
	needs int64
}

// planCIDATA finds where a CIDATA partition goes on v: in the first free
// entry of its table, after its last partition (and a GPT's backup
// header, where the image ended). The room is v's to check (Apply): an
// image is inspected before the card it goes on is known.
func planCIDATA(v Volume, bs int) (cidataPlace, error) {
	read := func(off int64, b []byte) error {
		_, err := v.ReadAt(b, off)
		return err
	}
	t, err := parttable.End(read, bs, v.Size())
	if err != nil {
		return cidataPlace{}, err
	}
	b := int64(bs)
	p := cidataPlace{kind: t.Kind}
	end := t.End
	switch t.Kind {
	case parttable.MBR:
		mbr := make([]byte, max(b, 512))
		if err := read(0, mbr[:b]); err != nil {
			return p, err
		}
		for i := range 4 {
			if mbr[446+16*i+4] == 0 {
				p.number = i + 1
				break
			}
		}
	case parttable.GPT:
		g, err := readGPT(v, b)
		if err != nil {
			return p, err
		}
		for i := range g.count {
			if isZero(g.entry(i)[:16]) {
				p.number = int(i + 1)
				break
			}
		}
		end = max(end, (g.alternate+1)*b) // past the image's backup GPT
	default:
		return p, parttable.ErrNoPartition
	}
	if p.number == 0 {
		return p, ErrNoSlot
	}
	p.start = (end + cidataAlign - 1) / cidataAlign * cidataAlign
	p.needs = p.start + cidataSize
	if t.Kind == parttable.GPT {
		p.needs += 33 * b // the backup GPT at the disk's end
	}
	return p, nil
}

// fits refuses a disk of capacity bytes without room for the partition.
func (p cidataPlace) fits(capacity int64) error {
	if p.needs > capacity {
		return fmt.Errorf("%w: the disk has %d bytes, and %d are needed to hold it after the image's partitions", ErrNoRoom, capacity, p.needs)
	}
	return nil
}

// add writes the partition's table entry (a GPT's backup moved to the
// disk's end, as sgdisk -e does, so that the new partition lies within
// its usable blocks) and a FAT12 file system labelled CIDATA, and returns
// it. rnd gives a GPT entry's unique GUID.
func (p cidataPlace) add(v Volume, bs int, rnd io.Reader) (*bootFS, error) {
	if err := p.fits(v.Size()); err != nil {
		return nil, err
	}
	b := int64(bs)
	switch p.kind {
	case parttable.MBR:
		e := make([]byte, 16)
		e[1], e[2], e[3] = 0xFE, 0xFF, 0xFF // CHS: past what CHS can say, as for every partition today
		e[4] = 0x01                         // FAT12
		e[5], e[6], e[7] = 0xFE, 0xFF, 0xFF
		binary.LittleEndian.PutUint32(e[8:], uint32(p.start/b))
		binary.LittleEndian.PutUint32(e[12:], uint32(cidataSize/b))
		if _, err := v.WriteAt(e, int64(446+16*(p.number-1))); err != nil {
			return nil, fmt.Errorf("writing the MBR's entry %d: %w", p.number, err)
		}
	case parttable.GPT:
		if err := p.addGPT(v, b, rnd); err != nil {
			return nil, err
		}
	}
	st := &storage{v: v, end: p.start + cidataSize}
	if _, err := fat12.Create(st, cidataSize, p.start, 512, cidataLabel, false); err != nil {
		return nil, fmt.Errorf("making the CIDATA partition's FAT12 file system: %w", err)
	}
	// go-diskfs (v1.9.4) marks cluster 2 used, as FAT32's root directory,
	// though FAT12's lies before the clusters: fsck.fat finds it lost. It
	// is freed in both FATs, and the file system read anew from them.
	boot := make([]byte, 512)
	if _, err := v.ReadAt(boot, p.start); err != nil {
		return nil, err
	}
	reserved, fats, perFAT := int64(binary.LittleEndian.Uint16(boot[14:])), int64(boot[16]), int64(binary.LittleEndian.Uint16(boot[22:]))
	for i := range fats {
		off := p.start + (reserved+i*perFAT)*512 + 3 // entry 2: byte 3 and the low half of byte 4
		e := make([]byte, 2)
		if _, err := v.ReadAt(e, off); err != nil {
			return nil, err
		}
		e[0], e[1] = 0, e[1]&0xF0
		if _, err := v.WriteAt(e, off); err != nil {
			return nil, err
		}
	}
	f, err := fat12.Read(st, cidataSize, p.start, 512)
	if err != nil {
		return nil, fmt.Errorf("reading the CIDATA partition's new FAT12 file system: %w", err)
	}
	return &bootFS{fs: f, kind: "FAT12", v: v, start: p.start, st: st}, nil
}

// gpt is a disk's primary GPT header and its entries.
type gpt struct {
	hdr, entries          []byte
	entriesLBA, alternate int64
	count, size           int64 // entries, and bytes per entry
}

func (g *gpt) entry(i int64) []byte { return g.entries[i*g.size : (i+1)*g.size] }

// readGPT reads the primary GPT of v (parttable.End checked it).
func readGPT(v Volume, b int64) (*gpt, error) {
	hdr := make([]byte, b)
	if _, err := v.ReadAt(hdr, b); err != nil {
		return nil, err
	}
	g := &gpt{hdr: hdr, alternate: int64(binary.LittleEndian.Uint64(hdr[32:])), entriesLBA: int64(binary.LittleEndian.Uint64(hdr[72:])),
		count: int64(binary.LittleEndian.Uint32(hdr[80:])), size: int64(binary.LittleEndian.Uint32(hdr[84:]))}
	g.entries = make([]byte, (g.count*g.size+b-1)/b*b)
	if _, err := v.ReadAt(g.entries, g.entriesLBA*b); err != nil {
		return nil, err
	}
	return g, nil
}

// addGPT adds the entry to the primary GPT and writes its backup at the
// disk's end, both with their CRC-32s; the image's old backup header is
// zeroed, so that nothing takes it for the disk's.
func (p cidataPlace) addGPT(v Volume, b int64, rnd io.Reader) error {
	g, err := readGPT(v, b)
	if err != nil {
		return err
	}
	if rnd == nil {
		rnd = rand.Reader
	}
	e := g.entry(int64(p.number - 1))
	clear(e)
	typ := parttable.BasicDataGUID()
	copy(e, typ[:])
	if _, err := io.ReadFull(rnd, e[16:32]); err != nil {
		return fmt.Errorf("a GUID for the CIDATA partition: %w", err)
	}
	e[16+7] = e[16+7]&0x0F | 0x40 // a version 4 GUID (the time-hi field, little-endian)
	e[16+8] = e[16+8]&0x3F | 0x80
	binary.LittleEndian.PutUint64(e[32:], uint64(p.start/b))
	binary.LittleEndian.PutUint64(e[40:], uint64((p.start+cidataSize)/b-1))
	for i, r := range utf16.Encode([]rune(cidataLabel)) {
		binary.LittleEndian.PutUint16(e[56+2*i:], r)
	}
	last := v.Size()/b - 1
	entrySectors := (g.count*g.size + b - 1) / b
	entriesCRC := crc32.ChecksumIEEE(g.entries[:g.count*g.size])
	header := func(my, alt, entriesAt int64) []byte {
		h := append([]byte(nil), g.hdr...)
		binary.LittleEndian.PutUint64(h[24:], uint64(my))
		binary.LittleEndian.PutUint64(h[32:], uint64(alt))
		binary.LittleEndian.PutUint64(h[48:], uint64(last-entrySectors-1))
		binary.LittleEndian.PutUint64(h[72:], uint64(entriesAt))
		binary.LittleEndian.PutUint32(h[88:], entriesCRC)
		size := binary.LittleEndian.Uint32(h[12:])
		clear(h[16:20])
		binary.LittleEndian.PutUint32(h[16:], crc32.ChecksumIEEE(h[:size]))
		return h
	}
	if p.start+cidataSize > (last-entrySectors)*b {
		return fmt.Errorf("%w: the backup GPT would overlap it", ErrNoRoom)
	}
	old := make([]byte, b)
	writes := []struct {
		what string
		data []byte
		off  int64
	}{
		{"the image's old backup GPT header", old, g.alternate * b},
		{"the GPT entries", g.entries, g.entriesLBA * b},
		{"the backup GPT entries", g.entries, (last - entrySectors) * b},
		{"the backup GPT header", header(last, 1, last-entrySectors), last * b},
		{"the GPT header", header(1, last, g.entriesLBA), b},
	}
	for _, w := range writes {
		if _, err := v.WriteAt(w.data, w.off); err != nil {
			return fmt.Errorf("writing %s: %w", w.what, err)
		}
	}
	// The protective MBR's entry covers the disk, as it covered the image.
	mbr := make([]byte, 512)
	if _, err := v.ReadAt(mbr, 0); err != nil {
		return err
	}
	for i := range 4 {
		if e := mbr[446+16*i:]; e[4] == 0xEE {
			binary.LittleEndian.PutUint32(e[12:], uint32(min(last, 0xFFFFFFFF)))
			if _, err := v.WriteAt(e[:16], int64(446+16*i)); err != nil {
				return fmt.Errorf("writing the protective MBR: %w", err)
			}
		}
	}
	return nil
}

func isZero(b []byte) bool {
	for _, c := range b {
		if c != 0 {
			return false
		}
	}
	return true
}
