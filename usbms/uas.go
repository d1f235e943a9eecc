package usbms

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"

	"github.com/usbflash/usbflash/internal/failure"
	"github.com/usbflash/usbflash/scsi"
)

// Pipe names a pipe of a USB Attached SCSI interface by its Pipe Usage
// ID (UAS 5.3.3.1, the class descriptor 0x24 after each endpoint).
type Pipe uint8

// The four pipes of a UAS interface.
const (
	PipeCommand Pipe = 1 // bulk OUT: COMMAND and TASK MANAGEMENT IUs
	PipeStatus  Pipe = 2 // bulk IN: SENSE, RESPONSE, READ READY, WRITE READY IUs
	PipeDataIn  Pipe = 3 // bulk IN
	PipeDataOut Pipe = 4 // bulk OUT
)

func (p Pipe) String() string {
	switch p {
	case PipeCommand:
		return "command pipe"
	case PipeStatus:
		return "status pipe"
	case PipeDataIn:
		return "data-in pipe"
	case PipeDataOut:
		return "data-out pipe"
	}
	return fmt.Sprintf("pipe %d", uint8(p))
}

// UASEndpoint is an optional interface of an Endpoint whose interface was
// opened in its UAS alternate setting. A Transport over such an Endpoint
// speaks UAS instead of Bulk-Only Transport; ClassRequest, ClearHalt and
// the bulk methods of Endpoint are not used then, ResetPort is.
//
// Transfers are submitted and reaped, as URBs are: a command on streams
// submits its status read, its data transfer and its COMMAND IU at once
// (the order of Linux's uas_submit_urbs) and reaps the three in the
// goroutine that sent them, so that a command costs its transfers and no
// goroutine or round trip more. One goroutine at a time submits and reaps
// (the Transport's lock); a transfer is not waited for by anyone else.
type UASEndpoint interface {
	// UASMode reports whether the interface speaks UAS and on how many
	// bulk streams: 0 is the high-speed mode, in which the device
	// announces each data phase with a READ READY or WRITE READY IU on
	// the status pipe; more is SuperSpeed with streams, stream ID = tag.
	UASMode() (uas bool, streams int)
	// PipeSubmit queues x on its pipe (and stream) and returns at once;
	// x and x.Buf are the endpoint's until PipeReap gives x back.
	// Transfers on different pipes, or different streams, run at once;
	// those on one pipe and stream in the order submitted. An error means
	// x was not queued (and will not be given back).
	PipeSubmit(x *PipeXfer) error
	// PipeReap waits for a submitted transfer to end and gives it back
	// with N and Err set; a device that is gone ends every one pending.
	// It returns an error and no transfer only when ctx is done (or the
	// endpoint's deadline has passed) first, and then only while no
	// cancelled transfer is pending: one that PipeCancel ended is waited
	// for whatever ctx says, so that its buffer can be handed back.
	PipeReap(ctx context.Context) (*PipeXfer, error)
	// PipeCancel ends x early if it is still pending; PipeReap still gives
	// it back, with what moved before and an error that is
	// context.Canceled when the cancel ended it.
	PipeCancel(x *PipeXfer)
}

// PipeXfer is one transfer on a pipe of a UAS interface.
type PipeXfer struct {
	Pipe   Pipe
	Stream uint16 // the stream ID; 0 without streams and on the command pipe
	Buf    []byte // what to send, or room for what comes (not empty)
	// N and Err say how it ended, once PipeReap gave it back: the bytes
	// moved (an IN transfer ends early at a short packet) and nil, or
	// why it failed.
	N   int
	Err error

	pending   bool // submitted and not yet given back
	cancelled bool // runXfers cancelled it
}

// runXfers submits xs in order and reaps until every one is given back, so
// that no buffer is the device's when it returns. A transfer that fails,
// or ctx ending, cancels every one still pending; a status read that ends
// cancels the data transfer of its stream (stream 0 without streams)
// still pending (the device ended the command having moved less). It returns the error
// of a PipeSubmit, or ctx's (or the deadline's) when that ended the wait;
// each transfer's own outcome is in its N and Err.
func (u *uasTransport) runXfers(ctx context.Context, xs ...*PipeXfer) error {
	var stop error
	pending := 0
	for i, x := range xs {
		x.N, x.Err, x.pending, x.cancelled = 0, nil, false, false
		if stop != nil {
			x.Err = errNotSubmitted
			continue
		}
		if err := u.ep.PipeSubmit(x); err != nil {
			x.Err, stop = err, err
			uasCancelAll(u.ep, xs[:i])
			continue
		}
		x.pending = true
		pending++
	}
	failed := stop != nil
	for pending > 0 {
		x, err := u.ep.PipeReap(ctx)
		if err != nil {
			if stop == nil {
				stop = err
			}
			failed = true
			uasCancelAll(u.ep, xs)
			continue
		}
		if x == nil || !x.pending {
			continue // not one of ours: the endpoint's, or given back already
		}
		x.pending = false
		pending--
		switch {
		case x.Err != nil && !failed && !(x.cancelled && errors.Is(x.Err, context.Canceled)):
			failed = true
			uasCancelAll(u.ep, xs)
		case x.Err == nil && x.Pipe == PipeStatus:
			for _, y := range xs {
				if y.pending && !y.cancelled && y.Stream == x.Stream && (y.Pipe == PipeDataIn || y.Pipe == PipeDataOut) {
					y.cancelled = true
					u.ep.PipeCancel(y)
				}
			}
		}
	}
	return stop
}

