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
