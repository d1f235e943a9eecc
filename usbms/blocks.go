package usbms

import (
	"context"
	"errors"
	"fmt"

	"github.com/usbflash/usbflash/internal/lib/units"
	"github.com/usbflash/usbflash/pipeline/blockdev"
	"github.com/usbflash/usbflash/scsi"
)

// ReadBlocks reads len(p)/BlockSize() blocks starting at lba. The range goes
// out as one READ when the CDB can carry it; see WriteBlocks.
func (l *LUN) ReadBlocks(ctx context.Context, lba int64, p []byte) error {
	return l.transfer(ctx, false, lba, p)
}

// WriteBlocks writes len(p)/BlockSize() blocks starting at lba. The range
// goes out as one WRITE(10) when the address fits 32 bits and the count 16
// bits, as one WRITE(16) otherwise, and is split only past what one CDB can
// carry (or past the device's block limits).
func (l *LUN) WriteBlocks(ctx context.Context, lba int64, p []byte) error {
	if l.wp {
		return &CommandError{Op: "WRITE", Device: l.t.opts.Name, LUN: l.lun, LBA: lba, Blocks: int64(len(p) / l.blockSize), Err: blockdev.ErrWriteProtected}
	}
	return l.transfer(ctx, true, lba, p)
}

func (l *LUN) transfer(ctx context.Context, write bool, lba int64, p []byte) error {
	op := "READ"
	if write {
		op = "WRITE"
	}
	bs := int64(l.blockSize)
	count := int64(len(p)) / bs
	if l.changed {
		return &CommandError{Op: op, Device: l.t.opts.Name, LUN: l.lun, LBA: lba, Blocks: count, Err: ErrMediumChanged}
	}
	if int64(len(p))%bs != 0 || lba < 0 || lba > l.blocks || count > l.blocks-lba {
		return &CommandError{Op: op, Device: l.t.opts.Name, LUN: l.lun, LBA: lba, Blocks: count,
			Err: fmt.Errorf("%d bytes at LBA %d is not whole %d-byte blocks inside the %d blocks of the medium", len(p), lba, bs, l.blocks)}
	}
	for len(p) > 0 {
		if n, err := l.queued(ctx, write, lba, p); err != nil || n > 0 {
			if err != nil {
				return err
			}
			lba += n
			p = p[n*bs:]
			continue
		}
		n, use16 := l.plan(lba, int64(len(p))/bs)
		err := l.rw(ctx, write, use16, lba, p[:n*bs])
		if use16 && scsi.IsInvalidOpcode(err) && lba+n-1 <= scsi.MaxLBA10 {
			// The device lacks the 16-byte commands: go on with (10).
			l.no16 = true
			continue
		}
		if err != nil {
			if choke := (*chokeError)(nil); errors.As(err, &choke) {
				// The same range again, at once, in smaller commands.
				// What the failed command moved is sent again whole: a
				// WRITE writes the same bytes twice, a READ fills p again.
				l.t.lowerCap(op, n*bs, choke)
				continue
			}
			return l.readsRefused(l.lastBlockRefused(err, lba, n), write, lba, n)
		}
		lba += n
		p = p[n*bs:]
	}
	return nil
}

// minQueuedPiece is the smallest command a range is cut into to keep
// several in flight: below it a command's own cost outweighs the overlap.
const minQueuedPiece = 128 << 10

// queuedCmd is one READ or WRITE of a batch in flight.
type queuedCmd struct {
	lba, n int64
	use16  bool
	p      []byte
}

// queuedRequest builds the request of c.
func (l *LUN) queuedRequest(write bool, c queuedCmd) request {
	cdb := scsi.Read10(uint32(c.lba), uint16(c.n))
	switch {
	case write && c.use16:
		cdb = scsi.Write16(uint64(c.lba), uint32(c.n), false)
	case write:
		cdb = scsi.Write10(uint32(c.lba), uint16(c.n), false)
	case c.use16:
		cdb = scsi.Read16(uint64(c.lba), uint32(c.n))
	}
	dir := DataIn
	if write {
		dir = DataOut
	}
	r := l.essential(cdb.Bytes(), dir, c.p)
	r.lun = l.lun
	return r
}

