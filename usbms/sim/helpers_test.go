package sim

import (
	"context"
	"encoding/binary"
	"errors"
	"testing"

	"github.com/usbflash/usbflash/usbms"
)

// buildCBW encodes a Command Block Wrapper the way a host does.
func buildCBW(tag, length uint32, in bool, lun byte, cdb []byte) []byte {
	b := make([]byte, cbwLen)
	binary.LittleEndian.PutUint32(b[0:4], cbwSignature)
	binary.LittleEndian.PutUint32(b[4:8], tag)
	binary.LittleEndian.PutUint32(b[8:12], length)
	if in {
		b[12] = 0x80
	}
	b[13] = lun
	b[14] = byte(len(cdb))
	copy(b[15:], cdb)
	return b
}

// csw is a decoded Command Status Wrapper as the host sees it.
type csw struct {
	sig, tag, residue uint32
	status            byte
}

func decodeCSW(t *testing.T, b []byte) csw {
	t.Helper()
	if len(b) != cswLen {
		t.Fatalf("CSW is %d bytes, want 13", len(b))
	}
	return csw{
		sig:     binary.LittleEndian.Uint32(b[0:4]),
		tag:     binary.LittleEndian.Uint32(b[4:8]),
		residue: binary.LittleEndian.Uint32(b[8:12]),
		status:  b[12],
	}
}

// exchange is what one BOT command looked like on the wire.
type exchange struct {
	data      []byte // data-in received
	moved     int    // data bytes moved (in or out)
	dataStall bool   // the data phase ended in a STALL
	cswStalls int    // CSW reads that stalled
	csw       csw
}

// host drives a device the way a correct BOT host does.
type host struct {
	t   *testing.T
	d   *Device
	tag uint32
}

func newHost(t *testing.T, cfg Config) *host {
	t.Helper()
	d, err := New(cfg)
	if err != nil {
		t.Fatalf("New: %v", err)
	}
	t.Cleanup(func() { d.Close() })
	return &host{t: t, d: d, tag: 100}
}

// oneLUN is a Config with one memory LUN.
func oneLUN(l LUN) Config {
	if l.Blocks == 0 && !l.NoMedium {
		l.Blocks = 2048
	}
	return Config{LUNs: []LUN{l}}
}

// run sends cdb with a data phase of length bytes (out: the bytes of out),
// clears halts where BOT says, and reads the CSW, retrying once after a
// CSW stall.
func (h *host) run(lun byte, in bool, length uint32, cdb, out []byte) exchange {
	h.t.Helper()
	ctx := context.Background()
	h.tag++
	var ex exchange
	if n, err := h.d.BulkOut(ctx, buildCBW(h.tag, length, in, lun, cdb)); err != nil || n != cbwLen {
		h.t.Fatalf("CBW: n=%d err=%v", n, err)
	}
	if length > 0 {
		var n int
		var err error
		if in {
			buf := make([]byte, length)
			n, err = h.d.BulkIn(ctx, buf)
			ex.data = buf[:n]
		} else {
			n, err = h.d.BulkOut(ctx, out[:length])
		}
		ex.moved = n
		switch {
		case errors.Is(err, usbms.ErrStall):
			ex.dataStall = true
			if err := h.d.ClearHalt(ctx, in); err != nil {
				h.t.Fatalf("ClearHalt: %v", err)
			}
		case err != nil:
			h.t.Fatalf("data phase: %v", err)
		}
	}
	for {
		b := make([]byte, 64)
		n, err := h.d.BulkIn(ctx, b)
		if errors.Is(err, usbms.ErrStall) && ex.cswStalls == 0 {
			ex.cswStalls++
			if err := h.d.ClearHalt(ctx, true); err != nil {
				h.t.Fatalf("ClearHalt: %v", err)
			}
			continue
		}
		if err != nil {
			h.t.Fatalf("CSW: %v", err)
		}
		ex.csw = decodeCSW(h.t, b[:n])
		return ex
	}
}

// sense issues REQUEST SENSE and returns key, ASC, ASCQ and the raw data.
func (h *host) sense(lun byte) (key, asc, ascq byte, raw []byte) {
	h.t.Helper()
	ex := h.run(lun, true, 18, []byte{opRequestSense, 0, 0, 0, 18, 0}, nil)
	if ex.csw.status != 0 || len(ex.data) != 18 {
		h.t.Fatalf("REQUEST SENSE: status %d, %d bytes", ex.csw.status, len(ex.data))
	}
	return ex.data[2] & 0x0F, ex.data[12], ex.data[13], ex.data
}

// CDB builders.
func cdbRead10(lba uint32, blocks uint16) []byte {
	c := make([]byte, 10)
	c[0] = opRead10
	binary.BigEndian.PutUint32(c[2:], lba)
	binary.BigEndian.PutUint16(c[7:], blocks)
	return c
}

func cdbWrite10(lba uint32, blocks uint16) []byte {
	c := cdbRead10(lba, blocks)
	c[0] = opWrite10
	return c
}

func cdbRW16(op byte, lba uint64, blocks uint32) []byte {
	c := make([]byte, 16)
	c[0] = op
	binary.BigEndian.PutUint64(c[2:], lba)
	binary.BigEndian.PutUint32(c[10:], blocks)
	return c
}

func cdbInquiry(evpd bool, page byte, alloc uint16) []byte {
	c := []byte{opInquiry, 0, page, 0, 0, 0}
	if evpd {
		c[1] = 1
	}
	binary.BigEndian.PutUint16(c[3:], alloc)
	return c
}

func cdbTUR() []byte { return []byte{opTestUnitReady, 0, 0, 0, 0, 0} }

// pattern returns n bytes that differ per block, so misplaced blocks show.
func pattern(n int, seed byte) []byte {
	b := make([]byte, n)
	for i := range b {
		b[i] = byte(i/512) ^ byte(i) ^ seed
	}
	return b
}
