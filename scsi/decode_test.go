package scsi

import (
	"bytes"
	"errors"
	"reflect"
	"testing"
)

// qemuInquiry is QEMU 7.2 scsi-hd's standard INQUIRY answer to a 36-byte
// allocation.
var qemuInquiry = []byte("\x00\x00\x05\x12\x1f\x00\x00\x12QEMU    QEMU HARDDISK   2.5+")

func TestParseInquiry(t *testing.T) {
	reader := append([]byte{0x00, 0x80, 0x06, 0x02, 0x1F, 0, 0, 0}, []byte("Generic STORAGE DEVICE  \x00\x00\x00\x00")...)
	tests := []struct {
		name    string
		in      []byte
		want    InquiryData
		wantErr error
	}{
		{"qemu", qemuInquiry, InquiryData{Version: 5, Vendor: "QEMU", Product: "QEMU HARDDISK", Revision: "2.5+"}, nil},
		{"removable reader, NUL revision", reader, InquiryData{Removable: true, Version: 6, Vendor: "Generic", Product: "STORAGE DEVICE"}, nil},
		{"no device at LUN", []byte{0x7F, 0, 0, 0, 0}, InquiryData{Qualifier: 3, DeviceType: TypeUnknown}, nil},
		{"truncated mid product", qemuInquiry[:20], InquiryData{Version: 5, Vendor: "QEMU", Product: "QEMU"}, nil},
		{"control chars replaced", append([]byte{0, 0, 0, 0, 0, 0, 0, 0}, "AB\x1bC\xffD  "...), InquiryData{Vendor: "AB C D"}, nil},
		{"too short", []byte{0, 0, 5, 2}, InquiryData{}, ErrShortResponse},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := ParseInquiry(tt.in)
			if !errors.Is(err, tt.wantErr) {
				t.Fatalf("err = %v, want %v", err, tt.wantErr)
			}
			if got != tt.want {
				t.Errorf("got %+v, want %+v", got, tt.want)
			}
		})
	}
}

func TestParseVPD(t *testing.T) {
	pages, err := ParseVPDSupportedPages([]byte{0, 0, 0, 3, 0x00, 0x80, 0xB0})
	if err != nil || !reflect.DeepEqual(pages, []uint8{0x00, 0x80, 0xB0}) {
		t.Errorf("supported pages = %v, %v", pages, err)
	}
	// A length field larger than what arrived is clipped, not trusted.
	pages, err = ParseVPDSupportedPages([]byte{0, 0, 0, 200, 0x00, 0x80})
	if err != nil || !reflect.DeepEqual(pages, []uint8{0x00, 0x80}) {
		t.Errorf("clipped supported pages = %v, %v", pages, err)
	}
	if _, err := ParseVPDSupportedPages([]byte{0, 0x80, 0, 0}); !errors.Is(err, ErrMalformed) {
		t.Errorf("wrong page code: err = %v, want ErrMalformed", err)
	}
	serial, err := ParseVPDSerial([]byte("\x00\x80\x00\x0a  SN12345 "))
	if err != nil || serial != "SN12345" {
		t.Errorf("serial = %q, %v", serial, err)
	}
	if _, err := ParseVPDSerial([]byte{0, 0x80}); !errors.Is(err, ErrShortResponse) {
		t.Errorf("short serial: err = %v", err)
	}
}

func TestParseBlockLimits(t *testing.T) {
	page := make([]byte, 64)
	page[1], page[3] = 0xB0, 60
	page[7] = 8                                         // granularity 8
	page[10], page[11] = 0x10, 0x00                     // max 4096 blocks
	page[12], page[13], page[14], page[15] = 0, 0, 8, 0 // optimal 2048
	tests := []struct {
		name    string
		in      []byte
		want    BlockLimits
		wantErr error
	}{
		{"full page", page, BlockLimits{OptimalGranularity: 8, MaxTransfer: 4096, OptimalTransfer: 2048}, nil},
		{"just enough", page[:16], BlockLimits{OptimalGranularity: 8, MaxTransfer: 4096, OptimalTransfer: 2048}, nil},
		{"short", page[:15], BlockLimits{}, ErrShortResponse},
		{"wrong page", append([]byte{0, 0x80}, page[2:]...), BlockLimits{}, ErrMalformed},
	}
	unmap := append([]byte(nil), page...)
	unmap[22], unmap[23] = 0x10, 0x00 // at most 4096 blocks per UNMAP
	unmap[27] = 1                     // of one descriptor
	tests = append(tests, struct {
		name    string
		in      []byte
		want    BlockLimits
		wantErr error
	}{"UNMAP limits", unmap, BlockLimits{OptimalGranularity: 8, MaxTransfer: 4096, OptimalTransfer: 2048, MaxUnmap: 4096, MaxUnmapDescriptors: 1}, nil})
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := ParseBlockLimits(tt.in)
			if !errors.Is(err, tt.wantErr) || got != tt.want {
				t.Errorf("got %+v, %v; want %+v, %v", got, err, tt.want, tt.wantErr)
			}
		})
	}
}

