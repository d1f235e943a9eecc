package usbms

import (
	"fmt"
	"time"
	"unsafe"

	"github.com/usbflash/usbflash/pipeline/blockdev"
	"github.com/usbflash/usbflash/scsi"
)

// Defaults of LUNOptions.
const (
	DefaultReadyWait    = 10 * time.Second
	DefaultRetryBackoff = 100 * time.Millisecond
	// DefaultRetries is what Linux's sd allows a command (SD_MAX_RETRIES).
	DefaultRetries = 5
	// DefaultSpinUpWait and DefaultSpinUpPoll bound how long Open polls
	// a unit it sent START UNIT to, and how often, as Linux's sd does.
	DefaultSpinUpWait = 100 * time.Second
	DefaultSpinUpPoll = time.Second
)

// LUNOptions tunes a LUN. The zero value gives the defaults.
type LUNOptions struct {
	// ReadyWait bounds how long a command waits, in RetryBackoff steps,
	// while the unit reports it is becoming ready.
	ReadyWait time.Duration
	// RetryBackoff is the pause between retries on NOT READY.
	RetryBackoff time.Duration
	// Retries is how many times one command is repeated after a UNIT
	// ATTENTION, ABORTED COMMAND, HARDWARE ERROR, a MEDIUM ERROR that may
	// pass, missing sense data or an incomplete transfer.
	Retries int
	// SpinUpWait bounds how long Open polls a unit that was NOT READY
	// and was sent START UNIT; SpinUpPoll is the pause between polls.
	SpinUpWait, SpinUpPoll time.Duration
}

func (o LUNOptions) withDefaults() LUNOptions {
	if o.ReadyWait <= 0 {
		o.ReadyWait = DefaultReadyWait
	}
	if o.RetryBackoff <= 0 {
		o.RetryBackoff = DefaultRetryBackoff
	}
	if o.Retries <= 0 {
		o.Retries = DefaultRetries
	}
	if o.SpinUpWait <= 0 {
		o.SpinUpWait = DefaultSpinUpWait
	}
	if o.SpinUpPoll <= 0 {
		o.SpinUpPoll = DefaultSpinUpPoll
	}
	return o
}

// The LUN offers the engine every optional capability: its write
// protection, its transfer limit, its zero-copy buffers, and ejecting.
var (
	_ blockdev.Device          = (*LUN)(nil)
	_ blockdev.WriteProtector  = (*LUN)(nil)
	_ blockdev.TransferLimiter = (*LUN)(nil)
	_ blockdev.BufferAllocator = (*LUN)(nil)
	_ blockdev.Ejector         = (*LUN)(nil)
	_ blockdev.IOCounter       = (*LUN)(nil)
	_ blockdev.Unmapper        = (*LUN)(nil)
)

// IOCounts implements blockdev.IOCounter: the commands sent to the reader
// (every LUN of it, every attempt) and, when its Endpoint counts them too
// (usbfs does), the system calls they took.
func (l *LUN) IOCounts() blockdev.IOCounts { return l.t.IOCounts() }

// LUN is one logical unit of a mass-storage device (one slot of a card
// reader), opened for block I/O. It implements blockdev.Device.
// Its methods may be called from one goroutine at a time.
type LUN struct {
	t    *Transport
	lun  int
	opts LUNOptions

	inquiry   scsi.InquiryData
	serial    string
	limits    scsi.BlockLimits
	blockSize int
	blocks    int64
	wp        bool
	// writeCache: the caching mode page says the write cache is on.
	writeCache bool
	// reported is the block count READ CAPACITY gave, before a quirk
	// corrected it.
	reported int64

	// no16 is set once the device rejects READ(16)/WRITE(16) as an
	// unknown opcode; later commands are split into (10) variants.
	no16 bool
	// cdb holds the CDB of the READ or WRITE in flight.
	cdb scsi.CDB
	// wrote is set by the first successful WRITE: from then on, a medium
	// change is fatal instead of retried.
	wrote bool
	// changed is set when the medium changed after writing began: every
	// later READ and WRITE fails, since the card in the slot is not the one
	// the earlier blocks went to.
	changed bool
	// kind is the memory kind of the last AllocBuffers.
	kind string
	// zeroRefused: the READ of block 0 at open was called out of range;
	// lastRefused: the READ of the last block was.
	zeroRefused, lastRefused bool
	// unmap is how the LUN unmaps, once asked (unmap.go).
	unmap *unmapSupport
}

