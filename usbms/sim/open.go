package sim

import (
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"syscall"

	"github.com/usbflash/usbflash/internal/failure"
	"github.com/usbflash/usbflash/internal/lib/flock"
)

// Open builds a device from the CLI target syntax
//
//	sim:PATH[?OPTION=VALUE[&OPTION=VALUE...]]
//
// (the "sim:" prefix is optional). The file at PATH is the card: it is
// opened read-write (read-only, as a write-protected card, when the system
// will not let this process write it) and its size is the capacity, which
// must be a positive multiple of the block size. Options:
//
//	size=64MiB          create PATH, or extend it, to this size (sparse); an
//	                    existing larger file is refused, never shrunk
//	block=512|4096      logical block size (default 512)
//	speed=30MB/s        wire speed of data phases (default unlimited)
//	latency=1ms         added to every command (Go duration; default 0)
//	write-speed=10MB/s  wire speed of data-out phases (default: speed)
//	page=16KiB          READ and WRITE take the data time of whole pages
//	au=4MiB             erase (allocation) unit: with au-cost, a READ pays
//	au-cost=2ms         au-cost per unit boundary it straddles, a WRITE per
//	                    unit it covers in part (default au-cost: 2ms)
//	luns=N              number of LUNs, 1-16 (default 1); LUN k>=1 is the file
//	                    PATH.lunK if it exists (its size is its capacity),
//	                    otherwise sparse memory the size of LUN 0, lost at Close
//	wp=1                every LUN write-protected (files opened read-only)
//	nomedium=1          every LUN an empty slot (2/3A/00)
//	removable=0|1       INQUIRY RMB bit (default 1: a card reader)
//	serial=S            USB serial and VPD 0x80 serial (LUN k>=1: S-k)
//	vendor=, product=, revision=   INQUIRY identity
//	maxlun-stall=1      Get Max LUN stalls, as on many one-slot readers
//	reject-sync=1       SYNCHRONIZE CACHE answers 5/20/00
//	reject-modesense=1  MODE SENSE answers 5/20/00
//	max-transfer=N      VPD 0xB0 maximum transfer length in blocks
//	optimal-transfer=N  VPD 0xB0 optimal transfer length in blocks
//	unmap=unmap         VPD 0xB2 offers UNMAP and WRITE SAME(16) with UNMAP
//	                    (unmapped blocks read as zeros); writesame: only
//	                    the latter; refuse: UNMAP offered and refused
//	fault=KIND[:K=V,...]  inject a fault at start; repeatable
//	fake=wrap|drop|garbage|unreadable  a fake card whose flash is only real= bytes
//	real=SIZE           with fake=: the flash behind the claimed size
//	fake-cache=SIZE     with fake=: keeps the last writes past real= (see Fake)
//	write-back=SIZE     a controller's write-back cache that its own timer
//	write-back-every=N  flushes every N READs and WRITEs (default 32), never
//	                    SYNCHRONIZE CACHE (see WriteBack)
//	vid=, pid=, bcd=    USB identity (hex) the host's quirk table is searched by
//	quirks=FLAGS        quirk flags given for this reader, passed to the host
//	clock=virtual       nothing sleeps: the speed model runs on Stats.ModelTime
//	choke=BLOCKS[:hang|stall|disconnect], residue=over|garbage|length,
//	csw-signature=XXXX, csw-in-data=1, maxlun=hang|error|N, ignore-lun=1,
//	sense=recovered|empty|hwerror|garbage[:count=N|every],
//	not-ready=ASC.ASCQ[:until-start|:count=N], hang=COMMAND[,COMMAND...],
//	mode-placeholder=1, last-sector-bug=N, capacity-off-by-one=1,
//	write-cache=1, reset-settle=DURATION, initial-read10=N
//	                    misbehaviours of real readers (see Misbehaviour)
//	uas=only|both       a USB Attached SCSI interface (08/06/62): alone, as
//	                    QEMU's usb-uas, or beside Bulk-Only (SelectUAS picks)
//	streams=N           UAS bulk streams (SuperSpeed, stream ID = tag);
//	                    0 (default): high speed, READ/WRITE READY IUs
//	uas-overlap=N, uas-response=N, uas-no-ready=N, uas-abort=fail
//	                    the Nth command answered "overlapped tag" or
//	                    "invalid IU", or its data phase never announced;
//	                    ABORT TASK fails (see UASConfig)
//
// Fault kinds are stall-out, stall-in, stall-csw, bad-csw-signature,
// bad-csw-tag, phase-error, short-in, unit-attention, not-ready,
// medium-error, disconnect, never-answer and corrupt (a WRITE of block
// lba= stores it inverted and succeeds); their parameters are lun=N,
// count=N, lba=N, after=SIZE and persistent (or persistent=1), as in
// fault=medium-error:lba=2048, fault=disconnect:after=1MiB,
// fault=not-ready:count=3, fault=stall-out:after=64KiB,count=2.
//
// Every file is locked (flock) until Close, exclusively: a second Open of
// the same card, in this process or another, fails with ErrLocked.
func Open(spec string) (*Device, error) { return open(spec, false) }

