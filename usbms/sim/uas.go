package sim

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"slices"

	"github.com/usbflash/usbflash/usbms"
)

// UASMode is which transports the simulated interface offers.
type UASMode int

// Interfaces a simulated reader can offer.
const (
	// BOTOnly is the default: Bulk-Only Transport alone.
	BOTOnly UASMode = iota
	// UASOnly offers USB Attached SCSI alone (08/06/62), as QEMU's
	// usb-uas does.
	UASOnly
	// UASAndBOT offers both, in two alternate settings, as most USB 3
	// bridges do.
	UASAndBOT
)

var uasModeNames = []string{"bot", "only", "both"}

func (m UASMode) String() string { return enumName(uasModeNames, int(m)) }

// UASConfig describes the UAS side of a simulated reader.
type UASConfig struct {
	Mode UASMode
	// Streams is the number of bulk streams (SuperSpeed, stream ID =
	// tag); 0 is the high-speed mode, in which the device announces each
	// data phase with READ READY or WRITE READY on the status pipe.
	Streams int
	// OverlapAt answers the Nth COMMAND IU (counting from 1) with a
	// RESPONSE IU "overlapped tag attempted", as a device that still
	// holds a task of that tag does; 0 never.
	OverlapAt int64
	// ResponseAt answers the Nth COMMAND IU with a RESPONSE IU "invalid
	// information unit" instead of its status; 0 never.
	ResponseAt int64
	// AbortFails answers ABORT TASK with "task management function
	// failed", so that the host has to reset the logical unit.
	AbortFails bool
	// NoReadyAt never starts the data phase of the Nth COMMAND IU: no
	// READ READY or WRITE READY without streams, no data on its stream
	// with them, and so no status; 0 never.
	NoReadyAt int64
}

// uasTask is one command the device holds, by tag.
type uasTask struct {
	tag uint16
	bot botState // the data phase, as BOT's state machine runs it
	// announced: the READY IU went out (no streams); over: the data
	// phase ended; hung: the command is never answered.
	announced, over, hung bool
}

// uasState is the device's UAS side.
type uasState struct {
	on       bool // the UAS alternate setting is selected
	tasks    map[uint16]*uasTask
	queue    [][]byte          // no streams: IUs for the status pipe, in order
	byStream map[uint16][]byte // streams: the IU waiting on each stream
	current  *uasTask          // no streams: the task whose data phase was announced
	wake     chan struct{}     // closed and replaced whenever the state changes
	commands int64
	// submitted are the host's transfers not yet ended, in the order
	// submitted; ended are those ended and not yet reaped.
	submitted, ended []*usbms.PipeXfer
}

// UASMode reports whether the device is in its UAS alternate setting and
// its stream count. It implements usbms.UASEndpoint.
func (d *Device) UASMode() (bool, int) {
	d.mu.Lock()
	defer d.mu.Unlock()
	return d.uas.on, d.cfg.UAS.Streams
}

// Offers reports which transports the device offers.
func (d *Device) Offers() UASMode { return d.cfg.UAS.Mode }

// SelectUAS selects the UAS alternate setting (on) or the Bulk-Only one,
// as SET_INTERFACE does; it fails for a transport the device lacks.
func (d *Device) SelectUAS(on bool) error {
	d.mu.Lock()
	defer d.mu.Unlock()
	switch m := d.cfg.UAS.Mode; {
	case on && m == BOTOnly:
		return errors.New("sim: the reader offers no UAS interface")
	case !on && m == UASOnly:
		return errors.New("sim: the reader offers no Bulk-Only interface")
	}
	d.uas.on = on
	d.resetUAS()
	return nil
}

// resetUAS forgets every task and IU. Called with d.mu held.
func (d *Device) resetUAS() {
	d.uas.tasks = map[uint16]*uasTask{}
	d.uas.byStream = map[uint16][]byte{}
	d.uas.queue, d.uas.current = nil, nil
	d.uasWake()
}

// uasWake wakes every transfer waiting for the device. Called with d.mu
// held.
func (d *Device) uasWake() {
	if d.uas.wake != nil {
		close(d.uas.wake)
	}
	d.uas.wake = make(chan struct{})
}

// uasWait waits for the device's state to change. Called with d.mu held;
// releases it while waiting.
func (d *Device) uasWait(ctx context.Context, what string) error {
	if d.uas.wake == nil {
		d.uas.wake = make(chan struct{})
	}
	w := d.uas.wake
	d.mu.Unlock()
	defer d.mu.Lock()
	select {
	case <-w:
		return nil
	case <-ctx.Done():
		return fmt.Errorf("sim: %s: no answer from the device: %w", what, ctx.Err())
	case <-d.closed:
		return fmt.Errorf("sim: %s: device closed: %w", what, usbms.ErrNoDevice)
	}
}

