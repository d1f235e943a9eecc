package sim

import "encoding/binary"

// inquiry answers standard INQUIRY (36 bytes) and the VPD pages.
func (d *Device) inquiry(l *lun, cdb []byte) plan {
	evpd, page := cdb[1]&0x01 != 0, cdb[2]
	alloc := int(binary.BigEndian.Uint16(cdb[3:5]))
	if !evpd {
		if page != 0 {
			return failed(l, senseInvalidField())
		}
		return dataIn(standardInquiry(l), alloc)
	}
	var b []byte
	switch page {
	case 0x00:
		// Supported VPD pages, ascending as SPC-4 7.8.13 requires.
		b = []byte{0, 0x00, 0, 3, 0x00, 0x80, 0xB0}
		if l.cfg.Unmap != "" {
			b = []byte{0, 0x00, 0, 4, 0x00, 0x80, 0xB0, 0xB2}
		}
	case 0x80:
		serial := []byte(l.cfg.Serial)
		if len(serial) > 251 {
			serial = serial[:251]
		}
		b = append([]byte{0, 0x80, 0, byte(len(serial))}, serial...)
	case 0xB0:
		// Block Limits (SBC-3 6.5.3), page length 0x3C.
		b = make([]byte, 64)
		b[1], b[3] = 0xB0, 0x3C
		binary.BigEndian.PutUint32(b[8:12], l.cfg.MaxTransferBlocks)
		binary.BigEndian.PutUint32(b[12:16], l.cfg.OptimalTransferBlocks)
		if l.cfg.Unmap == "unmap" || l.cfg.Unmap == "refuse" {
			binary.BigEndian.PutUint32(b[20:24], simMaxUnmap)
			binary.BigEndian.PutUint32(b[24:28], 1)
		}
	case 0xB2:
		if l.cfg.Unmap == "" {
			return failed(l, senseInvalidField())
		}
		// Logical Block Provisioning (SBC-3 6.6.4): LBPU, LBPWS, LBPRZ.
		b = make([]byte, 8)
		b[1], b[3] = 0xB2, 4
		b[5] = 0x40 | 0x04
		if l.cfg.Unmap != "writesame" {
			b[5] |= 0x80
		}
	default:
		return failed(l, senseInvalidField())
	}
	return dataIn(b, alloc)
}

// standardInquiry is the 36-byte standard INQUIRY data (SPC-4 6.6.2).
func standardInquiry(l *lun) []byte {
	b := make([]byte, 36)
	b[0] = 0x00 // peripheral qualifier 0, direct-access block device
	if l.cfg.Removable {
		b[1] = 0x80
	}
	b[2] = 0x06 // SPC-4
	b[3] = 0x02 // response data format 2
	b[4] = byte(len(b) - 5)
	pad(b[8:16], l.cfg.Vendor)
	pad(b[16:32], l.cfg.Product)
	pad(b[32:36], l.cfg.Revision)
	return b
}

// pad fills dst with s, space-padded and cut to fit, as INQUIRY's ASCII
// fields require.
func pad(dst []byte, s string) {
	for i := range dst {
		dst[i] = ' '
	}
	copy(dst, s)
}

// modeSense answers MODE SENSE(6) and (10) for the caching page (0x08)
// and all pages (0x3F): a header whose device-specific byte carries WP, no
// block descriptor, and a caching page with the write cache off (on with
// Misbehaviour.WriteCache).
func (d *Device) modeSense(l *lun, cdb []byte) plan {
	if l.cfg.RejectModeSense {
		return failed(l, senseInvalidOpcode())
	}
	if !l.present() {
		return failed(l, senseNoMedium())
	}
	page := cdb[2] & 0x3F
	if page != 0x08 && page != 0x3F {
		return failed(l, senseInvalidField())
	}
	wp := l.cfg.WriteProtected || (d.cfg.Misbehaviour.ModePlaceholder && !l.readSeen)
	caching := make([]byte, 20)
	caching[0], caching[1] = 0x08, 18
	if d.cfg.Misbehaviour.WriteCache {
		caching[2] = 0x04 // WCE
	}
	if cdb[0] == opModeSense10 {
		// An 8-byte header (SPC-4 7.5.5): MODE DATA LENGTH in bytes 0-1,
		// WP in byte 3.
		b := make([]byte, 8, 8+20)
		if wp {
			b[3] = 0x80
		}
		b = append(b, caching...)
		binary.BigEndian.PutUint16(b[0:2], uint16(len(b)-2))
		return dataIn(b, int(binary.BigEndian.Uint16(cdb[7:9])))
	}
	b := make([]byte, 4, 4+20)
	if wp {
		b[2] = 0x80
	}
	b = append(b, caching...)
	b[0] = byte(len(b) - 1) // MODE DATA LENGTH excludes itself
	return dataIn(b, int(cdb[4]))
}
