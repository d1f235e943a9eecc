package main

import (
	"github.com/usbflash/usbflash/pipeline"
)

// The JSON events of write and verify (--json), one object per line. Every
// event has "event" and "time"; events.schema.json holds the exact
// contract, and a test checks every event the commands emit against it.
// docs/events.md, the reference, is generated from the schema:

//go:generate go run ../../internal/eventsdoc/gen events.schema.json ../../docs/events.md

// eventName is the "event" field.
type eventName string

const (
	evStart    eventName = "start"    // before the first command to the target
	evDevice   eventName = "device"   // the target is open: its name and size
	evPhase    eventName = "phase"    // a phase begins
	evProgress eventName = "progress" // bytes done in the phase, a few times a second
	evNote     eventName = "note"     // something worth knowing that changes nothing
	evSummary  eventName = "summary"  // the command succeeded
	evError    eventName = "error"    // the command failed: the last event
)

// phase is what a command is doing; the values are pipeline's.
type phase string

const (
	phaseWrite  = phase(pipeline.PhaseWrite)
	phaseSync   = phase(pipeline.PhaseSync)
	phaseVerify = phase(pipeline.PhaseVerify)
)

// bound is which side limited a write's speed.
type bound string

const (
	boundDecoder bound = "decoder"
	boundDevice  bound = "device"
	boundNone    bound = "none" // nothing measured
)

// command names the command in start and summary events.
type command string

const (
	cmdWrite  command = "write"
	cmdVerify command = "verify"
)

type eventHeader struct {
	Event eventName `json:"event"`
	Time  string    `json:"time"` // RFC 3339, UTC
}

func (h *eventHeader) header() *eventHeader { return h }

// event is a pointer to one of the event structs below.
type event interface{ header() *eventHeader }

type startEvent struct {
	eventHeader
	Command        command `json:"command"`
	Image          string  `json:"image"`
	Format         string  `json:"format"`
	Size           int64   `json:"size"` // decoded bytes; -1 when unknown
	SizeExact      bool    `json:"size_exact"`
	CompressedSize int64   `json:"compressed_size"` // bytes of the file; -1 when unknown (a pipe)
	Target         string  `json:"target"`          // as given on the command line
	TransferSize   int64   `json:"transfer_size"`   // as asked; see the device event
	Buffers        int     `json:"buffers,omitempty"`
}

type deviceEvent struct {
	eventHeader
	Target       string `json:"target"` // the name every later message uses
	Capacity     int64  `json:"capacity"`
	BlockSize    int    `json:"block_size"`
	TransferSize int64  `json:"transfer_size"` // what is used, after the device's limits
}

type phaseEvent struct {
	eventHeader
	Phase phase `json:"phase"`
}

type progressEvent struct {
	eventHeader
	Phase phase `json:"phase"`
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
	// unit, when set, is what Done and Total count instead of bytes
	// (bench counts the points of a sweep): the text names it. The JSON
	// tells them apart by the phase.
	unit string
}

type noteEvent struct {
	eventHeader
	Message string `json:"message"`
	Hint    string `json:"hint,omitempty"` // the advice, for a note that has some
}

func newNote(msg string) *noteEvent {
	return &noteEvent{eventHeader: eventHeader{Event: evNote}, Message: msg}
}

type summaryEvent struct {
	eventHeader
	Command  command `json:"command"`
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
	Bound              bound    `json:"bound,omitempty"`
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
}

type errorEvent struct {
	eventHeader
	Message string `json:"message"`        // the facts
	Hint    string `json:"hint,omitempty"` // what to do about it, when there is advice
	Code    int    `json:"code"`           // the exit code
	Name    string `json:"name"`           // the exit code's name in the table
}

func ptr[T any](v T) *T { return &v }