// PipeSubmit queues a transfer on one pipe of the UAS interface. It
// implements usbms.UASEndpoint: the device moves it when PipeReap asks,
// as soon as the device's state lets it (a status read once an IU waits
// for it, a data transfer once its command's data phase began).
func (d *Device) PipeSubmit(x *usbms.PipeXfer) error {
	d.mu.Lock()
	defer d.mu.Unlock()
	what := x.Pipe.String()
	switch {
	case !d.uas.on:
		d.uasEnd(x, 0, fmt.Errorf("sim: %s: the UAS alternate setting is not selected: %w", what, usbms.ErrStall))
	case (x.Stream != 0) != (d.cfg.UAS.Streams > 0 && x.Pipe != usbms.PipeCommand) || int(x.Stream) > d.cfg.UAS.Streams:
		d.uasEnd(x, 0, fmt.Errorf("sim: %s: stream %d with %d streams allocated: %w", what, x.Stream, d.cfg.UAS.Streams, usbms.ErrStall))
	case x.Pipe < usbms.PipeCommand || x.Pipe > usbms.PipeDataOut:
		d.uasEnd(x, 0, fmt.Errorf("sim: %s: no such pipe: %w", what, usbms.ErrStall))
	default:
		d.uas.submitted = append(d.uas.submitted, x)
	}
	return nil
}

// PipeCancel ends x if it is still pending, having moved nothing. It
// implements usbms.UASEndpoint.
func (d *Device) PipeCancel(x *usbms.PipeXfer) {
	d.mu.Lock()
	defer d.mu.Unlock()
	if i := slices.Index(d.uas.submitted, x); i >= 0 {
		d.uas.submitted = slices.Delete(d.uas.submitted, i, i+1)
		d.uasEnd(x, 0, fmt.Errorf("sim: %s: %w", x.Pipe, context.Canceled))
	}
}

// PipeReap gives back the oldest ended transfer, moving those the device
// can move until one ends, or waiting for the device. It implements
// usbms.UASEndpoint.
func (d *Device) PipeReap(ctx context.Context) (*usbms.PipeXfer, error) {
	d.mu.Lock()
	defer d.mu.Unlock()
	u := &d.uas
	for {
		if len(u.ended) > 0 {
			x := u.ended[0]
			u.ended = slices.Delete(u.ended, 0, 1)
			return x, nil
		}
		if len(u.submitted) == 0 {
			return nil, errors.New("sim: no UAS transfer pending")
		}
		if err := ctx.Err(); err != nil {
			return nil, fmt.Errorf("sim: UAS transfers: no answer from the device: %w", err)
		}
		if err := d.usable(context.Background(), "UAS transfer"); err != nil {
			for _, x := range u.submitted {
				d.uasEnd(x, 0, err)
			}
			u.submitted = u.submitted[:0]
			continue
		}
		for d.uasPass(ctx) {
		}
		if len(u.ended) > 0 {
			continue
		}
		if err := d.uasWait(ctx, "UAS transfers"); err != nil && ctx.Err() == nil {
			// Closed: every transfer ends with it.
			for _, x := range u.submitted {
				d.uasEnd(x, 0, err)
			}
			u.submitted = u.submitted[:0]
		}
	}
}

// uasEnd ends x with n bytes moved and err. Called with d.mu held.
func (d *Device) uasEnd(x *usbms.PipeXfer, n int, err error) {
	x.N, x.Err = n, err
	d.uas.ended = append(d.uas.ended, x)
}

// uasPass moves, in the order submitted, each transfer the device's state
// lets it move now, and reports whether one ended. Called with d.mu held.
func (d *Device) uasPass(ctx context.Context) bool {
	u := &d.uas
	ended := false
	for i := 0; i < len(u.submitted); {
		x := u.submitted[i]
		var n int
		var err error
		ready := true
		switch x.Pipe {
		case usbms.PipeCommand:
			n, err = d.uasCommandPipe(x.Buf)
		case usbms.PipeStatus:
			n, ready, err = d.uasStatusPipe(ctx, x.Stream, x.Buf)
		default:
			n, ready, err = d.uasDataPipe(ctx, x.Pipe == usbms.PipeDataIn, x.Stream, x.Buf)
		}
		if !ready {
			i++
			continue
		}
		u.submitted = slices.Delete(u.submitted, i, i+1)
		d.uasEnd(x, n, err)
		ended = true
	}
	return ended
}