// uasCancelAll cancels every transfer of xs still pending.
func uasCancelAll(ep UASEndpoint, xs []*PipeXfer) {
	for _, x := range xs {
		if x.pending && !x.cancelled {
			x.cancelled = true
			ep.PipeCancel(x)
		}
	}
}

// errNotSubmitted is the outcome of a transfer behind one that could not
// be submitted.
var errNotSubmitted = errors.New("not submitted: an earlier transfer failed")

// transfer moves p on pipe and stream and waits for it, with the
// transport's one transfer of its own.
func (u *uasTransport) transfer(ctx context.Context, pipe Pipe, stream uint16, p []byte) (int, error) {
	x := &u.one
	*x = PipeXfer{Pipe: pipe, Stream: stream, Buf: p}
	if err := u.runXfers(ctx, x); err != nil {
		return max(0, min(x.N, len(p))), err
	}
	return max(0, min(x.N, len(p))), x.Err
}

// IU identifiers (UAS 6.2).
const (
	iuCommand    = 0x01
	iuSense      = 0x03
	iuResponse   = 0x04
	iuTaskMgmt   = 0x05
	iuReadReady  = 0x06
	iuWriteReady = 0x07
)

// Task management functions (UAS 6.2.6, SAM-5).
const (
	tmfAbortTask = 0x01
	tmfLUReset   = 0x08
)

// RESPONSE IU codes (UAS 6.2.5).
const (
	rcComplete      = 0x00
	rcInvalidIU     = 0x02
	rcNotSupported  = 0x04
	rcFailed        = 0x05
	rcSucceeded     = 0x08
	rcIncorrectLUN  = 0x09
	rcOverlappedTag = 0x0A
)

// Lengths of the IUs.
const (
	uasCommandLen = 32 // a 16-byte CDB, no additional CDB bytes
	uasTMFLen     = 16
	// uasStatusLen holds a SENSE IU with 96 bytes of sense, as Linux's
	// uas does (struct sense_iu).
	uasStatusLen = 16 + 96
	// uasMaxTags bounds the tags of the high-speed mode, where no
	// stream count does.
	uasMaxTags = 32
)

// SCSI status codes a SENSE IU carries.
const (
	scsiGood           = 0x00
	scsiCheckCondition = 0x02
)

// Errors of the UAS transport, matched with errors.Is.
var (
	// ErrUASResponse means the device answered a command with a RESPONSE
	// IU (an invalid IU, an overlapped tag, a LUN it does not have)
	// instead of its status.
	ErrUASResponse = failure.New(failure.Device, "UAS device refused the command")
	// ErrUASProtocol means an IU on the status pipe made no sense: an
	// unknown IU, a tag of no command, a READY IU for the wrong
	// direction.
	ErrUASProtocol = failure.New(failure.Device, "UAS protocol violation")
)

// uasTransport is USB Attached SCSI (T10 UAS-2, as Linux's uas drives
// it): COMMAND IUs on the command pipe, their data on the data pipes and
// their status (a SENSE IU with the sense data, or a RESPONSE IU) on the
// status pipe: at SuperSpeed on the bulk stream of the command's tag,
// below it each data phase announced by a READ READY or WRITE READY IU.
// A command with its recovery goes alone
// (exec); a LUN's large READ or WRITE goes as several commands in flight
// at once (batch), up to the queue depth. Which readers it is not used
// for is ChooseTransport's decision (choose.go), the flags of the readers
// it drives are its own quirk table's (uas_quirktable.go).
type uasTransport struct {
	t       *Transport
	ep      UASEndpoint
	streams int
	tag     uint16 // the last tag used
	cmd     [uasCommandLen]byte
	tmf     [uasTMFLen]byte
	status  [uasStatusLen]byte
	tstatus [uasStatusLen]byte // the status of a task management function
	sense   []byte             // sense data of the last CHECK CONDITION
	// failedTag and failedLUN are the command the last attempt left
	// unfinished, which recovery aborts; failedTag 0 when none.
	failedTag uint16
	failedLUN int
	// aborts and luResets count the task management the transport sent.
	aborts, luResets int
	// The transfers of a command (status, data, COMMAND IU), of a task
	// management function (its status, its IU) and of one transfer
	// alone, made once so that a command allocates none.
	xStatus, xData, xCmd, xTStatus, xTMF, one PipeXfer
}

