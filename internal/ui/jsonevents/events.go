// Package jsonevents is usbflash's --json output: the events a command
// prints, one JSON object per line, and events.schema.json, their
// contract. Every event has "event" and "time"; the schema holds the exact
// shape, a test checks every event the commands emit against it, and
// docs/events.md, the reference, is generated from it (internal/eventsdoc,
// go generate ./cmd/usbflash).
package jsonevents

import (
	"time"

	"github.com/usbflash/usbflash/pipeline"
	"github.com/usbflash/usbflash/pipeline/blockdev"
)

// Name is the "event" field.
type Name string

const (
	NameStart    Name = "start"    // before the first command to the target
	NameDevice   Name = "device"   // the target is open: its name and size
	NamePhase    Name = "phase"    // a phase begins
	NameProgress Name = "progress" // bytes done in the phase, a few times a second
	NameNote     Name = "note"     // something worth knowing that changes nothing
	NameSummary  Name = "summary"  // the command succeeded
	NameError    Name = "error"    // the command failed: the last event
)

// Phase is what a command is doing; the values are pipeline's.
type Phase string

const (
	PhaseWrite  = Phase(pipeline.PhaseWrite)
	PhaseSync   = Phase(pipeline.PhaseSync)
	PhaseVerify = Phase(pipeline.PhaseVerify)
)

// Bound is which side limited a write's speed.
type Bound string

const (
	BoundDecoder Bound = "decoder"
	BoundDevice  Bound = "device"
	BoundNone    Bound = "none" // nothing measured
)

// BoundOf is the bound of the engine's measure b: none for a side it
// did not measure.
func BoundOf(b pipeline.Bound) Bound {
	switch b {
	case pipeline.BoundDecoder, pipeline.BoundDevice, pipeline.BoundSink:
		return Bound(b)
	}
	return BoundNone
}

// Command names the command in start and summary events.
type Command string

const (
	CommandWrite  Command = "write"
	CommandVerify Command = "verify"
	CommandErase  Command = "erase"
	CommandFormat Command = "format"
)

// Header is what every event begins with.
type Header struct {
	Event Name   `json:"event"`
	Time  string `json:"time"` // RFC 3339, UTC
}

// Head is the event's header, for the encoder to fill in.
func (h *Header) Head() *Header { return h }

// Event is a pointer to one of this package's event structs; its Name is
// what the encoder writes as "event".
type Event interface {
	Head() *Header
	Name() Name
}

type Start struct {
	Header
	Command        Command `json:"command"`
	Image          string  `json:"image"`
	Format         string  `json:"format"`
	Size           int64   `json:"size"` // decoded bytes; -1 when unknown
	SizeExact      bool    `json:"size_exact"`
	CompressedSize int64   `json:"compressed_size"` // bytes of the file; -1 when unknown (a pipe)
	Target         string  `json:"target"`          // as given on the command line
	TransferSize   int64   `json:"transfer_size"`   // as asked; see the device event
	Buffers        int     `json:"buffers,omitempty"`
}

type Device struct {
	Header
	Target       string `json:"target"` // the name every later message uses
	Capacity     int64  `json:"capacity"`
	BlockSize    int    `json:"block_size"`
	TransferSize int64  `json:"transfer_size"` // what is used, after the device's limits
	// Transport is how a reader is driven: BOT or UAS (absent for a
	// file), and UAS's bulk streams (absent without).
	Transport  string `json:"transport,omitempty"`
	UASStreams int    `json:"uas_streams,omitempty"`
	// QueueDepth is the commands in flight at once (1 for Bulk-Only);
	// TransportWhy says why Bulk-Only is driven where UAS is offered too.
	QueueDepth   int    `json:"queue_depth,omitempty"`
	TransportWhy string `json:"transport_why,omitempty"`
}

type PhaseEvent struct {
	Header
	Phase Phase `json:"phase"`
}

type Progress struct {
	Header
	Phase Phase `json:"phase"`
	// Done and Total count image (decoded) bytes; Total is -1 when unknown.
	Done  int64 `json:"done"`
	Total int64 `json:"total"`
	// CompressedDone and CompressedTotal count the image file's bytes read
	// while writing a compressed image; absent otherwise.
	CompressedDone  *int64  `json:"compressed_done,omitempty"`
	CompressedTotal *int64  `json:"compressed_total,omitempty"`
	ElapsedS        float64 `json:"elapsed_s"`
	// Rate is bytes per second over the phase; absent until it means
	// something (a second into the phase).
	Rate *float64 `json:"rate,omitempty"`
	// Download, for a write from a URL, is its download beside the write:
	// its own event in JSON (the reporter emits it first), the progress
	// line's second half in text.
	Download *Download `json:"-"`
	// Unit, when set, is what Done and Total count instead of bytes
	// (bench counts the points of a sweep): the text names it. The JSON
	// tells them apart by the phase.
	Unit string `json:"-"`
}

// rateWarmUp is how long a phase runs before its rate is given: the first
// buffers fill from memory and would claim tens of GB/s.
const rateWarmUp = time.Second

