package usbms

import (
	"context"
	"errors"
	"fmt"
	"math"

	"usbflash/scsi"
)

// Allocation lengths of the identification commands.
const (
	inquiryLen    = 36  // the length every device survives
	vpdLen        = 252 // fits any serial number and the block limits page
	readCap16Len  = 32
	modeSense6Len = 192 // Linux asks 192 for page 0x3F; some readers hang on 255
)

// probe is a command whose failure Open tolerates: one reset at most and
// no port reset, so a reader that hangs on an optional command costs little.
func probe(cdb []byte, dir Direction, data []byte) request {
	return request{cdb: cdb, dir: dir, data: data, maxResets: 1}
}

// essential is a command that cannot be done without: the whole recovery
// ladder, port reset included, runs before it fails.
func (l *LUN) essential(cdb []byte, dir Direction, data []byte) request {
	return request{cdb: cdb, dir: dir, data: data, maxResets: l.t.opts.MaxResets, portReset: true}
}

// OpenLUN identifies logical unit lun of the device behind t and readies it
// for block I/O: it waits for the medium, reads identity, VPD pages when the
// device offers them, capacity and write protection.
func OpenLUN(ctx context.Context, t *Transport, lun int, opts LUNOptions) (*LUN, error) {
	if lun < 0 || lun > 15 {
		return nil, fmt.Errorf("usbms: open %s LUN %d: LUN numbers run from 0 to 15", t.opts.Name, lun)
	}
	l := &LUN{t: t, lun: lun, opts: opts.withDefaults()}
	steps := []func(context.Context) error{l.waitReady, l.identify, l.readVPD, l.readCapacity, l.readWriteProtect}
	for _, step := range steps {
		if err := step(ctx); err != nil {
			return nil, err
		}
	}
	return l, nil
}

// waitReady issues TEST UNIT READY until the unit is ready. The retry policy
// of do waits out "becoming ready"; an empty slot fails at once.
func (l *LUN) waitReady(ctx context.Context) error {
	cdb := scsi.TestUnitReady()
	_, err := l.do(ctx, l.essential(cdb.Bytes(), NoData, nil), span{})
	if scsi.IsNoMedium(err) {
		return &detailError{msg: fmt.Sprintf("no medium in %s LUN %d", l.t.opts.Name, l.lun), err: err}
	}
	return err
}

func (l *LUN) identify(ctx context.Context) error {
	buf := make([]byte, inquiryLen)
	cdb := scsi.Inquiry(inquiryLen)
	n, err := l.do(ctx, l.essential(cdb.Bytes(), DataIn, buf), span{})
	if err != nil {
		return err
	}
	inq, err := scsi.ParseInquiry(buf[:n])
	if err != nil {
		return l.cmdError(request{cdb: cdb.Bytes()}, span{}, err)
	}
	switch {
	case inq.Qualifier != 0 || inq.DeviceType == scsi.TypeUnknown:
		return fmt.Errorf("usbms: %s has no device at LUN %d", l.t.opts.Name, l.lun)
	case inq.DeviceType != scsi.TypeDirectAccess && inq.DeviceType != scsi.TypeSimplified && inq.DeviceType != scsi.TypeOptical:
		return fmt.Errorf("usbms: %s LUN %d is SCSI device type 0x%02X, not a block device", l.t.opts.Name, l.lun, inq.DeviceType)
	}
	l.inquiry = inq
	return nil
}

// readVPD reads the serial number and block limits when the device lists
// them. Many card readers reject or mishandle VPD, so every failure here is
// tolerated except a vanished device or a cancelled ctx.
func (l *LUN) readVPD(ctx context.Context) error {
	// Devices claiming less than SPC-2 rarely implement VPD; Linux does not
	// ask them either.
	if l.inquiry.Version < 4 {
		return nil
	}
	buf := make([]byte, vpdLen)
	page := func(code uint8) ([]byte, error) {
		cdb := scsi.InquiryVPD(code, vpdLen)
		n, err := l.do(ctx, probe(cdb.Bytes(), DataIn, buf), span{})
		return buf[:n], err
	}
	b, err := page(scsi.VPDSupportedPages)
	if err != nil {
		return unignorable(ctx, err)
	}
	pages, err := scsi.ParseVPDSupportedPages(b)
	if err != nil {
		return nil
	}
	decoders := map[uint8]func([]byte){
		scsi.VPDUnitSerial:  func(b []byte) { l.serial, _ = scsi.ParseVPDSerial(b) },
		scsi.VPDBlockLimits: func(b []byte) { l.limits, _ = scsi.ParseBlockLimits(b) },
	}
	for _, p := range pages {
		decode, ok := decoders[p]
		if !ok {
			continue
		}
		delete(decoders, p) // a page listed twice is read once
		b, err := page(p)
		if err != nil {
			if err := unignorable(ctx, err); err != nil {
				return err
			}
			continue
		}
		decode(b)
	}
	return nil
}

// unignorable keeps the failures of an optional command that no caller can
// ignore (the device is gone, or ctx is done) and returns nil for the rest.
func unignorable(ctx context.Context, err error) error {
	if errors.Is(err, ErrNoDevice) || ctx.Err() != nil {
		return err
	}
	return nil
}

func (l *LUN) readCapacity(ctx context.Context) error {
	buf := make([]byte, readCap16Len)
	cdb := scsi.ReadCapacity10()
	n, err := l.do(ctx, l.essential(cdb.Bytes(), DataIn, buf[:8]), span{})
	if err != nil {
		return err
	}
	c, err := scsi.ParseReadCapacity10(buf[:n])
	if err == nil && c.Needs16() {
		cdb = scsi.ReadCapacity16(readCap16Len)
		n, err = l.do(ctx, l.essential(cdb.Bytes(), DataIn, buf), span{})
		if err != nil {
			return err
		}
		c, err = scsi.ParseReadCapacity16(buf[:n])
	}
	if err == nil {
		err = c.Validate()
	}
	if err == nil && c.Blocks() > math.MaxInt64/uint64(c.BlockLength) {
		err = fmt.Errorf("capacity of %d blocks of %d bytes is beyond 8 EiB", c.Blocks(), c.BlockLength)
	}
	if err != nil {
		return l.cmdError(request{cdb: cdb.Bytes()}, span{}, err)
	}
	l.blockSize, l.blocks = int(c.BlockLength), int64(c.Blocks())
	return nil
}

// readWriteProtect asks MODE SENSE(6) for the write-protect bit. Readers
// that reject or stall MODE SENSE are taken as writable; a protected card
// then fails the first WRITE with DATA PROTECT instead.
func (l *LUN) readWriteProtect(ctx context.Context) error {
	buf := make([]byte, modeSense6Len)
	cdb := scsi.ModeSense6(0x3F, 0, false, modeSense6Len)
	n, err := l.do(ctx, probe(cdb.Bytes(), DataIn, buf), span{})
	if err != nil {
		return unignorable(ctx, err)
	}
	if h, err := scsi.ParseModeSense6(buf[:n]); err == nil {
		l.wp = h.WriteProtected
	}
	return nil
}