func TestParseReadCapacity(t *testing.T) {
	tests := []struct {
		name        string
		parse       func([]byte) (Capacity, error)
		in          []byte
		blocks      uint64
		blockLen    uint32
		needs16     bool
		wantErr     error
		validateErr bool
	}{
		{"10: 8 GiB card", ParseReadCapacity10, []byte{0x00, 0xFF, 0xFF, 0xFF, 0, 0, 2, 0}, 1 << 24, 512, false, nil, false},
		{"10: too big, use 16", ParseReadCapacity10, []byte{0xFF, 0xFF, 0xFF, 0xFF, 0, 0, 2, 0}, 1 << 32, 512, true, nil, false},
		{"10: 4K blocks", ParseReadCapacity10, []byte{0, 0, 0x0F, 0xFF, 0, 0, 0x10, 0}, 4096, 4096, false, nil, false},
		{"10: zero block length", ParseReadCapacity10, []byte{0, 0, 0, 1, 0, 0, 0, 0}, 2, 0, false, nil, true},
		{"10: odd block length", ParseReadCapacity10, []byte{0, 0, 0, 1, 0, 0, 2, 1}, 2, 513, false, nil, true},
		{"10: short", ParseReadCapacity10, []byte{0, 0, 0, 1, 0, 0, 2}, 0, 0, false, ErrShortResponse, false},
		{"16: past 2^32", ParseReadCapacity16, append([]byte{0, 0, 0, 1, 0, 0, 0, 0, 0, 0, 2, 0}, make([]byte, 20)...), 1<<32 + 1, 512, false, nil, false},
		{"16: short", ParseReadCapacity16, make([]byte, 11), 0, 0, false, ErrShortResponse, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c, err := tt.parse(tt.in)
			if !errors.Is(err, tt.wantErr) {
				t.Fatalf("err = %v, want %v", err, tt.wantErr)
			}
			if err != nil {
				return
			}
			if c.Blocks() != tt.blocks || c.BlockLength != tt.blockLen || c.Needs16() != tt.needs16 {
				t.Errorf("Blocks, BlockLength, Needs16 = %d, %d, %v; want %d, %d, %v", c.Blocks(), c.BlockLength, c.Needs16(), tt.blocks, tt.blockLen, tt.needs16)
			}
			if err := c.Validate(); (err != nil) != tt.validateErr {
				t.Errorf("Validate() = %v, want error %v", err, tt.validateErr)
			}
		})
	}
}

func TestCapacitySaturates(t *testing.T) {
	c := Capacity{LastLBA: ^uint64(0), BlockLength: 4096}
	if c.Blocks() != ^uint64(0) || c.Bytes() != ^uint64(0) {
		t.Errorf("Blocks, Bytes = %d, %d; want saturation", c.Blocks(), c.Bytes())
	}
	if got := (Capacity{LastLBA: 15, BlockLength: 512}).Bytes(); got != 8192 {
		t.Errorf("Bytes() = %d, want 8192", got)
	}
}

func TestParseModeSense6(t *testing.T) {
	tests := []struct {
		name    string
		in      []byte
		wp      bool
		wantErr error
	}{
		{"writable", []byte{3, 0, 0x00, 0}, false, nil},
		{"qemu read-only", []byte{0x0B, 0, 0x80, 8, 0, 0, 0, 0, 0, 0, 2, 0}, true, nil},
		{"other bits do not set WP", []byte{3, 0, 0x7F, 0}, false, nil},
		{"short", []byte{3, 0, 0x80}, false, ErrShortResponse},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			h, err := ParseModeSense6(tt.in)
			if !errors.Is(err, tt.wantErr) || h.WriteProtected != tt.wp {
				t.Errorf("WriteProtected, err = %v, %v; want %v, %v", h.WriteProtected, err, tt.wp, tt.wantErr)
			}
		})
	}
}

func TestUnmapParameters(t *testing.T) {
	got := UnmapParameters(make([]byte, 512), 0x0102030405060708, 0x0A0B0C0D)
	want := []byte{0, 22, 0, 16, 0, 0, 0, 0, 1, 2, 3, 4, 5, 6, 7, 8, 0x0A, 0x0B, 0x0C, 0x0D, 0, 0, 0, 0}
	if !bytes.Equal(got, want) {
		t.Errorf("UnmapParameters = % X, want % X", got, want)
	}
}

func TestParseProvisioning(t *testing.T) {
	for _, tt := range []struct {
		name    string
		in      []byte
		want    Provisioning
		wantErr error
	}{
		{"UNMAP and WRITE SAME, zeros", []byte{0, 0xB2, 0, 4, 0, 0xC4, 0, 0}, Provisioning{Unmap: true, WriteSame: true, ReadsZeros: true}, nil},
		{"WRITE SAME alone", []byte{0, 0xB2, 0, 4, 0, 0x40, 0, 0}, Provisioning{WriteSame: true}, nil},
		{"nothing", []byte{0, 0xB2, 0, 4, 0, 0, 0, 0}, Provisioning{}, nil},
		{"short", []byte{0, 0xB2, 0, 1, 0}, Provisioning{}, ErrShortResponse},
		{"wrong page", []byte{0, 0xB0, 0, 4, 0, 0xC4, 0, 0}, Provisioning{}, ErrMalformed},
	} {
		got, err := ParseProvisioning(tt.in)
		if !errors.Is(err, tt.wantErr) || got != tt.want {
			t.Errorf("%s: got %+v, %v; want %+v, %v", tt.name, got, err, tt.want, tt.wantErr)
		}
	}
}