// newUASTransport drives ep, opened in its UAS alternate setting, on
// streams bulk streams (0: the high-speed mode). Linux's uas caps ASMedia
// bridges at SuperSpeed (QuirkMaxSectors240, which ChooseTransport gives
// them) at 240 blocks per command; Bulk-Only has no such flag.
func newUASTransport(t *Transport, ep UASEndpoint, streams int) *uasTransport {
	if t.opts.Quirks&QuirkMaxSectors240 != 0 {
		t.capBytes.Store(240 * 512)
	}
	return &uasTransport{t: t, ep: ep, streams: streams}
}

func (u *uasTransport) info() TransportInfo {
	return TransportInfo{Protocol: ProtocolUAS, Streams: u.streams, QueueDepth: u.depth(), Both: u.t.opts.BothOffered}
}

// maxDataPhase is ChunkSize: a UAS data phase is one transfer (one URB: a
// stream has no room for a second in flight), which usbfs_memory_mb
// bounds as it bounds Bulk-Only's transfers.
func (u *uasTransport) maxDataPhase() int { return u.t.opts.ChunkSize }

// nextTag is the tag of the next IU: 1 up to the number of streams (a
// stream ID is a tag), or up to uasMaxTags without streams; never the
// tag of a command recovery still has to abort.
func (u *uasTransport) nextTag() uint16 {
	limit := uint16(uasMaxTags)
	if u.streams > 0 {
		limit = uint16(min(u.streams, 0xFFFF))
	}
	for {
		u.tag++
		if u.tag == 0 || u.tag > limit {
			u.tag = 1
		}
		if u.tag != u.failedTag || limit == 1 {
			return u.tag
		}
	}
}

// stream is the stream ID of tag's transfers: the tag with streams, 0
// without.
func (u *uasTransport) stream(tag uint16) uint16 {
	if u.streams > 0 {
		return tag
	}
	return 0
}

// putLUN writes a single-level LUN (SAM-5 4.7.3, as Linux's
// int_to_scsilun) into the 8 bytes of b.
func putLUN(b []byte, lun int) {
	clear(b[:8])
	b[0], b[1] = byte(lun>>8), byte(lun)
}

// encodeCommandIU builds a COMMAND IU: SIMPLE task attribute, no
// additional CDB bytes, the CDB padded to 16.
func encodeCommandIU(b *[uasCommandLen]byte, tag uint16, lun int, cdb []byte) {
	*b = [uasCommandLen]byte{}
	b[0] = iuCommand
	binary.BigEndian.PutUint16(b[2:], tag)
	b[4] = 0 // priority 0, task attribute SIMPLE
	putLUN(b[8:16], lun)
	copy(b[16:], cdb)
}

// encodeTMFIU builds a TASK MANAGEMENT IU.
func encodeTMFIU(b *[uasTMFLen]byte, tag uint16, function uint8, taskTag uint16, lun int) {
	*b = [uasTMFLen]byte{}
	b[0] = iuTaskMgmt
	binary.BigEndian.PutUint16(b[2:], tag)
	b[4] = function
	binary.BigEndian.PutUint16(b[6:], taskTag)
	putLUN(b[8:16], lun)
}

// statusIU is a decoded IU from the status pipe.
type statusIU struct {
	id     uint8
	tag    uint16
	status uint8  // SENSE IU: the SCSI status
	sense  []byte // SENSE IU: the sense data
	code   uint8  // RESPONSE IU: the response code
}

// parseStatusIU decodes what came on the status pipe.
func parseStatusIU(b []byte) (statusIU, error) {
	if len(b) < 4 {
		return statusIU{}, fmt.Errorf("%w: %d-byte IU on the status pipe", ErrUASProtocol, len(b))
	}
	iu := statusIU{id: b[0], tag: binary.BigEndian.Uint16(b[2:])}
	switch iu.id {
	case iuReadReady, iuWriteReady:
		return iu, nil
	case iuSense:
		if len(b) < 16 {
			return statusIU{}, fmt.Errorf("%w: SENSE IU of %d bytes", ErrUASProtocol, len(b))
		}
		iu.status = b[6]
		n := int(binary.BigEndian.Uint16(b[14:]))
		iu.sense = b[16:min(len(b), 16+n)]
		return iu, nil
	case iuResponse:
		if len(b) < 8 {
			return statusIU{}, fmt.Errorf("%w: RESPONSE IU of %d bytes", ErrUASProtocol, len(b))
		}
		iu.code = b[7]
		return iu, nil
	}
	return statusIU{}, fmt.Errorf("%w: IU 0x%02x on the status pipe", ErrUASProtocol, iu.id)
}