// queued moves the start of p as several READs or WRITEs in flight at
// once, when the transport is UAS with a queue depth above 1 and p holds
// at least two commands' worth; it returns the blocks it covered (0:
// nothing was sent, go on one command at a time).
func (l *LUN) queued(ctx context.Context, write bool, lba int64, p []byte) (int64, error) {
	depth := l.t.p.depth()
	bs := int64(l.blockSize)
	count := int64(len(p)) / bs
	if depth < 2 || count*bs < 2*minQueuedPiece || l.no16 {
		return 0, nil
	}
	piece := max((count+int64(depth)-1)/int64(depth), minQueuedPiece/bs)
	var cmds []queuedCmd
	at := lba
	for len(cmds) < depth && at < lba+count {
		n, use16 := l.plan(at, min(piece, lba+count-at))
		if n < 1 {
			break
		}
		off := (at - lba) * bs
		cmds = append(cmds, queuedCmd{at, n, use16, p[off : off+n*bs]})
		at += n
	}
	if len(cmds) < 2 {
		return 0, nil
	}
	if err := l.batch(ctx, write, cmds); err != nil {
		return 0, err
	}
	return at - lba, nil
}

// batch sends cmds at once and waits for all. A command of the batch that
// failed is sent again alone with the whole policy of do, so a failure is
// met as it would be without the queue; a medium change seen by any of
// them after writing began fails the range.
func (l *LUN) batch(ctx context.Context, write bool, cmds []queuedCmd) error {
	rs := make([]request, len(cmds))
	for i, c := range cmds {
		rs[i] = l.queuedRequest(write, c)
	}
	l.t.consumePortReset()
	errs := l.t.p.batch(ctx, rs)
	for i, err := range errs {
		if se, ok := scsi.AsSense(err); ok && l.wrote && scsi.IsMediumSwap(se) {
			l.changed = true
			c := cmds[i]
			return l.cmdError(rs[i], span{c.lba, c.n}, fmt.Errorf("%w: %w", ErrMediumChanged, err))
		}
	}
	for i, err := range errs {
		c := cmds[i]
		if err == nil {
			if write {
				l.wrote = true
			}
			continue
		}
		if ctx.Err() != nil {
			return l.cmdError(rs[i], span{c.lba, c.n}, ctx.Err())
		}
		// Alone, with the sense policy and the recovery ladder.
		if err := l.rw(ctx, write, c.use16, c.lba, c.p); err != nil {
			return err
		}
	}
	return nil
}

// WriteQueueDepth implements blockdev.QueuedWriter: the queue depth of a
// UAS reader, 1 over Bulk-Only.
func (l *LUN) WriteQueueDepth() int { return l.t.p.depth() }

// WriteBlocksQueued implements blockdev.QueuedWriter: bufs, which follow
// each other on the medium from lba, go as one WRITE each, all in flight
// at once (up to the queue depth a batch); it returns when every one is
// written or one failed for good, naming its blocks. A buffer that one
// command cannot carry, or a transport without a queue, is written with
// WriteBlocks, one after the other.
func (l *LUN) WriteBlocksQueued(ctx context.Context, lba int64, bufs [][]byte) error {
	depth := l.t.p.depth()
	bs := int64(l.blockSize)
	for len(bufs) > 0 {
		var cmds []queuedCmd
		at := lba
		for _, p := range bufs[:min(len(bufs), depth)] {
			count := int64(len(p)) / bs
			if l.wp || l.changed || l.no16 || int64(len(p))%bs != 0 || count == 0 || at+count > l.blocks {
				break
			}
			n, use16 := l.plan(at, count)
			if n != count {
				break
			}
			cmds = append(cmds, queuedCmd{at, n, use16, p})
			at += n
		}
		if len(cmds) < 2 {
			// WriteBlocks says what is wrong with the range, or moves it.
			if err := l.WriteBlocks(ctx, lba, bufs[0]); err != nil {
				return err
			}
			lba += int64(len(bufs[0])) / bs
			bufs = bufs[1:]
			continue
		}
		if err := l.batch(ctx, true, cmds); err != nil {
			return err
		}
		lba = at
		bufs = bufs[len(cmds):]
	}
	return nil
}

// capSteps are the command sizes a reader that fails large READs and
// WRITEs is stepped down through, in bytes: Linux's 240 sectors (what it
// sends to any USB 2 reader), MAX_SECTORS_64's 64 sectors, and one page of
// 8 (the kernel's least).
var capSteps = [...]int64{240 * 512, 64 * 512, 8 * 512}

// nextCap is the largest of capSteps below n bytes; 0 when there is none.
func nextCap(n int64) int64 {
	for _, s := range capSteps {
		if s < n {
			return s
		}
	}
	return 0
}

