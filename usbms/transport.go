package usbms

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"time"

	"github.com/usbflash/usbflash/internal/failure"
	"github.com/usbflash/usbflash/pipeline/blockdev"
	"github.com/usbflash/usbflash/scsi"
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
	// DefaultResetSettle is how long a reader is left alone after a
	// Bulk-Only Mass Storage Reset, as Linux's usb-storage leaves it:
	// some readers are still resetting when the next command comes.
	DefaultResetSettle = 6 * time.Second
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
	// ResetSettle is the pause after a Mass Storage Reset before the
	// halts are cleared and the next command goes; 0 means
	// DefaultResetSettle, negative none.
	ResetSettle time.Duration
	// OnRecovery, when set, is told each recovery step before it is
	// taken, in a few words ("no answer for 20s: resetting the reader
	// (reset 1 of 2)"). It is called with the transport locked and must
	// not call back into it.
	OnRecovery func(step string)
	// OnNotice, when set, is told every Notice (recovery steps, and what
	// was learned about the reader) instead of OnRecovery. It may be
	// called with the transport locked and must not call back into it.
	OnNotice func(Notice)
	// Quirks are the reader's quirk flags (package drive chooses them).
	Quirks Quirks
	// Inquiry is the identity a LUN reports without asking when Quirks
	// has QuirkFixInquiry (the kernel makes it from its table and the
	// bcdDevice); a direct-access device when left empty.
	Inquiry scsi.InquiryData
	// CommandSet is the interface's command set (its subclass).
	CommandSet CommandSet
	// QueueDepth is how many READs or WRITEs a UAS transport keeps in
	// flight at once (DefaultUASQueueDepth when 0; 1: one at a time; a
	// range is cut into that many commands).
	// Bulk-Only Transport has one.
	QueueDepth int
	// UASPassedOver says why Bulk-Only is driven where the reader also
	// offers UAS (Choice.Why); "" when it was not offered or is driven.
	UASPassedOver string
	// BothOffered: the reader offers Bulk-Only and UAS (Choice.Both).
	BothOffered bool
}

// CommandSet is the command set an interface's subclass names, which
// decides how CDBs go out.
type CommandSet uint8

// Command sets over Bulk-Only Transport.
const (
	// SetSCSI is SCSI transparent (subclass 06) and RBC (01): CDBs go out
	// as they are.
	SetSCSI CommandSet = iota
	// SetATAPI is SFF-8020i (02), QIC-157 (03) and SFF-8070i (05): CDBs
	// padded to 12 bytes, LUN 0 only, MODE SENSE(10), as Linux drives
	// them.
	SetATAPI
)

// Notice is what a transport or a LUN tells its user while it works.
type Notice struct {
	Kind NoticeKind
	Text string // the facts, in a few words
	// Failed and Cap, for NoticeTransferCap: the size of the command
	// that failed and the largest command sent from now on, in bytes.
	Failed, Cap int64
	// USBID is the reader's "VID:PID" when whoever passes the notice on
	// knows it (package drive does); "" otherwise.
	USBID string
	// Setting, for NoticeSetting: the setting that does less than it
	// asks, named in Text as it is here.
	Setting failure.Setting
	// Step, for NoticeRecovery: which step of the ladder is taken.
	Step RecoveryStep
}

// RecoveryStep names a step of the recovery ladder: each is followed by
// the command again (a retry), so a count of them is a count of retries.
type RecoveryStep string

// The steps.
const (
	// StepReset is a Bulk-Only Mass Storage Reset and clearing both
	// bulk endpoints' halts.
	StepReset RecoveryStep = "reset"
	// StepPortReset is a reset of the reader's USB port (it
	// re-enumerates), after resets did not help or when it dropped off.
	StepPortReset RecoveryStep = "port_reset"
	// StepLUNReset is a UAS LOGICAL UNIT RESET, when an ABORT TASK was
	// not confirmed.
	StepLUNReset RecoveryStep = "lun_reset"
)

func (n Notice) String() string { return n.Text }

// NoticeKind says what a Notice is about.
type NoticeKind int

// Kinds of Notice.
const (
	// NoticeRecovery is a step of the recovery ladder, about to be taken.
	NoticeRecovery NoticeKind = iota
	// NoticeTransferCap says the reader failed a large READ or WRITE and
	// that smaller commands are sent from now on.
	NoticeTransferCap
	// NoticeOneMedium says two LUNs of the reader answer for one medium:
	// it ignores the LUN field (Linux's SINGLE_LUN readers), and one LUN
	// is used.
	NoticeOneMedium
	// NoticeSetting says a setting (Notice.Setting) does nothing on this
	// reader, or less than it asks, and why.
	NoticeSetting
)

// Learned is something found out about a device while driving it, which
// changes how it is driven for the rest of the session.
type Learned struct {
	Flag Quirks // the flag now in force; 0 when none names it
	What string // the facts
}