// responseName names a RESPONSE IU code.
func responseName(code uint8) string {
	switch code {
	case rcComplete:
		return "task management function complete"
	case rcInvalidIU:
		return "invalid information unit"
	case rcNotSupported:
		return "task management function not supported"
	case rcFailed:
		return "task management function failed"
	case rcSucceeded:
		return "task management function succeeded"
	case rcIncorrectLUN:
		return "incorrect logical unit number"
	case rcOverlappedTag:
		return "overlapped tag attempted"
	}
	return fmt.Sprintf("response code 0x%02x", code)
}

// attempt runs one command once over UAS. Without streams: the
// COMMAND IU, then the status pipe says what comes (READ READY or WRITE
// READY, the data, and the SENSE IU; or the SENSE IU at once). With
// streams: the status read and the data transfer wait on the tag's
// stream while the COMMAND IU goes out, as Linux's uas submits them; the
// device's SENSE IU ends the command, and a data transfer still pending
// then (the device sent less) is cancelled and counts what moved.
func (u *uasTransport) attempt(ctx context.Context, r request) (result, error) {
	tag := u.nextTag()
	u.failedTag, u.failedLUN = tag, r.lun
	encodeCommandIU(&u.cmd, tag, r.lun, u.t.padCDB(r.cdb))
	var iu statusIU
	var moved int
	var err error
	if u.streams > 0 {
		iu, moved, err = u.attemptStreams(ctx, r, tag)
	} else {
		iu, moved, err = u.attemptReady(ctx, r, tag)
	}
	if err != nil {
		return result{}, err
	}
	if iu.id == iuResponse {
		return result{}, fmt.Errorf("%w: %s (tag %d)", ErrUASResponse, responseName(iu.code), tag)
	}
	u.failedTag = 0
	switch iu.status {
	case scsiGood:
		return result{n: moved, status: statusPassed}, nil
	case scsiCheckCondition:
		u.sense = append(u.sense[:0], iu.sense...)
		return result{n: moved, status: statusFailed}, nil
	}
	// BUSY, TASK SET FULL, RESERVATION CONFLICT and the like come
	// without sense: the command is repeated as one without sense data.
	u.sense = u.sense[:0]
	return result{n: moved, status: statusFailed}, nil
}

// sendIU sends an IU on the command pipe.
func (u *uasTransport) sendIU(ctx context.Context, b []byte) error {
	n, err := u.transfer(ctx, PipeCommand, 0, b)
	if err != nil {
		return fmt.Errorf("send IU on the command pipe: %w", err)
	}
	if n != len(b) {
		return fmt.Errorf("send IU on the command pipe: device took %d of %d bytes", n, len(b))
	}
	return nil
}

// readStatus reads one IU from the status pipe into buf.
func (u *uasTransport) readStatus(ctx context.Context, stream uint16, buf []byte) (statusIU, error) {
	n, err := u.transfer(ctx, PipeStatus, stream, buf)
	if err != nil {
		return statusIU{}, fmt.Errorf("read the status pipe: %w", err)
	}
	return parseStatusIU(buf[:n])
}

// attemptReady is the high-speed mode: no streams, the device says when the
// data phase may go. A status read is always waiting, as Linux's uas keeps
// one: it goes with the COMMAND IU and again with the data transfer, so
// the READY IU and the SENSE IU each find it queued instead of costing a
// round trip more; a status that ends the command while the data transfer
// is still pending (the device took less) cancels that.
func (u *uasTransport) attemptReady(ctx context.Context, r request, tag uint16) (statusIU, int, error) {
	st, c, d := &u.xStatus, &u.xCmd, &u.xData
	*st = PipeXfer{Pipe: PipeStatus, Buf: u.status[:]}
	*c = PipeXfer{Pipe: PipeCommand, Buf: u.cmd[:]}
	err := u.runXfers(ctx, st, c)
	switch {
	case c.Err != nil && !errors.Is(c.Err, context.Canceled):
		return statusIU{}, 0, fmt.Errorf("send IU on the command pipe: %w", c.Err)
	case err == nil && c.N != len(c.Buf):
		return statusIU{}, 0, fmt.Errorf("send IU on the command pipe: device took %d of %d bytes", c.N, len(c.Buf))
	}
	moved := 0
	dataDone := false
	for {
		if err == nil {
			err = st.Err
		}
		if err != nil {
			return statusIU{}, moved, fmt.Errorf("read the status pipe: %w", err)
		}
		iu, perr := parseStatusIU(st.Buf[:max(0, min(st.N, len(st.Buf)))])
		if perr != nil {
			return statusIU{}, moved, perr
		}
		if iu.tag != tag {
			return statusIU{}, moved, fmt.Errorf("%w: IU 0x%02x for tag %d while tag %d is in flight", ErrUASProtocol, iu.id, iu.tag, tag)
		}
		switch iu.id {
		case iuSense, iuResponse:
			return iu, moved, nil
		}
		want, pipe := DataIn, PipeDataIn
		if iu.id == iuWriteReady {
			want, pipe = DataOut, PipeDataOut
		}
		if dataDone || r.dir != want || len(r.data) == 0 {
			return statusIU{}, moved, fmt.Errorf("%w: %s READY for a command with %s data of %d bytes", ErrUASProtocol, want, r.dir, len(r.data))
		}
		dataDone = true
		*d = PipeXfer{Pipe: pipe, Buf: r.data}
		*st = PipeXfer{Pipe: PipeStatus, Buf: u.status[:]}
		err = u.runXfers(ctx, d, st)
		moved = max(0, min(d.N, len(r.data)))
		if d.Err != nil && !(d.cancelled && errors.Is(d.Err, context.Canceled)) {
			return statusIU{}, moved, fmt.Errorf("data %s at byte %d of %d: %w", r.dir, moved, len(r.data), d.Err)
		}
	}
}