// Number returns the LUN number.
func (l *LUN) Number() int { return l.lun }

// BlockSize returns the logical block size in bytes.
func (l *LUN) BlockSize() int { return l.blockSize }

// BlockCount returns the number of logical blocks.
func (l *LUN) BlockCount() int64 { return l.blocks }

// Inquiry returns the standard INQUIRY data: device type, removable bit,
// vendor, product and revision.
func (l *LUN) Inquiry() scsi.InquiryData { return l.inquiry }

// Serial returns the unit serial number from VPD page 0x80, or "" when the
// device offers none.
func (l *LUN) Serial() string { return l.serial }

// WriteProtected reports whether MODE SENSE said the medium is
// write-protected. It is false when the device would not say.
func (l *LUN) WriteProtected() bool { return l.wp }

// MaxTransfer returns the largest transfer in blocks the device accepts in
// one command (VPD block limits), or 0 when unknown.
func (l *LUN) MaxTransfer() int64 { return int64(l.limits.MaxTransfer) }

// OptimalTransfer returns the transfer length in blocks the device prefers,
// or 0 when unknown.
func (l *LUN) OptimalTransfer() int64 { return int64(l.limits.OptimalTransfer) }

// pageSize is the alignment of the fallback buffers: what O_DIRECT and DMA
// ask for, and a whole number of blocks.
const pageSize = 4096

// AllocBuffers returns count buffers of size bytes each, allocated once, that WriteBlocks
// and ReadBlocks send from and read into without a copy where the device allows it. kind
// names the memory for users: "usbfs zero-copy" or "page-aligned". The buffers stay
// valid until free is called; the caller calls free before closing the device.
//
// The Endpoint provides them when it is a BufferAllocator; otherwise they
// are page-aligned Go memory. WriteBlocks and ReadBlocks accept any memory;
// only these buffers avoid the backend's copy.
func (l *LUN) AllocBuffers(count, size int) (bufs [][]byte, kind string, free func(), err error) {
	if count <= 0 || size <= 0 {
		return nil, "", nil, fmt.Errorf("usbms: %s: %d buffers of %d bytes: both must be positive", l.t.opts.Name, count, size)
	}
	if a, ok := l.t.ep.(BufferAllocator); ok {
		bufs, kind, free, err = a.AllocBuffers(count, size)
		if err != nil {
			return nil, "", nil, fmt.Errorf("usbms: %s: %w", l.t.opts.Name, err)
		}
		l.kind = kind
		return bufs, kind, free, nil
	}
	l.kind = MemoryPageAligned
	return alignedBuffers(count, size), MemoryPageAligned, func() {}, nil
}

// MemoryKind names the memory AllocBuffers gave (or, before it is called,
// would give): MemoryZeroCopy or MemoryPageAligned.
func (l *LUN) MemoryKind() string {
	if l.kind != "" {
		return l.kind
	}
	if a, ok := l.t.ep.(BufferAllocator); ok {
		return a.MemoryKind()
	}
	return MemoryPageAligned
}

// alignedBuffers cuts count buffers of size bytes, each starting on a page,
// from one allocation.
func alignedBuffers(count, size int) [][]byte {
	stride := (size + pageSize - 1) / pageSize * pageSize
	mem := make([]byte, count*stride+pageSize)
	skip := 0
	if r := int(uintptr(unsafe.Pointer(unsafe.SliceData(mem))) % pageSize); r != 0 {
		skip = pageSize - r
	}
	bufs := make([][]byte, count)
	for i := range bufs {
		o := skip + i*stride
		bufs[i] = mem[o : o+size : o+size]
	}
	return bufs
}
