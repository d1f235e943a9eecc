package usbms

import (
	"context"
	"errors"
	"fmt"
	"math"
	"time"

	"github.com/usbflash/usbflash/scsi"
)

// Allocation lengths of the identification commands.
const (
	inquiryLen    = 36  // the length every device survives
	vpdLen        = 252 // fits any serial number and the block limits page
	readCap16Len  = 32
	modeSense6Len = 192 // Linux asks 192 for page 0x3F; some readers hang on 255
)

// probe is a command whose failure is tolerated: one attempt, and reset
// recovery after a failure so the next command finds the reader ready;
// no second attempt and no port reset, so a reader that hangs on an
// optional command costs one timeout.
func probe(cdb []byte, dir Direction, data []byte) request {
	return request{cdb: cdb, dir: dir, data: data, maxResets: 0, probe: true}
}

// essential is a command that cannot be done without: the whole recovery
// ladder, port reset included, runs before it fails.
func (l *LUN) essential(cdb []byte, dir Direction, data []byte) request {
	return request{cdb: cdb, dir: dir, data: data, maxResets: l.t.opts.MaxResets, portReset: true}
}

// OpenLUN identifies logical unit lun of the device behind t and readies it
// for block I/O with the commands Linux sends a USB disk, in its order:
// INQUIRY, TEST UNIT READY until the medium is ready (START UNIT when it
// needs one), READ CAPACITY, a READ of block 0, a READ of the last block
// (which Linux does not send: see readLastBlock), and MODE SENSE for
// write protection (and whether it caches writes). VPD pages only when the
// quirks ask for them (QuirkTryVPDPages): Linux reads none of a USB disk.
func OpenLUN(ctx context.Context, t *Transport, lun int, opts LUNOptions) (*LUN, error) {
	if lun < 0 || lun > 15 {
		return nil, fmt.Errorf("usbms: open %s LUN %d: LUN numbers run from 0 to 15", t.opts.Name, lun)
	}
	l := &LUN{t: t, lun: lun, opts: opts.withDefaults()}
	steps := []func(context.Context) error{l.identify, l.waitReady, l.readVPD, l.readCapacity, l.readBlockZero, l.readLastBlock, l.readWriteProtect}
	for _, step := range steps {
		if err := step(ctx); err != nil {
			return nil, err
		}
	}
	return l, nil
}

// waitReady issues TEST UNIT READY until the unit is ready. The retry policy
// of do waits out "becoming ready"; an empty slot fails at once. A unit
// that stays NOT READY in a way START UNIT may end gets one START STOP
// UNIT (start), and is polled for SpinUpWait, as Linux's sd does when a
// disk is attached.
func (l *LUN) waitReady(ctx context.Context) error {
	cdb := scsi.TestUnitReady()
	started := false
	var waited time.Duration
	for {
		_, err := l.do(ctx, l.essential(cdb.Bytes(), NoData, nil), span{})
		switch {
		case err == nil:
			return nil
		case scsi.IsNoMedium(err):
			return &detailError{msg: fmt.Sprintf("no medium in %s LUN %d", l.t.opts.Name, l.lun), err: err}
		case !scsi.NeedsStart(err):
			return err
		case !started:
			started = true
			start := scsi.StartStopUnit(true, false)
			if _, serr := l.do(ctx, probe(start.Bytes(), NoData, nil), span{}); unignorable(ctx, serr) != nil {
				return serr
			}
			continue
		case waited >= l.opts.SpinUpWait:
			return fmt.Errorf("%w %v after START UNIT: %w", ErrNotReady, l.opts.SpinUpWait, err)
		}
		if serr := l.t.sleep(ctx, l.opts.SpinUpPoll); serr != nil {
			return serr
		}
		waited += l.opts.SpinUpPoll
	}
}