// attemptStreams is the SuperSpeed mode: every transfer of the command on the
// stream of its tag. The status read and the data transfer are submitted
// before the COMMAND IU, in the order of Linux's uas_submit_urbs (status,
// data, command), and the three are reaped here, so that a command costs
// no round trip and no goroutine more than its transfers; the data
// transfer still pending when the status came (the device sent less) is
// cancelled then.
func (u *uasTransport) attemptStreams(ctx context.Context, r request, tag uint16) (statusIU, int, error) {
	stream := u.stream(tag)
	st, d, c := &u.xStatus, &u.xData, &u.xCmd
	*st = PipeXfer{Pipe: PipeStatus, Stream: stream, Buf: u.status[:]}
	*c = PipeXfer{Pipe: PipeCommand, Buf: u.cmd[:]}
	var err error
	if r.dir != NoData && len(r.data) > 0 {
		pipe := PipeDataIn
		if r.dir == DataOut {
			pipe = PipeDataOut
		}
		*d = PipeXfer{Pipe: pipe, Stream: stream, Buf: r.data}
		err = u.runXfers(ctx, st, d, c)
	} else {
		*d = PipeXfer{}
		err = u.runXfers(ctx, st, c)
	}
	moved := max(0, min(d.N, len(r.data)))
	switch {
	case c.Err != nil && !errors.Is(c.Err, context.Canceled):
		return statusIU{}, 0, fmt.Errorf("send IU on the command pipe: %w", c.Err)
	case err == nil && c.N != len(c.Buf):
		return statusIU{}, 0, fmt.Errorf("send IU on the command pipe: device took %d of %d bytes", c.N, len(c.Buf))
	case err != nil:
		return statusIU{}, moved, fmt.Errorf("read the status pipe: %w", err)
	case st.Err != nil && d.Err != nil && !errors.Is(d.Err, context.Canceled):
		// The data transfer failed first and cancelled the status read.
		return statusIU{}, moved, fmt.Errorf("data %s at byte %d of %d: %w", r.dir, moved, len(r.data), d.Err)
	case st.Err != nil:
		return statusIU{}, moved, fmt.Errorf("read the status pipe: %w", st.Err)
	}
	iu, perr := parseStatusIU(st.Buf[:max(0, min(st.N, len(st.Buf)))])
	if perr != nil {
		return statusIU{}, moved, perr
	}
	if iu.tag != tag {
		return statusIU{}, moved, fmt.Errorf("%w: IU 0x%02x for tag %d on the stream of tag %d", ErrUASProtocol, iu.id, iu.tag, tag)
	}
	if iu.id != iuSense && iu.id != iuResponse {
		return statusIU{}, moved, fmt.Errorf("%w: IU 0x%02x on a stream", ErrUASProtocol, iu.id)
	}
	// The data transfer was cancelled once the status came: what moved
	// before it counts, a cancellation does not.
	if d.Err != nil && !errors.Is(d.Err, context.Canceled) {
		return statusIU{}, moved, fmt.Errorf("data %s at byte %d of %d: %w", r.dir, moved, len(r.data), d.Err)
	}
	return iu, moved, nil
}

// senseOf is the sense of the last CHECK CONDITION, which UAS delivers
// with the status: no REQUEST SENSE.
func (u *uasTransport) senseOf(context.Context, request) error {
	if len(u.sense) == 0 {
		return fmt.Errorf("command failed without sense data: %w", errNoSenseData)
	}
	se, err := scsi.ParseSense(u.sense)
	if err != nil {
		return fmt.Errorf("command failed with unreadable sense data: %w", errors.Join(errNoSenseData, err))
	}
	return se
}

