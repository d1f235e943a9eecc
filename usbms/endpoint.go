package usbms

import (
	"context"
	"time"

	"github.com/usbflash/usbflash/internal/failure"
	"github.com/usbflash/usbflash/pipeline/blockdev"
	"github.com/usbflash/usbflash/usbms/usbdev"
)

// Endpoint is what Bulk-Only Transport needs from USB and nothing more: the
// pair of bulk endpoints of one mass-storage interface, class requests to that
// interface, clearing an endpoint halt, and a port reset.
//
// Transfers honour ctx: a transfer still pending when ctx is done is cancelled
// and returns an error wrapping ctx.Err().
type Endpoint interface {
	// BulkOut sends p on the bulk-OUT endpoint and reports how many bytes the
	// device accepted.
	BulkOut(ctx context.Context, p []byte) (int, error)
	// BulkIn reads up to len(p) bytes from the bulk-IN endpoint. A short
	// packet ends the transfer early; n says how much arrived.
	BulkIn(ctx context.Context, p []byte) (int, error)
	// ClassRequest sends a class-specific control request whose recipient is
	// the mass-storage interface (bmRequestType 0xA1 when in, 0x21 when out;
	// wIndex is the interface number).
	ClassRequest(ctx context.Context, in bool, request uint8, value uint16, data []byte) (int, error)
	// ClearHalt clears ENDPOINT_HALT on the bulk-IN (in) or bulk-OUT endpoint
	// and resets the host's data toggle for it, as USB 2.0 9.4.5 requires.
	ClearHalt(ctx context.Context, in bool) error
	// ResetPort resets the USB port and re-opens the interface. It is the
	// last step of recovery: the device re-enumerates.
	ResetPort(ctx context.Context) error
}

// Errors an Endpoint reports, matched with errors.Is. Implementations wrap
// them with detail.
var (
	// ErrStall means the endpoint answered with a STALL handshake.
	ErrStall = failure.New(failure.Device, "endpoint stalled")
	// ErrNoDevice means the device is gone (unplugged or re-enumerated).
	// It is the USB vocabulary's (usbdev), as os.ErrNotExist is fs's.
	ErrNoDevice = usbdev.ErrNoDevice
)

// Memory kinds, as AllocBuffers names them.
const (
	// MemoryZeroCopy is usbfs DMA memory: the kernel sends it as it is.
	MemoryZeroCopy = "usbfs zero-copy"
	// MemoryPageAligned is ordinary memory aligned to a page, allocated
	// once; the kernel copies each transfer.
	MemoryPageAligned = "page-aligned"
)

// BufferAllocator is an optional interface of an Endpoint whose transfers
// can use memory it hands out without copying it (the libusb backend's
// usbfs DMA memory). LUN.AllocBuffers uses it when the Endpoint has it and
// falls back to page-aligned Go memory when not (the simulator, whose
// transfers are plain copies anyway). The seam is at the Endpoint because
// that is where the memory is mapped and where a transfer tells it from
// other memory.
type BufferAllocator interface {
	// AllocBuffers returns count buffers of size bytes each; BulkOut and
	// BulkIn given (parts of) them move the data without a copy where
	// the device allows it. kind is MemoryZeroCopy or MemoryPageAligned.
	// The buffers stay valid until free is called.
	AllocBuffers(count, size int) (bufs [][]byte, kind string, free func(), err error)
	// MemoryKind is the kind AllocBuffers gives, as far as is known
	// before asking.
	MemoryKind() string
}

// DeadlineSetter is an optional interface of an Endpoint that bounds its
// bulk transfers by a deadline of its own, as net.Conn does. The Transport
// then sets each command's deadline instead of deriving a timeout context
// per command, so a command allocates nothing. A transfer still pending at
// the deadline is cancelled and returns an error wrapping
// context.DeadlineExceeded. The zero time means no deadline.
type DeadlineSetter interface {
	SetDeadline(t time.Time)
}

// Sleeper is an optional interface of an Endpoint whose time is modelled
// (the simulator's clock): the pauses the host makes between commands (a
// unit becoming ready, a reader settling after a reset) go through it, so
// they count on the device's clock and, on a virtual clock, take no time.
type Sleeper interface {
	Sleep(ctx context.Context, d time.Duration) error
}

// IOCounts are blockdev.IOCounts, named here so that a backend counts in
// them without importing the engine's seam.
type IOCounts = blockdev.IOCounts

// IOCounter is an optional interface of an Endpoint that counts what its
// transfers ask of the kernel (the usbfs backend does); the Transport adds
// its commands and the LUN hands them to the engine (blockdev.IOCounter).
type IOCounter = blockdev.IOCounter