// lowerCap caps every later READ and WRITE of the reader below the size
// of the command that failed, and says so once per step.
func (t *Transport) lowerCap(op string, failed int64, choke *chokeError) {
	next := nextCap(failed)
	for {
		cur := t.capBytes.Load()
		if cur != 0 && cur <= next {
			return // another LUN of the reader lowered it already
		}
		if t.capBytes.CompareAndSwap(cur, next) {
			break
		}
	}
	why := choke.err.Error()
	var na *noAnswerError
	switch {
	case errors.As(choke.err, &na):
		why = fmt.Sprintf("no answer within %v", na.wait)
	case errors.Is(choke.err, ErrNoDevice):
		why = "it dropped off the bus and came back after a port reset"
	case errors.Is(choke.err, ErrPhaseError):
		why = "phase error"
	}
	t.mu.Lock()
	t.learn(0, fmt.Sprintf("%s commands of %s failed (%s): at most %s per command", op, units.FormatSize(failed), why, units.FormatSize(next)))
	t.mu.Unlock()
	t.tell(Notice{Kind: NoticeTransferCap, Failed: failed, Cap: next,
		Text: fmt.Sprintf("%s fails %s commands of %s (%s): sending at most %s per command from now on", t.opts.Name, op, units.FormatSize(failed), why, units.FormatSize(next))})
}

// TransferCap is the largest READ or WRITE sent to the reader, in bytes,
// after its quirks and its failures; 0 when nothing caps it.
func (l *LUN) TransferCap() int64 { return l.t.capBytes.Load() }

// lastBuggy is how many blocks at the end of the medium are read and
// written one per command: every USB disk gets Linux's last_sector_bug,
// since readers that fail a multi-block command touching them exist.
const lastBuggy = 8

// lastBlockRefused adds to err, when the command covered the last block
// and the reader called it out of range, that the capacity it reported may
// be one block too many (a reader that reports the count, not the last
// address).
func (l *LUN) lastBlockRefused(err error, lba, n int64) error {
	var ce *CommandError
	if lba+n != l.blocks || !scsi.IsLBAOutOfRange(err) || !errors.As(err, &ce) {
		return err
	}
	ce.Err = &detailError{msg: fmt.Sprintf("%v; the reader reported %d blocks and refuses block %d, the last: %v", ce.Err, l.blocks, l.blocks-1, ErrCapacityOffByOne), err: errors.Join(ce.Err, ErrCapacityOffByOne)}
	return err
}

// readsRefused adds to err, when a READ of blocks inside the medium was
// called out of range by a reader that called block 0 so when the LUN was
// opened, that it is a reader failing READ(10)s after a card goes in,
// which QuirkInitialRead10 repeats; nothing when that quirk is on already.
func (l *LUN) readsRefused(err error, write bool, lba, n int64) error {
	var ce *CommandError
	if write || !l.zeroRefused || l.t.opts.Quirks&QuirkInitialRead10 != 0 || lba+n >= l.blocks ||
		!scsi.IsLBAOutOfRange(err) || !errors.As(err, &ce) {
		return err
	}
	ce.Err = &detailError{msg: fmt.Sprintf("%v; the reader called block 0 out of range too when the card was opened: %v", ce.Err, ErrInitialRead10), err: errors.Join(ce.Err, ErrInitialRead10)}
	return err
}

// plan chooses how many of count blocks at lba the next command moves and
// whether it needs the 16-byte CDB.
func (l *LUN) plan(lba, count int64) (n int64, use16 bool) {
	limit := int64(scsi.MaxBlocks16)
	if l.no16 {
		limit = scsi.MaxBlocks10
	}
	// The limit the LUN tells its users (blockdev.FitTransfer fits their
	// transfers to it), then what the transport learned of the reader.
	if m := l.MaxTransfer(); m > 0 {
		limit = min(limit, m)
	}
	if c := l.t.capBytes.Load(); c > 0 {
		limit = min(limit, max(c/int64(l.blockSize), 1))
	}
	if m := l.t.p.maxDataPhase(); m > 0 {
		// The protocol's bound on one command's data (UAS: one
		// transfer).
		limit = min(limit, max(int64(m/l.blockSize), 1))
	}
	// Nothing crosses into the last blocks, and inside them one block
	// goes per command.
	if first := l.blocks - lastBuggy; lba >= first {
		limit = 1
	} else if lba+min(count, limit) > first {
		limit = first - lba
	}
	n = min(count, limit)
	if n <= scsi.MaxBlocks10 && lba+n-1 <= scsi.MaxLBA10 {
		return n, false
	}
	if !l.no16 {
		return n, true
	}
	// Without (16), a range crossing 2^32 stops at the boundary; what is
	// past it cannot be addressed, and rw reports that.
	if lba <= scsi.MaxLBA10 {
		n = min(n, scsi.MaxLBA10+1-lba)
	}
	return n, lba > scsi.MaxLBA10
}