// recover ends what a failed attempt left in the device: ABORT TASK
// for its tag, then, when the device does not confirm that, LOGICAL UNIT
// RESET, as SAM's escalation goes (Linux's uas leaves both to a device
// reset; the port reset of the ladder still follows when they fail).
func (u *uasTransport) recover(ctx context.Context) error {
	if u.failedTag == 0 {
		return nil
	}
	step := func(what string, function uint8) error {
		sctx, cancel := context.WithTimeout(ctx, u.t.opts.ResetTimeout)
		defer cancel()
		if err := u.taskManagement(sctx, function, u.failedTag, u.failedLUN); err != nil {
			return fmt.Errorf("%s: %w", what, err)
		}
		return nil
	}
	u.aborts++
	aerr := step(fmt.Sprintf("ABORT TASK of tag %d", u.failedTag), tmfAbortTask)
	if aerr == nil {
		u.failedTag = 0
		return nil
	}
	if errors.Is(aerr, ErrNoDevice) {
		return aerr
	}
	u.t.notify(StepLUNReset, fmt.Sprintf("%v: resetting LUN %d", aerr, u.failedLUN))
	u.luResets++
	if err := step(fmt.Sprintf("LOGICAL UNIT RESET of LUN %d", u.failedLUN), tmfLUReset); err != nil {
		return err
	}
	u.failedTag = 0
	return nil
}

// taskManagement sends one task management function and waits for its RESPONSE
// IU. Without streams the status pipe may first carry the aborted
// command's own status, which is passed over.
func (u *uasTransport) taskManagement(ctx context.Context, function uint8, taskTag uint16, lun int) error {
	tag := u.nextTag()
	if tag == taskTag {
		tag = u.nextTag()
	}
	encodeTMFIU(&u.tmf, tag, function, taskTag, lun)
	if u.streams > 0 {
		// The status read waits on the stream before the IU goes out.
		st, c := &u.xTStatus, &u.xTMF
		*st = PipeXfer{Pipe: PipeStatus, Stream: u.stream(tag), Buf: u.tstatus[:]}
		*c = PipeXfer{Pipe: PipeCommand, Buf: u.tmf[:]}
		err := u.runXfers(ctx, st, c)
		switch {
		case c.Err != nil && !errors.Is(c.Err, context.Canceled):
			return fmt.Errorf("send IU on the command pipe: %w", c.Err)
		case err == nil && c.N != len(c.Buf):
			return fmt.Errorf("send IU on the command pipe: device took %d of %d bytes", c.N, len(c.Buf))
		case err == nil:
			err = st.Err
		}
		if err != nil {
			return fmt.Errorf("read the status pipe: %w", err)
		}
		iu, err := parseStatusIU(st.Buf[:max(0, min(st.N, len(st.Buf)))])
		if err != nil {
			return err
		}
		return tmfResult(iu, tag)
	}
	if err := u.sendIU(ctx, u.tmf[:]); err != nil {
		return err
	}
	for range uasMaxTags {
		iu, err := u.readStatus(ctx, 0, u.tstatus[:])
		if err != nil {
			return err
		}
		if iu.tag == tag {
			return tmfResult(iu, tag)
		}
	}
	return fmt.Errorf("%w: no RESPONSE IU for tag %d", ErrUASProtocol, tag)
}

// tmfResult is nil for a RESPONSE IU that says the function was done.
func tmfResult(iu statusIU, tag uint16) error {
	if iu.id != iuResponse || iu.tag != tag {
		return fmt.Errorf("%w: IU 0x%02x for tag %d in answer to task management tag %d", ErrUASProtocol, iu.id, iu.tag, tag)
	}
	if iu.code != rcComplete && iu.code != rcSucceeded {
		return fmt.Errorf("%w: %s", ErrUASResponse, responseName(iu.code))
	}
	return nil
}

// maxLUN asks REPORT LUNS (UAS has no Get Max LUN) and takes the
// highest LUN below 16 it lists; a device that fails it has one LUN.
func (u *uasTransport) maxLUN(ctx context.Context) (int, error) {
	buf := make([]byte, 8+8*16)
	cdb := make([]byte, 12)
	cdb[0] = 0xA0 // REPORT LUNS
	binary.BigEndian.PutUint32(cdb[6:], uint32(len(buf)))
	r := request{cdb: cdb, dir: DataIn, data: buf, maxResets: 0, probe: true}
	n, err := u.t.exec(ctx, r)
	switch {
	case errors.Is(err, ErrNoDevice) || ctx.Err() != nil:
		return 0, fmt.Errorf("REPORT LUNS: %w", err)
	case err != nil || n < 8:
		return 0, nil
	}
	max := 0
	listed := int(binary.BigEndian.Uint32(buf[0:]))
	for off := 8; off+8 <= n && off < 8+listed; off += 8 {
		if buf[off]&0xC0 != 0 {
			continue // not a single-level peripheral LUN
		}
		if lun := int(buf[off]&0x3F)<<8 | int(buf[off+1]); lun < 16 && lun > max {
			max = lun
		}
	}
	return max, nil
}

