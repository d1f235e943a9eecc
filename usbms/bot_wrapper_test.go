package usbms

import (
	"bytes"
	"encoding/binary"
	"errors"
	"testing"
)

func TestEncodeCBW(t *testing.T) {
	var b [cbwLen]byte
	for i := range b {
		b[i] = 0xEE // leftovers of an earlier command must be overwritten
	}
	encodeCBW(&b, 0x01020304, 3, []byte{0x2A, 0, 0, 0, 0, 8, 0, 0, 1, 0}, DataOut, 512)
	want := []byte{
		0x55, 0x53, 0x42, 0x43, // USBC
		0x04, 0x03, 0x02, 0x01, // tag
		0x00, 0x02, 0x00, 0x00, // 512
		0x00, 0x03, 10, // OUT, LUN 3, CDB length
		0x2A, 0, 0, 0, 0, 8, 0, 0, 1, 0, 0, 0, 0, 0, 0, 0,
	}
	if !bytes.Equal(b[:], want) {
		t.Errorf("CBW = % X\nwant  % X", b, want)
	}
	encodeCBW(&b, 1, 0x12, []byte{0x12, 0, 0, 0, 36, 0}, DataIn, 36)
	if b[12] != 0x80 || b[13] != 0x02 || b[14] != 6 || b[21] != 0 {
		t.Errorf("IN CBW flags, LUN, length, padding = %#x, %#x, %d, %#x", b[12], b[13], b[14], b[21])
	}
}

func cswBytes(sig, tag, residue uint32, status byte) []byte {
	b := make([]byte, cswLen)
	binary.LittleEndian.PutUint32(b[0:], sig)
	binary.LittleEndian.PutUint32(b[4:], tag)
	binary.LittleEndian.PutUint32(b[8:], residue)
	b[12] = status
	return b
}

func TestParseCSW(t *testing.T) {
	const tag, length, usbu = 7, 4096, 0x55425355
	std := cswCheck{tag: tag, length: length, sig: cswSignature}
	tests := []struct {
		name  string
		in    []byte
		want  csw
		valid bool
		check cswCheck
	}{
		{"passed", cswBytes(cswSignature, tag, 0, 0), csw{sig: cswSignature, tag: tag}, true, std},
		{"failed with whole residue", cswBytes(cswSignature, tag, length, 1), csw{sig: cswSignature, tag: tag, residue: length, status: 1}, true, std},
		{"phase error", cswBytes(cswSignature, tag, 0, 2), csw{sig: cswSignature, tag: tag, status: 2}, true, std},
		{"short", cswBytes(cswSignature, tag, 0, 0)[:12], csw{}, false, std},
		{"long", append(cswBytes(cswSignature, tag, 0, 0), 0), csw{}, false, std},
		{"bad signature", cswBytes(cbwSignature, tag, 0, 0), csw{}, false, std},
		{"bad tag", cswBytes(cswSignature, tag+1, 0, 0), csw{}, false, std},
		{"status 3 not meaningful", cswBytes(cswSignature, tag, 0, 3), csw{}, false, std},
		// Linux clamps a residue beyond the length instead of resetting.
		{"residue beyond length: clamped", cswBytes(cswSignature, tag, length+18, 0), csw{sig: cswSignature, tag: tag, residue: length}, true, std},
		{"first CSW: any signature, learned", cswBytes(usbu, tag, 0, 0), csw{sig: usbu, tag: tag}, true, cswCheck{tag: tag, length: length, sig: cswSignature, anySig: true}},
		{"the learned signature", cswBytes(usbu, tag, 0, 0), csw{sig: usbu, tag: tag}, true, cswCheck{tag: tag, length: length, sig: usbu}},
		{"the standard one, after learning another", cswBytes(cswSignature, tag, 0, 0), csw{sig: cswSignature, tag: tag}, true, cswCheck{tag: tag, length: length, sig: usbu}},
		{"a third one", cswBytes(cbwSignature, tag, 0, 0), csw{}, false, cswCheck{tag: tag, length: length, sig: usbu}},
		{"any tag for BULK_IGNORE_TAG", cswBytes(cswSignature, tag+5, 0, 0), csw{sig: cswSignature, tag: tag + 5}, true, cswCheck{tag: tag, length: length, sig: cswSignature, anyTag: true}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := parseCSW(tt.in, tt.check)
			if tt.valid != (err == nil) || (err != nil && !errors.Is(err, ErrInvalidCSW)) {
				t.Fatalf("err = %v, want valid %v", err, tt.valid)
			}
			if got != tt.want {
				t.Errorf("got %+v, want %+v", got, tt.want)
			}
		})
	}
}

func TestValidBytes(t *testing.T) {
	tests := []struct {
		length  uint32
		moved   int
		residue uint32
		want    int
	}{
		{36, 36, 0, 36},  // QEMU pads and reports residue 0
		{36, 36, 8, 28},  // padded, residue says 28 were real
		{36, 20, 0, 20},  // short packet, residue not set
		{36, 20, 10, 20}, // both: the smaller claim wins
		{512, 0, 512, 0}, // failed before any data
	}
	for _, tt := range tests {
		if got := validBytes(tt.length, tt.moved, tt.residue); got != tt.want {
			t.Errorf("validBytes(%d, %d, %d) = %d, want %d", tt.length, tt.moved, tt.residue, got, tt.want)
		}
	}
}
