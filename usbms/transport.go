package usbms

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"usbflash/scsi"
)

// Defaults of TransportOptions.
const (
	// DefaultChunkSize keeps each bulk transfer under Linux usbfs's default
	// 16 MiB cap on URB memory in flight.
	DefaultChunkSize = 8 << 20
	// DefaultTimeout is the base time a command may take; TimeoutPerMiB is
	// added per MiB of data, since slow cards write 1-2 MB/s and a 32 MiB
	// WRITE must not be cut short.
	DefaultTimeout       = 20 * time.Second
	DefaultTimeoutPerMiB = time.Second
	// DefaultResetTimeout bounds each step of reset recovery.
	DefaultResetTimeout = 5 * time.Second
	// DefaultMaxResets is how many Bulk-Only resets one command may cause
	// before the port is reset.
	DefaultMaxResets = 2
)

// TransportOptions tunes a Transport. The zero value gives the defaults.
type TransportOptions struct {
	// Name identifies the device in error messages, e.g. "usb:46f4:0001".
	Name string
	// ChunkSize is the largest single bulk transfer; a larger data phase is
	// split into several.
	ChunkSize int
	// Timeout and TimeoutPerMiB bound one attempt of one command.
	Timeout, TimeoutPerMiB time.Duration
	// ResetTimeout bounds each step of reset recovery.
	ResetTimeout time.Duration
	// MaxResets is the number of Bulk-Only resets per command before a port
	// reset; negative means none.
	MaxResets int
	// OnRecovery, when set, is told each recovery step before it is
	// taken, in a few words ("no answer for 20s: resetting the reader
	// (reset 1 of 2)"). It is called with the transport locked and must
	// not call back into it.
	OnRecovery func(step string)
}

// Transport runs commands over Bulk-Only Transport on one Endpoint. It is
// safe for concurrent use; commands are serialised, as BOT requires.
type Transport struct {
	ep   Endpoint
	opts TransportOptions

	mu    sync.Mutex // serialises commands; guards the fields below
	tag   uint32
	cbw   [cbwLen]byte
	csw   [cswLen]byte
	sense [senseLen]byte
}

// NewTransport returns a Transport that speaks BOT over ep.
func NewTransport(ep Endpoint, opts TransportOptions) *Transport {
	if opts.Name == "" {
		opts.Name = "device"
	}
	if opts.ChunkSize <= 0 {
		opts.ChunkSize = DefaultChunkSize
	}
	if opts.Timeout <= 0 {
		opts.Timeout = DefaultTimeout
	}
	if opts.TimeoutPerMiB <= 0 {
		opts.TimeoutPerMiB = DefaultTimeoutPerMiB
	}
	if opts.ResetTimeout <= 0 {
		opts.ResetTimeout = DefaultResetTimeout
	}
	if opts.MaxResets == 0 {
		opts.MaxResets = DefaultMaxResets
	}
	return &Transport{ep: ep, opts: opts}
}

// Name returns the device name used in messages.
func (t *Transport) Name() string { return t.opts.Name }

// Class-specific requests (BOT 3.1, 3.2).
const (
	reqMassStorageReset = 0xFF
	reqGetMaxLUN        = 0xFE
)

// MaxLUN returns the highest LUN number of the device. Devices with a single
// LUN may stall the request; that means 0.
func (t *Transport) MaxLUN(ctx context.Context) (int, error) {
	t.mu.Lock()
	defer t.mu.Unlock()
	var b [1]byte
	ctx, cancel := context.WithTimeout(ctx, t.opts.ResetTimeout)
	defer cancel()
	n, err := t.ep.ClassRequest(ctx, true, reqGetMaxLUN, 0, b[:])
	switch {
	case errors.Is(err, ErrStall):
		return 0, nil
	case err != nil:
		return 0, fmt.Errorf("the GET MAX LUN request: %w", t.transportError(err))
	case n < 1 || b[0] > 15:
		// Linux treats a missing or impossible answer as one LUN too.
		return 0, nil
	}
	return int(b[0]), nil
}

// Reset performs Bulk-Only reset recovery: Mass Storage Reset, then clearing
// the halt on bulk-IN and bulk-OUT.
func (t *Transport) Reset(ctx context.Context) error {
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.resetRecovery(ctx)
}

// Exec runs one SCSI command on lun with the full recovery ladder and
// returns how many bytes of data are valid. When the device reports the
// command failed, Exec fetches sense data and returns it as a
// *scsi.SenseError; it does not repeat commands on sense conditions, which
// is the caller's policy.
func (t *Transport) Exec(ctx context.Context, lun int, cdb []byte, dir Direction, data []byte) (int, error) {
	n, err := t.exec(ctx, request{lun: lun, cdb: cdb, dir: dir, data: data, maxResets: t.opts.MaxResets, portReset: true})
	if err != nil {
		if _, ok := scsi.AsSense(err); !ok {
			err = fmt.Errorf("usbms: %s on %s LUN %d: %w", opName(cdb), t.opts.Name, lun, err)
		}
	}
	return n, err
}

// request is one command and how hard to try.
type request struct {
	lun       int
	cdb       []byte
	dir       Direction
	data      []byte
	maxResets int  // Bulk-Only resets before giving up or resetting the port
	portReset bool // a port reset is allowed as the last resort
}

func (t *Transport) exec(ctx context.Context, r request) (int, error) {
	if err := r.check(); err != nil {
		return 0, err
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	res, err := t.run(ctx, r)
	if err != nil {
		return 0, err
	}
	if res.status == statusFailed {
		return res.n, t.requestSense(ctx, r)
	}
	return res.n, nil
}

func (r request) check() error {
	switch {
	case r.lun < 0 || r.lun > 15:
		return fmt.Errorf("usbms: LUN %d out of range 0-15", r.lun)
	case len(r.cdb) < 1 || len(r.cdb) > maxCDBLen:
		return fmt.Errorf("usbms: CDB of %d bytes, want 1 to %d", len(r.cdb), maxCDBLen)
	case uint64(len(r.data)) > 0xFFFFFFFF:
		return fmt.Errorf("usbms: data phase of %d bytes exceeds BOT's 32-bit length", len(r.data))
	case r.dir > DataOut:
		return fmt.Errorf("usbms: unknown data direction %d", r.dir)
	case r.dir == NoData && len(r.data) > 0:
		return errors.New("usbms: data buffer given for a command without data phase")
	}
	return nil
}

// timeout is the time one attempt of a command moving n bytes may take.
func (t *Transport) timeout(n int) time.Duration {
	return t.opts.Timeout + time.Duration(n>>20)*t.opts.TimeoutPerMiB
}

// transportError words an endpoint failure for the user. A vanished device
// gets its own sentence since nothing but reconnecting helps.
func (t *Transport) transportError(err error) error {
	if errors.Is(err, ErrNoDevice) {
		// The backend's own wording names the device, which the callers
		// name already.
		return &detailError{msg: "device disconnected", err: err}
	}
	return err
}