// DefaultUASQueueDepth is how many READs or WRITEs a UAS transport keeps
// in flight at once, bounded by its streams. It is 1 because that was
// measured fastest but in one case (docs/performance.md): against QEMU's
// usb-uas a write's full transfers 4 in flight ran at 1.13-1.19x one at a
// time on xHCI at 1 MiB, 0.6-0.8x at 4 MiB, 0.5-0.7x on EHCI (no streams:
// one READY at a time), and a READ or WRITE cut into 4 commands at
// 0.25-1.1x; a reader that gains from queued commands is given more with
// the setting.
const DefaultUASQueueDepth = 1

// depth is the queue depth in use: TransportOptions.QueueDepth
// (DefaultUASQueueDepth when 0), at most one less than the streams (a
// tag is left for task management).
func (u *uasTransport) depth() int {
	d := u.t.opts.QueueDepth
	if d <= 0 {
		d = DefaultUASQueueDepth
	}
	if u.streams > 0 {
		d = min(d, u.streams-1)
	}
	return max(min(d, uasMaxTags-1), 1)
}

// depthWhy says why depth is less than asked: the streams, one kept for
// task management, or without streams the tags.
func (u *uasTransport) depthWhy(asked int) string {
	took := u.depth()
	if u.streams > 0 && took == u.streams-1 {
		return fmt.Sprintf("%s %d is cut to %d on this reader: it has %d bulk streams, one of them kept for task management", SettingQueueDepth, asked, took, u.streams)
	}
	return fmt.Sprintf("%s %d is cut to %d: a UAS host keeps one of its %d tags for task management", SettingQueueDepth, asked, took, uasMaxTags)
}

// uasPiece is one command of a batch and how it ended.
type uasPiece struct {
	r      request
	tag    uint16
	n      int
	status [uasStatusLen]byte
	cmd    [uasCommandLen]byte
	// xStatus, xData and xCmd are its transfers on streams.
	xStatus, xData, xCmd PipeXfer
	// finished: the device answered it (SENSE or RESPONSE IU), so it
	// holds the tag no more; err is nil when it passed and moved all.
	finished bool
	err      error
}

// batch runs READs or WRITEs at once, each with its own tag, and
// returns each one's outcome: nil when it passed and moved all its data,
// its sense (*scsi.SenseError) after a CHECK CONDITION, or another error.
// A failed command is not repeated here: the caller sends it again alone,
// with the recovery ladder. What the device did not answer is aborted
// (ABORT TASK, LOGICAL UNIT RESET) before its tag is used again.
func (u *uasTransport) batch(ctx context.Context, rs []request) []error {
	u.t.mu.Lock()
	defer u.t.mu.Unlock()
	ps := make([]*uasPiece, len(rs))
	total := 0
	for i, r := range rs {
		ps[i] = &uasPiece{r: r, tag: u.nextTag(), err: errors.New("not answered")}
		total += len(r.data)
	}
	errs := make([]error, len(rs))
	if err := ctx.Err(); err != nil {
		for i := range errs {
			errs[i] = err
		}
		return errs
	}
	bctx, cancel := context.WithTimeout(ctx, u.t.timeout(total))
	defer cancel()
	u.t.commands += int64(len(ps))
	if u.streams > 0 {
		u.batchStreams(bctx, ps)
	} else {
		u.batchReady(bctx, ps)
	}
	gone := false
	for i, p := range ps {
		errs[i] = p.err
		gone = gone || errors.Is(p.err, ErrNoDevice)
	}
	for _, p := range ps {
		if !p.finished && !gone {
			u.failedTag, u.failedLUN = p.tag, p.r.lun
			if err := u.recover(context.WithoutCancel(ctx)); errors.Is(err, ErrNoDevice) {
				gone = true
			}
		}
	}
	u.failedTag = 0
	return errs
}

// endPiece records the status IU that ended p.
func (u *uasTransport) endPiece(p *uasPiece, iu statusIU) {
	p.finished = true
	switch {
	case iu.id == iuResponse:
		p.err = fmt.Errorf("%w: %s (tag %d)", ErrUASResponse, responseName(iu.code), p.tag)
	case iu.status == scsiCheckCondition:
		p.err = fmt.Errorf("command failed without sense data: %w", errNoSenseData)
		if len(iu.sense) > 0 {
			if se, err := scsi.ParseSense(iu.sense); err == nil {
				p.err = se
			}
		}
	case iu.status != scsiGood:
		p.err = fmt.Errorf("SCSI status 0x%02x: %w", iu.status, errNoSenseData)
	case p.n != len(p.r.data):
		p.err = fmt.Errorf("%w: %d of %d bytes", ErrIncomplete, p.n, len(p.r.data))
	default:
		p.err = nil
	}
}

