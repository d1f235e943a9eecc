package scsi

import (
	"encoding/binary"
	"fmt"
	"strings"
)

// Peripheral device types (INQUIRY byte 0, low 5 bits).
const (
	TypeDirectAccess = 0x00 // disks, card readers
	TypeCDROM        = 0x05
	TypeOptical      = 0x07
	TypeSimplified   = 0x0E // reduced block commands, some card readers
	TypeUnknown      = 0x1F // no device type, or no device at this LUN
)

// InquiryData is the decoded standard INQUIRY response.
type InquiryData struct {
	Qualifier  uint8 // peripheral qualifier; 3 means no device at this LUN
	DeviceType uint8 // peripheral device type, TypeDirectAccess for a card
	Removable  bool  // RMB: the medium can be removed
	Version    uint8 // SPC version the device claims (5 = SPC-3)
	Vendor     string
	Product    string
	Revision   string
}

// ParseInquiry decodes standard INQUIRY data. Devices may send fewer than
// the 36 bytes asked for; fields past the end come back empty.
func ParseInquiry(b []byte) (InquiryData, error) {
	const need = 5
	if len(b) < need {
		return InquiryData{}, short("INQUIRY data", len(b), need)
	}
	return InquiryData{
		Qualifier:  b[0] >> 5,
		DeviceType: b[0] & 0x1F,
		Removable:  b[1]&0x80 != 0,
		Version:    b[2],
		Vendor:     asciiField(b, 8, 16),
		Product:    asciiField(b, 16, 32),
		Revision:   asciiField(b, 32, 36),
	}, nil
}

// asciiField returns b[from:to] as trimmed printable ASCII, clipped to b.
// Devices pad with spaces or NULs and now and then send garbage; replacing
// non-printables keeps that garbage out of terminals and logs.
func asciiField(b []byte, from, to int) string {
	if from >= len(b) {
		return ""
	}
	to = min(to, len(b))
	var sb strings.Builder
	for _, c := range b[from:to] {
		if c < 0x20 || c > 0x7E {
			c = ' '
		}
		sb.WriteByte(c)
	}
	return strings.TrimSpace(sb.String())
}

// vpdPage checks the 4-byte VPD header and returns the page's payload,
// clipped to the bytes actually present.
func vpdPage(b []byte, page uint8, what string) ([]byte, error) {
	if len(b) < 4 {
		return nil, short(what, len(b), 4)
	}
	if b[1] != page {
		return nil, fmt.Errorf("scsi: %s has page code 0x%02X, want 0x%02X: %w", what, b[1], page, ErrMalformed)
	}
	n := int(binary.BigEndian.Uint16(b[2:4]))
	end := min(4+n, len(b))
	return b[4:end], nil
}

// ParseVPDSupportedPages decodes VPD page 0x00, the list of pages the device
// offers.
func ParseVPDSupportedPages(b []byte) ([]uint8, error) {
	p, err := vpdPage(b, VPDSupportedPages, "VPD supported pages")
	if err != nil {
		return nil, err
	}
	return append([]uint8(nil), p...), nil
}

// ParseVPDSerial decodes VPD page 0x80, the unit serial number.
func ParseVPDSerial(b []byte) (string, error) {
	p, err := vpdPage(b, VPDUnitSerial, "VPD unit serial number")
	if err != nil {
		return "", err
	}
	return asciiField(p, 0, len(p)), nil
}

// BlockLimits is the part of VPD page 0xB0 a writer uses. Zero means the
// device did not say.
type BlockLimits struct {
	OptimalGranularity uint16 // blocks; transfers should be a multiple
	MaxTransfer        uint32 // blocks per READ/WRITE
	OptimalTransfer    uint32 // blocks per READ/WRITE
	// MaxUnmap is the most blocks one UNMAP may name, MaxUnmapDescriptors
	// the most block descriptors (0: UNMAP is not supported); present
	// only in pages of 0x3C bytes (SBC-3).
	MaxUnmap, MaxUnmapDescriptors uint32
}

// ParseBlockLimits decodes VPD page 0xB0.
func ParseBlockLimits(b []byte) (BlockLimits, error) {
	p, err := vpdPage(b, VPDBlockLimits, "VPD block limits")
	if err != nil {
		return BlockLimits{}, err
	}
	// Payload offsets are page offsets minus the 4-byte header; the optimal
	// transfer length ends at page byte 16.
	const need = 12
	if len(p) < need {
		return BlockLimits{}, short("VPD block limits", len(p)+4, need+4)
	}
	l := BlockLimits{
		OptimalGranularity: binary.BigEndian.Uint16(p[2:4]),
		MaxTransfer:        binary.BigEndian.Uint32(p[4:8]),
		OptimalTransfer:    binary.BigEndian.Uint32(p[8:12]),
	}
	if len(p) >= 24 { // page bytes 20-27
		l.MaxUnmap = binary.BigEndian.Uint32(p[16:20])
		l.MaxUnmapDescriptors = binary.BigEndian.Uint32(p[20:24])
	}
	return l, nil
}

// Provisioning is the part of VPD page 0xB2 that says how a device unmaps.
type Provisioning struct {
	Unmap     bool // LBPU: UNMAP
	WriteSame bool // LBPWS: WRITE SAME(16) with UNMAP
	// ReadsZeros (LBPRZ): an unmapped block reads as zeros.
	ReadsZeros bool
}

// ParseProvisioning decodes VPD page 0xB2.
func ParseProvisioning(b []byte) (Provisioning, error) {
	p, err := vpdPage(b, VPDProvisioning, "VPD logical block provisioning")
	if err != nil {
		return Provisioning{}, err
	}
	if len(p) < 2 {
		return Provisioning{}, short("VPD logical block provisioning", len(p)+4, 6)
	}
	return Provisioning{Unmap: p[1]&0x80 != 0, WriteSame: p[1]&0x40 != 0, ReadsZeros: p[1]&0x04 != 0}, nil
}