// uasCommandPipe takes a COMMAND or TASK MANAGEMENT IU.
func (d *Device) uasCommandPipe(p []byte) (int, error) {
	defer d.uasWake()
	if len(p) < 16 {
		return len(p), nil // not an IU: dropped, as a device would
	}
	tag := binary.BigEndian.Uint16(p[2:])
	lun := int(binary.BigEndian.Uint16(p[8:]))
	switch p[0] {
	case 0x01:
		if len(p) < 32 {
			d.uasRespond(tag, 0x02) // invalid IU
			return len(p), nil
		}
		d.uasCommand(tag, lun, p[16:32])
	case 0x05:
		d.uasTaskManagement(tag, p[4], binary.BigEndian.Uint16(p[6:]), lun)
	default:
		d.uasRespond(tag, 0x02)
	}
	return len(p), nil
}

// uasCommand runs a COMMAND IU: the command executes (or is planned) as
// BOT's would, with the host's length taken from the device's plan,
// since a UAS host announces none.
func (d *Device) uasCommand(tag uint16, lunIdx int, cdb []byte) {
	u := &d.uas
	u.commands++
	if old, ok := u.tasks[tag]; ok {
		// SAM: an overlapped command ends both.
		d.uasDrop(old)
		d.uasRespond(tag, 0x0A)
		return
	}
	switch u.commands {
	case d.cfg.UAS.OverlapAt:
		d.uasRespond(tag, 0x0A)
		return
	case d.cfg.UAS.ResponseAt:
		d.uasRespond(tag, 0x02)
		return
	}
	cdb = cdb[:cdbLen(cdb[0])]
	if d.cfg.Misbehaviour.IgnoreLUN {
		lunIdx = 0
	}
	d.stats.Commands++
	if d.stats.Opcodes == nil {
		d.stats.Opcodes = make(map[byte]int64)
	}
	d.stats.Opcodes[cdb[0]]++
	d.addLatency()
	var p plan
	if cdb[0] == opReportLUNs {
		p = d.reportLUNs(cdb)
	} else {
		p = d.execute(lunIdx, cdb)
	}
	d.addBusy(d.commandCost(p))
	hostIn := p.dir == dirIn
	d.bot = botState{tag: uint32(tag), lun: lunIdx, host: p.n, hostIn: hostIn, plan: p, status: p.status, stallAt: -1}
	t := &uasTask{tag: tag}
	if d.takeFault(NeverAnswer, lunIdx, nil) != nil || d.misbehaveCommand(cbw{tag: uint32(tag), length: uint32(p.n), in: hostIn, lun: lunIdx, cdb: cdb}) {
		t.hung = true
	}
	switch {
	case p.dir == dirNone || p.n == 0 || p.status != statusPassed && p.good == 0:
		t.over = true
	case u.commands == d.cfg.UAS.NoReadyAt:
		t.hung = true // its data phase is never announced
	case hostIn:
		d.beginDataIn()
	default:
		d.beginDataOut()
	}
	t.bot = d.bot
	d.bot = botState{stallAt: -1}
	u.tasks[tag] = t
	if t.hung {
		return
	}
	if t.over {
		d.uasFinish(t)
		return
	}
	if d.cfg.UAS.Streams == 0 && u.current == nil {
		d.uasAnnounce(t)
	}
}

// opReportLUNs is REPORT LUNS (SPC-4 6.33), which UAS hosts ask instead
// of BOT's Get Max LUN.
const opReportLUNs = 0xA0

// reportLUNs lists the device's LUNs.
func (d *Device) reportLUNs(cdb []byte) plan {
	b := make([]byte, 8+8*len(d.luns))
	binary.BigEndian.PutUint32(b, uint32(8*len(d.luns)))
	for i := range d.luns {
		b[8+8*i+1] = byte(i)
	}
	return dataIn(b, int(binary.BigEndian.Uint32(cdb[6:])))
}

// uasAnnounce queues the READY IU of t's data phase (no streams).
func (d *Device) uasAnnounce(t *uasTask) {
	id := byte(0x06)
	if !t.bot.hostIn {
		id = 0x07
	}
	d.uasQueue(t.tag, []byte{id, 0, byte(t.tag >> 8), byte(t.tag)})
	t.announced = true
	d.uas.current = t
}

// uasQueue puts an IU for the status pipe: on tag's stream, or at the end
// of the one queue.
func (d *Device) uasQueue(tag uint16, iu []byte) {
	if d.cfg.UAS.Streams > 0 {
		d.uas.byStream[tag] = iu
	} else {
		d.uas.queue = append(d.uas.queue, iu)
	}
	d.uasWake()
}

// uasRespond queues a RESPONSE IU.
func (d *Device) uasRespond(tag uint16, code byte) {
	d.uasQueue(tag, []byte{0x04, 0, byte(tag >> 8), byte(tag), 0, 0, 0, code})
}

