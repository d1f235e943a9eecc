package image

import (
	"bytes"
	"encoding/binary"
	"io"
	"strings"
)

// discProbeLen is how much of the decoded image is read before anything is
// written to tell an optical disc image: ISO 9660's volume descriptors and
// UDF's volume recognition sequence start at 32 KiB, in 2 KiB sectors.
const discProbeLen = 64 << 10

// Disc is what an image's first 64 KiB say of it as an optical disc image
// (ISO 9660 or UDF): the facts that decide whether written raw to a card or
// stick it boots.
type Disc struct {
	// ISO9660 and UDF: the file systems whose descriptors it holds (a
	// Windows installer ISO holds both: a UDF bridge).
	ISO9660, UDF bool
	// ElTorito: a boot catalog, which CD and DVD firmware boots from; a
	// USB stick is booted from a partition table instead.
	ElTorito bool
	// Hybrid: it also carries an MBR partition table or a GPT (xorriso's
	// -isohybrid-mbr, isohybrid, most Linux installers), so a card or
	// stick written with it boots.
	Hybrid bool
	// VolumeID is the ISO 9660 volume identifier ("" without one).
	VolumeID string
}

// Windows says whether the volume ID is one Microsoft gives its installer
// ISOs (CCCOMA_X64FRE_EN-US_DV9, CPBA_..., CENA_..., ESD-ISO), for saying
// so; the refusal does not depend on it.
func (d Disc) Windows() bool {
	for _, p := range []string{"CCCOMA_", "CCSA_", "CPBA_", "CPRA_", "CENA_", "CCBA_", "CRMA_", "GRMC", "ESD-ISO", "WIN10", "WIN11"} {
		if strings.HasPrefix(strings.ToUpper(d.VolumeID), p) {
			return true
		}
	}
	return false
}

// BootsOnlyFromDisc says whether the image is a disc image that boots
// only from a CD or DVD: an El Torito boot catalog and neither an MBR
// partition table nor a GPT. Written raw to a card or stick it boots
// nothing.
func (d Disc) BootsOnlyFromDisc() bool { return d.ElTorito && !d.Hybrid }

// Disc reads the image's first 64 KiB as an optical disc image; ok is
// false when they are not one. Call it before the first Read: what it
// decodes to tell is handed to Read first, and trouble decoding it (a
// damaged archive) is Read's error, where it would have been met.
func (s *Source) Disc() (d Disc, ok bool) {
	s.fillProbe()
	return readDisc(s.probe)
}

// fillProbe reads the image's first discProbeLen bytes, ahead of Read,
// once: opening an image reads only its first sniffLen.
func (s *Source) fillProbe() {
	if s.probe != nil || s.delivered.Load() > 0 || s.dec == nil {
		return // read already, too late, or no decoder: a Source made by hand
	}
	buf := make([]byte, len(s.head), discProbeLen)
	copy(buf, s.head)
	for len(buf) < discProbeLen && s.err == nil {
		n, err := s.readDecoded(buf[len(buf):discProbeLen])
		buf = buf[:len(buf)+n]
		switch {
		case err == io.EOF:
			s.err = io.EOF // delivered once head is drained
			if !s.SizeExact {
				s.Size, s.SizeExact = int64(len(buf)), true
			}
		case err != nil:
			s.err = err
		}
	}
	s.head, s.probe = buf, buf
}

func readDisc(b []byte) (Disc, bool) {
	const sector = 2048
	var d Disc
	for lba := 16; (lba+1)*sector <= len(b); lba++ {
		v := b[lba*sector : (lba+1)*sector]
		id := string(v[1:6])
		switch {
		case id == "CD001" && v[0] == 1: // primary volume descriptor
			d.ISO9660 = true
			d.VolumeID = strings.TrimRight(string(bytes.TrimRight(v[40:72], "\x00")), " ")
		case id == "CD001" && v[0] == 0 && bytes.HasPrefix(v[7:], []byte("EL TORITO SPECIFICATION")):
			d.ElTorito = true
		case id == "NSR02" || id == "NSR03":
			d.UDF = true
		case id == "CD001" || id == "BEA01" || id == "TEA01" || id == "CD002" || id == "BOOT2" || id == "CDW02":
		default:
			lba = len(b) // the end of the descriptors
		}
	}
	if !d.ISO9660 && !d.UDF {
		return Disc{}, false
	}
	d.Hybrid = hasPartitionTable(b)
	return d, true
}

// hasPartitionTable says whether b opens with an MBR holding a partition
// or a GPT header (512- or 4096-byte sectors).
func hasPartitionTable(b []byte) bool {
	if len(b) >= 512 && b[510] == 0x55 && b[511] == 0xaa {
		for i := range 4 {
			e := b[446+16*i : 446+16*(i+1)]
			if e[4] != 0 && binary.LittleEndian.Uint32(e[12:]) != 0 {
				return true
			}
		}
	}
	for _, at := range []int{512, 4096} {
		if len(b) >= at+8 && string(b[at:at+8]) == "EFI PART" {
			return true
		}
	}
	return false
}
