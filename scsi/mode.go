package scsi

// ModeHeader6 is the decoded 4-byte header of a MODE SENSE(6) response.
type ModeHeader6 struct {
	DataLength            uint8 // bytes that follow this field
	MediumType            uint8
	WriteProtected        bool // device-specific parameter bit 7 (WP)
	BlockDescriptorLength uint8
}

// ParseModeSense6 decodes the header of a MODE SENSE(6) response.
func ParseModeSense6(b []byte) (ModeHeader6, error) {
	if len(b) < 4 {
		return ModeHeader6{}, short("MODE SENSE(6) data", len(b), 4)
	}
	return ModeHeader6{
		DataLength:            b[0],
		MediumType:            b[1],
		WriteProtected:        b[2]&0x80 != 0,
		BlockDescriptorLength: b[3],
	}, nil
}

// ModeHeader10 is the decoded 8-byte header of a MODE SENSE(10) response.
type ModeHeader10 struct {
	DataLength            uint16 // bytes that follow this field
	MediumType            uint8
	WriteProtected        bool // device-specific parameter bit 7 (WP)
	BlockDescriptorLength uint16
}

// ParseModeSense10 decodes the header of a MODE SENSE(10) response.
func ParseModeSense10(b []byte) (ModeHeader10, error) {
	if len(b) < 8 {
		return ModeHeader10{}, short("MODE SENSE(10) data", len(b), 8)
	}
	return ModeHeader10{
		DataLength:            uint16(b[0])<<8 | uint16(b[1]),
		MediumType:            b[2],
		WriteProtected:        b[3]&0x80 != 0,
		BlockDescriptorLength: uint16(b[6])<<8 | uint16(b[7]),
	}, nil
}

// Mode page codes.
const PageCaching = 0x08

// WriteCacheEnabled looks through the mode pages of a MODE SENSE response
// (ten: of MODE SENSE(10)) for the caching page and reports its WCE bit;
// found is false when the response holds no caching page, or is too short
// to tell. Pages past the response's end are ignored.
func WriteCacheEnabled(b []byte, ten bool) (wce, found bool) {
	var pages []byte
	if ten {
		h, err := ParseModeSense10(b)
		if err != nil {
			return false, false
		}
		end := min(len(b), int(h.DataLength)+2)
		start := 8 + int(h.BlockDescriptorLength)
		if start > end {
			return false, false
		}
		pages = b[start:end]
	} else {
		h, err := ParseModeSense6(b)
		if err != nil {
			return false, false
		}
		end := min(len(b), int(h.DataLength)+1)
		start := 4 + int(h.BlockDescriptorLength)
		if start > end {
			return false, false
		}
		pages = b[start:end]
	}
	for len(pages) >= 2 {
		code, n := pages[0]&0x3F, 2+int(pages[1])
		if pages[0]&0x40 != 0 { // SPF: a sub-page, 4-byte header
			if len(pages) < 4 {
				return false, false
			}
			n = 4 + (int(pages[2])<<8 | int(pages[3]))
		} else if code == PageCaching && len(pages) >= 3 {
			return pages[2]&0x04 != 0, true
		}
		if n > len(pages) {
			break
		}
		pages = pages[n:]
	}
	return false, false
}