// NewProgress is the progress of a phase that has done done of total
// bytes in elapsed, with its rate once the rate means something.
func NewProgress(ph Phase, done, total int64, elapsed time.Duration) Progress {
	p := Progress{Phase: ph, Done: done, Total: total, ElapsedS: elapsed.Seconds()}
	if elapsed >= rateWarmUp && done > 0 {
		rate := float64(done) / elapsed.Seconds()
		p.Rate = &rate
	}
	return p
}

type Note struct {
	Header
	Message string `json:"message"`
	Hint    string `json:"hint,omitempty"` // the advice, for a note that has some
}

// NewNote is a note event saying msg.
func NewNote(msg string) *Note { return &Note{Message: msg} }

type Summary struct {
	Header
	Command  Command `json:"command"`
	Bytes    int64   `json:"bytes"`
	ElapsedS float64 `json:"elapsed_s"`
	Rate     float64 `json:"rate"`
	Verified bool    `json:"verified"`
	// The rest is write's: verify's summary has none of it.
	BytesWritten   int64    `json:"bytes_written,omitempty"`
	Transfers      int64    `json:"transfers,omitempty"`
	SHA256         string   `json:"sha256,omitempty"` // the decoded image's; only with --verify-hash sha256
	Verify         string   `json:"verify,omitempty"` // how the read-back was checked; absent with --no-verify
	VerifyElapsedS *float64 `json:"verify_elapsed_s,omitempty"`
	// VerifyTransferSize is the bytes per READ of the read-back.
	VerifyTransferSize int64    `json:"verify_transfer_size,omitempty"`
	Bound              Bound    `json:"bound,omitempty"`
	BoundRatio         float64  `json:"bound_ratio,omitempty"`
	DecoderWaitS       *float64 `json:"decoder_wait_s,omitempty"`
	DeviceWaitS        *float64 `json:"device_wait_s,omitempty"`
	Ejected            *bool    `json:"ejected,omitempty"` // present with --eject
	// SkippedBytes are the image bytes left out by a block map or
	// --sparse: those regions keep the card's old bytes. Absent otherwise.
	SkippedBytes *int64 `json:"skipped_bytes,omitempty"`
	// What the buffers were (usbfs zero-copy or page-aligned memory) and
	// the process's CPU time (user + system) over the command, whole and
	// per GiB of image.
	Memory    string  `json:"memory"`
	CPUS      float64 `json:"cpu_s"`
	CPUPerGiB float64 `json:"cpu_s_per_gib"`
	// Cost is what the write (or verify's read-back) cost the process
	// and its device; VerifyCost the write's read-back, when verified.
	Cost       *Cost `json:"cost,omitempty"`
	VerifyCost *Cost `json:"verify_cost,omitempty"`
}

// Cost is what a phase cost, in units that carry from one host to
// another: the process's CPU, context switches and page faults
// (getrusage), and the device's own counts of what it asked the kernel.
type Cost struct {
	UserS               float64 `json:"user_s"`
	SystemS             float64 `json:"system_s"`
	VoluntarySwitches   int64   `json:"voluntary_switches"`
	InvoluntarySwitches int64   `json:"involuntary_switches"`
	MinorFaults         int64   `json:"minor_faults"`
	MajorFaults         int64   `json:"major_faults"`
	// IO is absent for a device that does not count (a file: target,
	// the libusb backend).
	IO *IOCounts `json:"io,omitempty"`
}

// IOCounts are a device's counts (blockdev.IOCounts) in a Cost.
type IOCounts struct {
	Commands int64 `json:"commands"`
	Submits  int64 `json:"submits"`
	Reaps    int64 `json:"reaps"`
	Waits    int64 `json:"waits"`
	Other    int64 `json:"other"`
	Syscalls int64 `json:"syscalls"`
}

// CostOf is the Cost of a phase that used u and whose device counted io
// (zero: it does not count); nil where the system counted neither.
func CostOf(u pipeline.Usage, io blockdev.IOCounts) *Cost {
	if u == (pipeline.Usage{}) && io == (blockdev.IOCounts{}) {
		return nil
	}
	c := &Cost{UserS: u.User.Seconds(), SystemS: u.System.Seconds(),
		VoluntarySwitches: u.VoluntarySwitches, InvoluntarySwitches: u.InvoluntarySwitches,
		MinorFaults: u.MinorFaults, MajorFaults: u.MajorFaults}
	if io != (blockdev.IOCounts{}) {
		c.IO = &IOCounts{Commands: io.Commands, Submits: io.Submits, Reaps: io.Reaps, Waits: io.Waits, Other: io.Other, Syscalls: io.Syscalls()}
	}
	return c
}

type Error struct {
	Header
	Message string `json:"message"`        // the facts
	Hint    string `json:"hint,omitempty"` // what to do about it, when there is advice
	Code    int    `json:"code"`           // the exit code
	// ExitName is the exit code's name in the table.
	ExitName string `json:"name"`
}