func (l *LUN) identify(ctx context.Context) error {
	if l.t.opts.Quirks&QuirkFixInquiry != 0 {
		// A reader that hangs or crashes on INQUIRY: Linux answers it
		// from its table instead of asking.
		l.inquiry = l.t.opts.Inquiry
		return nil
	}
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

// readVPD reads the serial number and block limits when the quirks ask for
// VPD pages (QuirkTryVPDPages) and the device lists them. Linux asks no USB
// disk for VPD pages, and many card readers reject or mishandle them, so
// every failure here is tolerated except a vanished device or a cancelled
// ctx.
func (l *LUN) readVPD(ctx context.Context) error {
	// Devices claiming less than SPC-2 rarely implement VPD; Linux does not
	// ask them either.
	if l.t.opts.Quirks&QuirkTryVPDPages == 0 || l.inquiry.Version < 4 {
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

// readCapacity asks READ CAPACITY as Linux's sd does: (10) first, (16)
// when (10) says the capacity does not fit (or first, for
// QuirkNeedsCap16 bridges, whose (10) wraps), with the kernel's
// leniencies: a block length of 0 is 512, a (16) that fails after (10)
// said 0xFFFFFFFF means 2^32 blocks (no medium for
// QuirkNoReadCapacity16). QuirkFixCapacity and QuirkCapacityHeuristics
// correct a capacity reported as the block count.
func (l *LUN) readCapacity(ctx context.Context) error {
	q := l.t.opts.Quirks
	buf := make([]byte, readCap16Len)
	var c scsi.Capacity
	var err error
	have := false
	cdb := scsi.ReadCapacity16(readCap16Len)
	if q&QuirkNeedsCap16 != 0 {
		if n, err16 := l.do(ctx, probe(cdb.Bytes(), DataIn, buf), span{}); err16 == nil {
			c, err = scsi.ParseReadCapacity16(buf[:n])
			have = err == nil
		} else if err := unignorable(ctx, err16); err != nil {
			return err
		}
	}
	if !have {
		cdb = scsi.ReadCapacity10()
		n, err := l.do(ctx, l.essential(cdb.Bytes(), DataIn, buf[:8]), span{})
		if err != nil {
			return err
		}
		c, err = scsi.ParseReadCapacity10(buf[:n])
		if err == nil && c.Needs16() {
			c, err = l.readCapacity16(ctx, c)
			if err != nil {
				return err
			}
			cdb = scsi.ReadCapacity16(readCap16Len)
		}
		if err != nil {
			return l.cmdError(request{cdb: cdb.Bytes()}, span{}, err)
		}
	}
	if c.BlockLength == 0 {
		c.BlockLength = 512 // as Linux's sd assumes
	}
	err = c.Validate()
	if err == nil && c.Blocks() > math.MaxInt64/uint64(c.BlockLength) {
		err = fmt.Errorf("capacity of %d blocks of %d bytes is beyond 8 EiB", c.Blocks(), c.BlockLength)
	}
	if err != nil {
		return l.cmdError(request{cdb: cdb.Bytes()}, span{}, err)
	}
	l.blockSize, l.blocks = int(c.BlockLength), int64(c.Blocks())
	l.reported = l.blocks
	switch {
	case q&QuirkFixCapacity != 0 && l.blocks > 1:
		l.blocks--
	case q&QuirkCapacityHeuristics != 0 && q&QuirkCapacityOK == 0 && l.blocks%2 == 1 && l.blocks > 1:
		l.blocks--
	}
	return nil
}

// readCapacity16 follows a READ CAPACITY(10) that said the capacity does
// not fit it.
func (l *LUN) readCapacity16(ctx context.Context, c10 scsi.Capacity) (scsi.Capacity, error) {
	if l.t.opts.Quirks&QuirkNoReadCapacity16 != 0 {
		// Such readers mean "no medium" by it.
		return scsi.Capacity{}, &detailError{msg: fmt.Sprintf("no medium in %s LUN %d", l.t.opts.Name, l.lun),
			err: &scsi.SenseError{Key: scsi.NotReady, ASC: scsi.ASCMediumNotPresent}}
	}
	buf := make([]byte, readCap16Len)
	cdb := scsi.ReadCapacity16(readCap16Len)
	n, err := l.do(ctx, probe(cdb.Bytes(), DataIn, buf), span{})
	if err != nil {
		if err := unignorable(ctx, err); err != nil {
			return scsi.Capacity{}, err
		}
		// Linux's sd takes 2^32 blocks then.
		return scsi.Capacity{LastLBA: scsi.MaxLBA10, BlockLength: c10.BlockLength}, nil
	}
	return scsi.ParseReadCapacity16(buf[:n])
}

// ReportedBlocks is the block count READ CAPACITY gave, before a quirk
// corrected it (BlockCount is what is used).
func (l *LUN) ReportedBlocks() int64 { return l.reported }

// readBlockZero reads block 0 before MODE SENSE, as Linux does for every
// USB disk: some readers report placeholder mode data (a write-protect
// bit among it) until the medium was accessed. Its failure changes
// nothing, except that a reader calling block 0 out of range is
// remembered (zeroRefused): no medium lacks block 0, so it is one that
// fails READ(10)s after a card goes in (Linux's INITIAL_READ10).
func (l *LUN) readBlockZero(ctx context.Context) error {
	buf := make([]byte, l.blockSize)
	cdb := scsi.Read10(0, 1)
	_, err := l.do(ctx, probe(cdb.Bytes(), DataIn, buf), span{0, 1})
	l.zeroRefused = scsi.IsLBAOutOfRange(err)
	return unignorable(ctx, err)
}

// readLastBlock reads the last block the capacity gives, alone: a reader
// that calls it out of range reported the block count where the last
// address belongs (Linux's FIX_CAPACITY readers), and a write that needs
// that block can be refused before its first byte (LastBlockRefused)
// instead of failing at its end. Skipped when block 0 was refused too:
// that reader refuses READs for another reason.
func (l *LUN) readLastBlock(ctx context.Context) error {
	if l.zeroRefused || l.blocks < 2 {
		return nil
	}
	lba := l.blocks - 1
	cdb := scsi.Read10(uint32(lba), 1)
	if lba > scsi.MaxLBA10 {
		cdb = scsi.Read16(uint64(lba), 1)
	}
	_, err := l.do(ctx, probe(cdb.Bytes(), DataIn, make([]byte, l.blockSize)), span{lba, 1})
	l.lastRefused = scsi.IsLBAOutOfRange(err)
	return unignorable(ctx, err)
}

// LastBlockRefused reports whether the reader called the last block of
// the capacity it reported out of range when the LUN was opened
// (ErrCapacityOffByOne).
func (l *LUN) LastBlockRefused() bool { return l.lastRefused }

// readWriteProtect asks MODE SENSE, page 3F, for the write-protect bit,
// and looks in the same data for the caching page's write-cache bit
// (Linux asks no USB disk for page 08 alone). MODE SENSE(6) for SCSI
// readers, (10) for the ATAPI command set. Readers that reject or stall it
// are taken as writable without a cache; a protected card then fails the
// first WRITE with DATA PROTECT instead. QuirkNoWPDetect readers are not
// asked.
func (l *LUN) readWriteProtect(ctx context.Context) error {
	if l.t.opts.Quirks&QuirkNoWPDetect != 0 {
		return nil
	}
	buf := make([]byte, modeSense6Len)
	ten := l.t.opts.CommandSet == SetATAPI
	cdb := scsi.ModeSense6(0x3F, 0, false, modeSense6Len)
	if ten {
		cdb = scsi.ModeSense10(0x3F, 0, false, modeSense6Len)
	}
	n, err := l.do(ctx, probe(cdb.Bytes(), DataIn, buf), span{})
	if err != nil {
		return unignorable(ctx, err)
	}
	if ten {
		if h, err := scsi.ParseModeSense10(buf[:n]); err == nil {
			l.wp = h.WriteProtected
		}
	} else if h, err := scsi.ParseModeSense6(buf[:n]); err == nil {
		l.wp = h.WriteProtected
	}
	l.writeCache, _ = scsi.WriteCacheEnabled(buf[:n], ten)
	return nil
}