// Transport carries SCSI commands to one reader over one Endpoint, by the
// protocol the Endpoint was opened in: Bulk-Only Transport (BOT, bot.go)
// or USB Attached SCSI (UAS, uas.go). It holds what the two share: the
// lock that serialises commands, the recovery ladder every command climbs
// when it fails (recovery.go), the cap on READ and WRITE sizes a failing
// reader is stepped down to, what was learned about the reader, and the
// notices. What differs goes through its protocol. It is safe for
// concurrent use; commands are serialised.
type Transport struct {
	ep   Endpoint
	opts TransportOptions
	// p is the protocol, BOT or UAS, chosen by NewTransport from the
	// Endpoint and fixed for the Transport's life.
	p protocol

	mu  sync.Mutex // serialises commands; guards the fields below and p's state
	pad [16]byte   // a CDB padded to 12 bytes (SetATAPI)
	// learned is what the transport found out about the device.
	learned []Learned
	// portResetDone is set when the ladder reset the port, for the UNIT
	// ATTENTION that follows (consumePortReset).
	portResetDone bool

	// commands are the attempts sent to the device, counted under mu.
	commands int64

	// capBytes is the largest READ or WRITE sent to the device, in bytes;
	// 0: no cap. QuirkMaxSectors64 starts it at 32 KiB; a reader that
	// fails a large command lowers it (LUN.transfer). Shared by the LUNs.
	capBytes atomic.Int64
}

// protocol is one of the two ways a Transport moves a SCSI command: the
// seam between what Bulk-Only Transport (botTransport) and USB Attached
// SCSI (uasTransport) do differently. Each keeps its own state; neither
// knows the other. attempt, senseOf and recover are called with
// Transport.mu held; maxLUN and batch take it themselves.
type protocol interface {
	// attempt runs one command once, with the recoveries the protocol
	// allows without the ladder; any other failure is the ladder's.
	attempt(ctx context.Context, r request) (result, error)
	// senseOf says why r ended with status failed, as a
	// *scsi.SenseError or an error wrapping errNoSenseData: BOT asks
	// REQUEST SENSE, UAS had the sense with the status.
	senseOf(ctx context.Context, r request) error
	// recover readies the reader for the next command after a failed
	// attempt: BOT's reset recovery; UAS ends the command that failed
	// (ABORT TASK, then LOGICAL UNIT RESET).
	recover(ctx context.Context) error
	// maxLUN asks the reader its highest LUN: BOT's Get Max LUN, UAS's
	// REPORT LUNS. A reader that will not say has one LUN; only a
	// vanished device or ctx ending is an error.
	maxLUN(ctx context.Context) (int, error)
	// info says how the reader is driven.
	info() TransportInfo
	// depth is how many READs or WRITEs go in flight at once (1: one at
	// a time).
	depth() int
	// depthWhy says, in the queue depth setting's words, why depth is
	// less than asked.
	depthWhy(asked int) string
	// batch runs rs, READs or WRITEs, at once up to depth and returns
	// each one's outcome: nil when it passed and moved all its data, its
	// sense after a failure, or another error. The caller sends a failed
	// one again alone.
	batch(ctx context.Context, rs []request) []error
	// maxDataPhase is the most data one command may move, in bytes; 0
	// when any length goes (BOT cuts a data phase into transfers).
	maxDataPhase() int
}

// NewTransport returns a Transport over ep: USB Attached SCSI when ep is
// a UASEndpoint opened in UAS mode, Bulk-Only Transport otherwise. Which
// of the two a reader should be opened in is ChooseTransport's decision.
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
	switch {
	case opts.ResetSettle == 0:
		opts.ResetSettle = DefaultResetSettle
	case opts.ResetSettle < 0:
		opts.ResetSettle = 0
	}
	t := &Transport{ep: ep, opts: opts}
	switch {
	case opts.Quirks&QuirkMaxSectorsMin != 0:
		t.capBytes.Store(capSteps[len(capSteps)-1])
	case opts.Quirks&QuirkMaxSectors64 != 0:
		t.capBytes.Store(64 * 512)
	}
	t.p = newBOTTransport(t)
	if u, ok := ep.(UASEndpoint); ok {
		if on, streams := u.UASMode(); on {
			t.p = newUASTransport(t, u, streams)
		}
	}
	if asked := t.opts.QueueDepth; asked > t.p.depth() && opts.OnNotice != nil {
		opts.OnNotice(Notice{Kind: NoticeSetting, Setting: SettingQueueDepth, Text: t.p.depthWhy(asked)})
	}
	return t
}

// Name returns the device name used in messages.
func (t *Transport) Name() string { return t.opts.Name }