// OpenReadOnly is Open for a reader that never writes (verify, info, read,
// bench): the files are opened read-only and locked shared, so a card whose
// file the user may not write can still be read. Nothing is written or
// extended: size= makes a card that does not exist, blank, and must
// otherwise be no larger than the file.
func OpenReadOnly(spec string) (*Device, error) { return open(spec, true) }

func open(spec string, readOnly bool) (*Device, error) {
	o, path, err := parseSpec(spec)
	if err != nil {
		return nil, err
	}
	var closers []io.Closer
	fail := func(err error) (*Device, error) {
		for _, c := range closers {
			c.Close()
		}
		return nil, err
	}
	card, capacity, cardWP, err := openCard(path, o.size, int64(o.block), o.wp, readOnly)
	if err != nil {
		return fail(err)
	}
	closers = append(closers, card)
	fake, isFake, err := o.fake.fake(capacity, int64(o.block))
	if err != nil {
		return fail(&SpecError{Spec: spec, Err: err}) // real= past the card file's size
	}
	cfg := Config{
		StallGetMaxLUN: o.stallMaxLUN, Speed: o.speed, Latency: o.latency,
		WriteSpeed: o.writeSpeed, Page: o.page, AllocationUnit: o.au, AUCost: o.auCost,
		Serial: o.serial, Product: o.product,
	}
	o.reader.apply(&cfg)
	for k := range o.luns {
		l := LUN{
			BlockSize: o.block, Blocks: capacity / int64(o.block),
			WriteProtected: o.wp || (k == 0 && cardWP), NoMedium: o.nomedium, Removable: o.removable,
			Vendor: o.vendor, Product: o.product, Revision: o.revision,
			RejectModeSense: o.rejectModeSense, RejectSyncCache: o.rejectSync,
			MaxTransferBlocks: o.maxTransfer, OptimalTransferBlocks: o.optimalTransfer, Unmap: o.unmap,
		}
		if k == 0 {
			l.Medium = card
		} else if extra, size, wp, err := openExtraLUN(fmt.Sprintf("%s.lun%d", path, k), int64(o.block), o.wp, readOnly); err != nil {
			return fail(err)
		} else if extra != nil {
			closers = append(closers, extra)
			l.Medium, l.Blocks = extra, size/int64(o.block)
			l.WriteProtected = l.WriteProtected || wp
		}
		if isFake {
			l.Medium = fakeLUN(l, fake)
		}
		if o.writeBack.size > 0 {
			if l.Medium == nil {
				l.Medium = NewMemory(l.Blocks * int64(l.BlockSize))
			}
			l.Medium = o.writeBack.wrap(l.Medium, int64(o.block))
		}
		cfg.LUNs = append(cfg.LUNs, l)
	}
	d, err := New(cfg)
	if err != nil {
		return fail(&SpecError{Spec: spec, Err: err})
	}
	d.closers = closers
	for _, f := range o.faults {
		d.Inject(f)
	}
	return d, nil
}

// CardError is Open's refusal of a card file: what the file is and why it
// cannot be the card. It states facts only.
type CardError struct {
	Path     string
	Kind     error  // one of CardKinds
	What     string // the facts, as in "is 1000 bytes: ..."
	FileSize int64  // the file's size in bytes, when it exists
	Block    int64  // the block size the card must be a multiple of
}

func (e *CardError) Error() string { return fmt.Sprintf("sim: %s %s", e.Path, e.What) }
func (e *CardError) Unwrap() error { return e.Kind }

// Class is Usage: the card file and its size are the caller's.
func (e *CardError) Class() failure.Class { return failure.Usage }

// ErrLocked is matched by Open's refusal of a card another Device (in
// this process or another) holds open: the lock usbflash takes on every
// target it opens.
var ErrLocked = flock.ErrLocked

// Kinds of CardError: why a file cannot be the card, each a sentinel of
// class Usage that errors.Is finds through the refusal.
var (
	// ErrCardNeedsSize: the file does not exist, and no size= was given to
	// create it.
	ErrCardNeedsSize = failure.New(failure.Usage, "no size to create the card with")
	// ErrCardWouldShrink: the file is larger than size=, and is never shrunk.
	ErrCardWouldShrink = failure.New(failure.Usage, "larger than size=")
	// ErrCardBadSize: the file's size is not a positive multiple of the
	// block size.
	ErrCardBadSize = failure.New(failure.Usage, "not whole blocks")
	// ErrCardShortReadOnly: the file is smaller than size=, and may not be
	// extended (a read-only command, or a file the system will not let
	// this process write).
	ErrCardShortReadOnly = failure.New(failure.Usage, "smaller than size=, and read-only")
	// ErrCardNotAFile: the path is a directory.
	ErrCardNotAFile = failure.New(failure.Usage, "not a file")
	// ErrCardNoDirectory: the file does not exist, and its directory does
	// not either, so size= cannot create it.
	ErrCardNoDirectory = failure.New(failure.Usage, "no directory to create the card in")
)