// uasFinish ends t with its SENSE IU, the sense of a CHECK CONDITION in
// it (autosense: REQUEST SENSE is not needed), and announces the next
// task's data phase.
func (d *Device) uasFinish(t *uasTask) {
	u := &d.uas
	delete(u.tasks, t.tag)
	if u.current == t {
		u.current = nil
	}
	iu := make([]byte, 16, 16+fixedSenseLen)
	iu[0] = 0x03
	binary.BigEndian.PutUint16(iu[2:], t.tag)
	if t.bot.status != statusPassed {
		iu[6] = 0x02 // CHECK CONDITION
		var s sense
		if t.bot.lun < len(d.luns) {
			s = d.luns[t.bot.lun].sense
			d.luns[t.bot.lun].sense = sense{}
		} else {
			s = senseBadLUN()
		}
		iu = append(iu, s.fixed()...)
		binary.BigEndian.PutUint16(iu[14:], fixedSenseLen)
	}
	d.uasQueue(t.tag, iu)
	if d.cfg.UAS.Streams == 0 && u.current == nil {
		for _, next := range u.tasks {
			if !next.over && !next.hung && !next.announced {
				d.uasAnnounce(next)
				break
			}
		}
	}
}

// uasDrop forgets a task without an answer.
func (d *Device) uasDrop(t *uasTask) {
	delete(d.uas.tasks, t.tag)
	if d.uas.current == t {
		d.uas.current = nil
	}
}

// uasTaskManagement runs ABORT TASK and LOGICAL UNIT RESET.
func (d *Device) uasTaskManagement(tag uint16, function byte, taskTag uint16, lunIdx int) {
	switch function {
	case 0x01: // ABORT TASK
		d.stats.UASAborts++
		if d.cfg.UAS.AbortFails {
			d.uasRespond(tag, 0x05)
			return
		}
		if t, ok := d.uas.tasks[taskTag]; ok {
			d.uasDrop(t)
		}
		d.uasRespond(tag, 0x00)
	case 0x08: // LOGICAL UNIT RESET
		d.stats.UASLUResets++
		for _, t := range d.uas.tasks {
			if t.bot.lun == lunIdx {
				d.uasDrop(t)
			}
		}
		if lunIdx < len(d.luns) {
			ua := sense{key: keyUnitAttention, asc: 0x29, ascq: 0x03}
			d.luns[lunIdx].sense, d.luns[lunIdx].unitAttention = sense{}, &ua
		}
		d.uasRespond(tag, 0x00)
	default:
		d.uasRespond(tag, 0x04) // not supported
	}
}

// uasStatusPipe sends the next IU: of tag's stream, or the oldest queued;
// not ready while there is none.
func (d *Device) uasStatusPipe(ctx context.Context, stream uint16, p []byte) (int, bool, error) {
	var iu []byte
	if d.cfg.UAS.Streams > 0 {
		iu = d.uas.byStream[stream]
		delete(d.uas.byStream, stream)
	} else if len(d.uas.queue) > 0 {
		iu = d.uas.queue[0]
		d.uas.queue = d.uas.queue[1:]
	}
	if iu == nil {
		return 0, false, nil
	}
	if err := d.pace(ctx, 0, "status pipe"); err != nil {
		return 0, true, err
	}
	return copy(p, iu), true, nil
}

// uasDataPipe moves the data of the task the stream names (the announced
// one without streams), with BOT's data machinery: the speed model,
// medium errors, short data, a disconnect. It is not ready while no such
// task's data phase has begun.
func (d *Device) uasDataPipe(ctx context.Context, in bool, stream uint16, p []byte) (int, bool, error) {
	moved := 0
	for moved < len(p) {
		t := d.uas.current
		if stream != 0 {
			t = d.uas.tasks[stream]
		}
		if t == nil || t.hung || t.over || t.bot.hostIn != in {
			// The device ended the phase short, or has not begun it.
			return moved, moved > 0, nil
		}
		d.bot = t.bot
		var n int
		var err error
		if in {
			n, err = d.dataIn(ctx, p[moved:])
		} else {
			n, err = d.dataOut(ctx, p[moved:])
		}
		t.bot = d.bot
		d.bot = botState{stallAt: -1}
		moved += n
		ended := t.bot.phase == phaseCSW || errors.Is(err, usbms.ErrStall)
		if !ended && in && t.bot.done >= t.bot.limit {
			ended = true
		}
		if !ended && !in && t.bot.done >= t.bot.host {
			ended = true
		}
		if ended {
			// A halt is BOT's way to end a phase; UAS ends it with
			// the SENSE IU.
			t.bot.haltIn, t.bot.haltOut = false, false
			t.over = true
			d.uasFinish(t)
			return moved, true, nil
		}
		if err != nil {
			d.uasWake()
			return moved, true, err
		}
		if n == 0 {
			return moved, true, nil
		}
	}
	return moved, true, nil
}