// MaxLUN returns the highest LUN number of the device. As Linux's
// usb-storage, it takes a stall, a short or impossible answer, no answer
// in time and any other failure of the request as one LUN (0), and does
// not ask a QuirkSingleLUN reader or one of the ATAPI command set at all.
// Only a vanished device or a cancelled ctx is an error. Bulk-Only asks
// Get Max LUN, UAS (which has no such request) REPORT LUNS.
func (t *Transport) MaxLUN(ctx context.Context) (int, error) {
	if t.opts.Quirks&QuirkSingleLUN != 0 || t.opts.CommandSet == SetATAPI {
		return 0, nil
	}
	return t.p.maxLUN(ctx)
}

// TransportInfo says how a reader is driven: the protocol, and for UAS
// its streams and how many commands are in flight at once.
type TransportInfo struct {
	Protocol   string // ProtocolBOT or ProtocolUAS
	Streams    int    // UAS bulk streams; 0 in the high-speed mode and for BOT
	QueueDepth int    // commands in flight at once
	// Why says why Bulk-Only is driven where UAS is offered too ("" when
	// UAS is not offered or is driven).
	Why string
	// Both: the reader offers Bulk-Only and UAS, whichever is driven.
	Both bool
}

// The protocols, as TransportInfo.Protocol names them.
const (
	ProtocolBOT = "BOT"
	ProtocolUAS = "UAS"
)

func (i TransportInfo) String() string {
	switch {
	case i.Protocol != ProtocolUAS && i.Why != "":
		return i.Protocol + " (UAS offered too: " + i.Why + ")"
	case i.Protocol != ProtocolUAS:
		return i.Protocol
	case i.Streams > 0:
		return fmt.Sprintf("UAS (%d streams, queue depth %d)", i.Streams, i.QueueDepth)
	}
	return fmt.Sprintf("UAS (no streams, queue depth %d)", i.QueueDepth)
}

// Protocol names the protocol the Transport speaks: ProtocolBOT or
// ProtocolUAS.
func (t *Transport) Protocol() string { return t.p.info().Protocol }

// Info says how the transport drives the reader.
func (t *Transport) Info() TransportInfo { return t.p.info() }

// Transport says how the LUN's reader is driven.
func (l *LUN) Transport() TransportInfo { return l.t.Info() }

// consumePortReset reports whether the recovery ladder reset the port
// since it was last asked.
func (t *Transport) consumePortReset() bool {
	t.mu.Lock()
	defer t.mu.Unlock()
	done := t.portResetDone
	t.portResetDone = false
	return done
}

// IOCounts is what the transport asked of its reader: its commands
// (every attempt), and the Endpoint's system calls when it counts them
// (a blockdev.IOCounter). It waits for a command in flight.
func (t *Transport) IOCounts() blockdev.IOCounts {
	t.mu.Lock()
	n := t.commands
	t.mu.Unlock()
	var c blockdev.IOCounts
	if ic, ok := t.ep.(IOCounter); ok {
		c = ic.IOCounts()
	}
	c.Commands = n
	return c
}

// Quirks returns the quirk flags the transport was given.
func (t *Transport) Quirks() Quirks { return t.opts.Quirks }

// Learned returns what was found out about the device so far.
func (t *Transport) Learned() []Learned {
	t.mu.Lock()
	defer t.mu.Unlock()
	return append([]Learned(nil), t.learned...)
}

// learn records what was found out. Called with t.mu held.
func (t *Transport) learn(flag Quirks, what string) {
	t.learned = append(t.learned, Learned{Flag: flag, What: what})
}

// padCDB pads cdb to 12 bytes for the ATAPI command set, in the
// transport's own buffer.
func (t *Transport) padCDB(cdb []byte) []byte {
	if t.opts.CommandSet != SetATAPI || len(cdb) >= 12 {
		return cdb
	}
	t.pad = [16]byte{}
	copy(t.pad[:], cdb)
	return t.pad[:12]
}

// Reset readies the reader for the next command as the recovery ladder
// does after a failed attempt: over Bulk-Only, reset recovery (Mass
// Storage Reset, then clearing the halt on bulk-IN and bulk-OUT); over
// UAS, ending the command a failed attempt left in the device, if any.
func (t *Transport) Reset(ctx context.Context) error {
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.p.recover(ctx)
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
	probe     bool // an optional command: its failure is tolerated
	// shrink: a smaller command might not fail as this one does (a large
	// READ or WRITE). Its first failure that calls for recovery resets
	// the reader (a port reset, finding it again, when it dropped off the
	// bus) and ends in a *chokeError, so that the caller sends the range
	// again in smaller commands instead of repeating this one.
	shrink bool
}

// result is the outcome of one command that reached its status.
type result struct {
	n      int // valid data bytes
	status uint8
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
		return res.n, t.p.senseOf(ctx, r)
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