// CardKinds lists every kind of CardError, for tables keyed by them.
func CardKinds() []error {
	return []error{ErrCardNeedsSize, ErrCardWouldShrink, ErrCardBadSize, ErrCardShortReadOnly, ErrCardNotAFile, ErrCardNoDirectory}
}

// openCard opens (and with size > 0 creates or extends) the file behind
// LUN 0, locks it, and returns its capacity in bytes. A write-protected
// card is opened read-only unless it is to be created or extended; with
// readOnly nothing is created or extended, and the lock is shared. A card
// file the system will not let this process write (no permission, an
// immutable file, a read-only file system) is opened read-only all the
// same and is write-protected (wp): a card with its lock switch set, as a
// file: target is.
func openCard(path string, size, block int64, wp, readOnly bool) (f *os.File, capacity int64, protected bool, err error) {
	flag := os.O_RDWR
	switch {
	case readOnly:
		flag = os.O_RDONLY
	case size > 0:
		flag |= os.O_CREATE
	case wp:
		flag = os.O_RDONLY
	}
	if readOnly && size > 0 {
		// A card named with its size is made, blank, for any command:
		// reading a blank card is a fine thing to do. It is never extended.
		if err := createBlank(path, size); err != nil {
			return nil, 0, false, err
		}
	}
	f, err = os.OpenFile(path, flag, 0o644)
	if err != nil && flag&os.O_RDWR != 0 && refusesWrites(err) {
		if ro, rerr := os.OpenFile(path, os.O_RDONLY, 0); rerr == nil {
			f, err, protected = ro, nil, true
		}
	}
	if errors.Is(err, fs.ErrNotExist) && size > 0 {
		return nil, 0, false, &CardError{Path: path, Kind: ErrCardNoDirectory, What: fmt.Sprintf("cannot be created: directory %s does not exist", filepath.Dir(path))}
	}
	if errors.Is(err, fs.ErrNotExist) {
		return nil, 0, false, &CardError{Path: path, Kind: ErrCardNeedsSize, What: "does not exist, and no size= was given to create it"}
	}
	if errors.Is(err, syscall.EISDIR) {
		return nil, 0, false, &CardError{Path: path, Kind: ErrCardNotAFile, What: "is a directory"}
	}
	if err != nil {
		return nil, 0, false, fmt.Errorf("sim: open card: %w", err)
	}
	if err := flock.Lock(f, !readOnly); err != nil {
		f.Close()
		return nil, 0, false, fmt.Errorf("sim: card %w", err)
	}
	have, err := f.Seek(0, io.SeekEnd)
	if err != nil {
		f.Close()
		return nil, 0, false, fmt.Errorf("sim: size of %s: %w", path, err)
	}
	if size > 0 && have > size {
		f.Close()
		return nil, 0, false, &CardError{Path: path, Kind: ErrCardWouldShrink, FileSize: have, Block: block,
			What: fmt.Sprintf("is %d bytes, larger than size=%d: refusing to shrink it", have, size)}
	}
	if size > have && (readOnly || protected) {
		f.Close()
		return nil, 0, false, &CardError{Path: path, Kind: ErrCardShortReadOnly, FileSize: have, Block: block,
			What: fmt.Sprintf("is %d bytes, smaller than size=%d, and is opened read-only", have, size)}
	}
	if size > have {
		if err := f.Truncate(size); err != nil {
			f.Close()
			return nil, 0, false, fmt.Errorf("sim: extend %s to %d bytes: %w", path, size, err)
		}
		have = size
	}
	if have <= 0 || have%block != 0 {
		f.Close()
		return nil, 0, false, &CardError{Path: path, Kind: ErrCardBadSize, FileSize: have, Block: block,
			What: fmt.Sprintf("is %d bytes: a card must be a positive multiple of the %d-byte block", have, block)}
	}
	return f, have, protected, nil
}

// createBlank makes the file path of size bytes (sparse) unless it exists.
func createBlank(path string, size int64) error {
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o644)
	if errors.Is(err, fs.ErrExist) {
		return nil
	}
	if errors.Is(err, fs.ErrNotExist) {
		return nil // no directory: the open that follows says so
	}
	if err != nil {
		return fmt.Errorf("sim: create %s: %w", path, err)
	}
	err = f.Truncate(size)
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		os.Remove(path)
		return fmt.Errorf("sim: create %s of %d bytes: %w", path, size, err)
	}
	return nil
}

// refusesWrites says whether err, from opening a file for writing, is the
// system refusing to write it: no permission, an immutable file (EACCES,
// EPERM), a read-only file system (EROFS).
func refusesWrites(err error) bool {
	return errors.Is(err, fs.ErrPermission) || errors.Is(err, syscall.EROFS)
}

// openExtraLUN opens PATH.lunK when it exists; nil when it does not, so
// the LUN falls back to memory.
func openExtraLUN(path string, block int64, wp, readOnly bool) (*os.File, int64, bool, error) {
	if _, err := os.Stat(path); errors.Is(err, fs.ErrNotExist) {
		return nil, 0, false, nil
	}
	return openCard(path, 0, block, wp, readOnly)
}