// batchStreams: every command's status read and data transfer wait on
// its stream, then the COMMAND IUs go out one after the other; all are
// submitted at once and reaped here.
func (u *uasTransport) batchStreams(ctx context.Context, ps []*uasPiece) {
	xs := make([]*PipeXfer, 0, 3*len(ps))
	for _, p := range ps {
		pipe := PipeDataIn
		if p.r.dir == DataOut {
			pipe = PipeDataOut
		}
		p.xStatus = PipeXfer{Pipe: PipeStatus, Stream: u.stream(p.tag), Buf: p.status[:]}
		p.xData = PipeXfer{Pipe: pipe, Stream: u.stream(p.tag), Buf: p.r.data}
		xs = append(xs, &p.xStatus, &p.xData)
	}
	for _, p := range ps {
		encodeCommandIU(&p.cmd, p.tag, p.r.lun, u.t.padCDB(p.r.cdb))
		p.xCmd = PipeXfer{Pipe: PipeCommand, Buf: p.cmd[:]}
		xs = append(xs, &p.xCmd)
	}
	stop := u.runXfers(ctx, xs...)
	for _, p := range ps {
		c, st, d := &p.xCmd, &p.xStatus, &p.xData
		p.n = max(0, min(d.N, len(p.r.data)))
		if c.Err != nil || c.N != len(c.Buf) {
			// Not sent whole: nothing waits for it in the device when
			// nothing of it went out.
			p.finished = c.N == 0
			if c.Err != nil && !errors.Is(c.Err, context.Canceled) && c.Err != errNotSubmitted {
				p.err = fmt.Errorf("send IU on the command pipe: %w", c.Err)
			}
			continue
		}
		if st.Err != nil {
			// Unanswered: what cancelled it says why.
			err := st.Err
			if d.Err != nil && !errors.Is(d.Err, context.Canceled) {
				err = fmt.Errorf("data %s at byte %d of %d: %w", p.r.dir, p.n, len(p.r.data), d.Err)
			} else if errors.Is(err, context.Canceled) && stop != nil {
				err = fmt.Errorf("read the status pipe: %w", stop)
			} else {
				err = fmt.Errorf("read the status pipe: %w", err)
			}
			p.err = err
			continue
		}
		iu, err := parseStatusIU(st.Buf[:max(0, min(st.N, len(st.Buf)))])
		switch {
		case err != nil:
			p.err = err
		case iu.tag != p.tag || (iu.id != iuSense && iu.id != iuResponse):
			p.err = fmt.Errorf("%w: IU 0x%02x for tag %d on the stream of tag %d", ErrUASProtocol, iu.id, iu.tag, p.tag)
		case d.Err != nil && !errors.Is(d.Err, context.Canceled):
			p.finished = true
			p.err = fmt.Errorf("data %s at byte %d of %d: %w", p.r.dir, p.n, len(p.r.data), d.Err)
		default:
			u.endPiece(p, iu)
		}
	}
}

// batchReady: without streams the COMMAND IUs go out, then the status
// pipe says, command by command in the device's order, whose data phase
// comes (READ READY, WRITE READY) and who is done.
func (u *uasTransport) batchReady(ctx context.Context, ps []*uasPiece) {
	byTag := map[uint16]*uasPiece{}
	for i, p := range ps {
		encodeCommandIU(&u.cmd, p.tag, p.r.lun, u.t.padCDB(p.r.cdb))
		if err := u.sendIU(ctx, u.cmd[:]); err != nil {
			p.err = err
			for _, q := range ps[i+1:] {
				q.finished = true // never sent
			}
			break
		}
		byTag[p.tag] = p
	}
	for pending := len(byTag); pending > 0; {
		iu, err := u.readStatus(ctx, 0, u.status[:])
		p := byTag[iu.tag]
		if err == nil && (p == nil || p.finished) {
			err = fmt.Errorf("%w: IU 0x%02x for tag %d, which is not in flight", ErrUASProtocol, iu.id, iu.tag)
		}
		if err != nil {
			for _, q := range byTag {
				if !q.finished {
					q.err = err
				}
			}
			return
		}
		switch iu.id {
		case iuSense, iuResponse:
			u.endPiece(p, iu)
			pending--
			continue
		}
		pipe, want := PipeDataIn, DataIn
		if iu.id == iuWriteReady {
			pipe, want = PipeDataOut, DataOut
		}
		if p.r.dir != want {
			p.err = fmt.Errorf("%w: %s READY for a %s command", ErrUASProtocol, want, p.r.dir)
			return
		}
		n, err := u.transfer(ctx, pipe, 0, p.r.data)
		p.n = n
		if err != nil {
			p.err = fmt.Errorf("data %s at byte %d of %d: %w", p.r.dir, p.n, len(p.r.data), err)
			return
		}
	}
}