// rw issues one READ or WRITE. The CDB is built in the LUN's own buffer
// (a local one would escape along with the data buffer) and the data goes
// straight from p, so the hot path allocates nothing of its own.
func (l *LUN) rw(ctx context.Context, write, use16 bool, lba int64, p []byte) error {
	blocks := int64(len(p) / l.blockSize)
	switch {
	case write && use16:
		l.cdb = scsi.Write16(uint64(lba), uint32(blocks), false)
	case write:
		l.cdb = scsi.Write10(uint32(lba), uint16(blocks), false)
	case use16:
		l.cdb = scsi.Read16(uint64(lba), uint32(blocks))
	default:
		l.cdb = scsi.Read10(uint32(lba), uint16(blocks))
	}
	dir := DataIn
	if write {
		dir = DataOut
	}
	if use16 && l.no16 {
		return &CommandError{Op: l.cdb.Name(), Device: l.t.opts.Name, LUN: l.lun, LBA: lba, Blocks: blocks,
			Err: errors.New("LBA beyond 2^32 and the device does not support 16-byte commands")}
	}
	r := l.essential(l.cdb.Bytes(), dir, p)
	r.shrink = nextCap(int64(len(p))) > 0
	_, err := l.do(ctx, r, span{lba, blocks})
	if err != nil && !write && l.t.opts.Quirks&QuirkInitialRead10 != 0 && HasSense(err) {
		// A reader that fails a READ(10) now and then, the first one
		// after a card goes in above all: Linux repeats it at once.
		_, err = l.do(ctx, r, span{lba, blocks})
	}
	if err == nil && write {
		l.wrote = true
	}
	return err
}

// WriteCache reports whether the device flushes its writes with
// SYNCHRONIZE CACHE: its caching mode page says the write cache is on, or
// its quirks say it caches (QuirkWriteCache, QuirkAlwaysSync).
func (l *LUN) WriteCache() bool {
	return l.writeCache || l.t.opts.Quirks&(QuirkWriteCache|QuirkAlwaysSync) != 0
}

// Sync flushes the device's write cache with SYNCHRONIZE CACHE(10) when
// it has one (WriteCache), as Linux's sd does: a card reader whose mode
// data says nothing of a cache is sent none. Readers that do not
// implement it (ILLEGAL REQUEST) or stall it are taken as having nothing
// to flush.
func (l *LUN) Sync(ctx context.Context) error {
	if !l.WriteCache() {
		return nil
	}
	cdb := scsi.SynchronizeCache10(0, 0)
	_, err := l.do(ctx, l.essential(cdb.Bytes(), NoData, nil), span{})
	if l.t.opts.Quirks&QuirkSenseAfterSync != 0 && !errors.Is(err, ErrNoDevice) {
		// The Kindle ejects its medium unless a command follows the
		// flush within a second.
		rs := scsi.RequestSense(senseLen)
		buf := make([]byte, senseLen)
		_, _ = l.do(ctx, probe(rs.Bytes(), DataIn, buf), span{})
	}
	if scsi.IsIllegalRequest(err) || (errors.Is(err, ErrStall) && !errors.Is(err, ErrNoDevice)) {
		return nil
	}
	return err
}

// Eject allows medium removal and ejects the medium (START STOP UNIT with
// LoEj). Readers without a lock reject PREVENT ALLOW; that is ignored,
// and QuirkNotLockable readers are not sent it.
func (l *LUN) Eject(ctx context.Context) error {
	cdb := scsi.PreventAllowMediumRemoval(false)
	if l.t.opts.Quirks&QuirkNotLockable == 0 {
		if _, err := l.do(ctx, probe(cdb.Bytes(), NoData, nil), span{}); err != nil && !scsi.IsIllegalRequest(err) {
			if err := unignorable(ctx, err); err != nil {
				return err
			}
		}
	}
	cdb = scsi.StartStopUnit(false, true)
	_, err := l.do(ctx, l.essential(cdb.Bytes(), NoData, nil), span{})
	return err
}

// Learned returns what was found out about the reader so far (shared by
// its LUNs): a residue switched off, a CSW signature, commands made
// smaller.
func (l *LUN) Learned() []Learned { return l.t.Learned() }
