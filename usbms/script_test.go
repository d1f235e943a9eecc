package usbms

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/usbflash/usbflash/scsi"
)

// step is one scripted endpoint call and its answer.
type step struct {
	call string // "out", "in", "csw", "class", "clearIn", "clearOut", "reset"
	n    int    // bytes moved for out and in; -1 means all
	data []byte // bytes an "in" step returns
	// status, residue and tagDelta shape a "csw" step; tagDelta is added
	// to the tag of the last CBW.
	status   byte
	residue  uint32
	tagDelta uint32
	raw      []byte // when set, a "csw" step returns these bytes instead
	err      error
}

// script is an Endpoint that answers calls from a list of steps and fails
// the test on any call out of order.
type script struct {
	t       *testing.T
	steps   []step
	lastTag uint32
	cbws    [][]byte
}

func (s *script) next(call string) step {
	s.t.Helper()
	if len(s.steps) == 0 {
		s.t.Fatalf("unexpected %s call: script exhausted", call)
	}
	st := s.steps[0]
	s.steps = s.steps[1:]
	if st.call != call && !(call == "in" && st.call == "csw") {
		s.t.Fatalf("call %s, script expected %s", call, st.call)
	}
	return st
}

func (s *script) BulkOut(ctx context.Context, p []byte) (int, error) {
	st := s.next("out")
	if len(p) == cbwLen && binary.LittleEndian.Uint32(p) == cbwSignature {
		s.lastTag = binary.LittleEndian.Uint32(p[4:8])
		s.cbws = append(s.cbws, append([]byte(nil), p...))
	}
	n := st.n
	if n < 0 {
		n = len(p)
	}
	return n, st.err
}

func (s *script) BulkIn(ctx context.Context, p []byte) (int, error) {
	st := s.next("in")
	if st.call == "csw" {
		if st.err != nil {
			return 0, st.err
		}
		b := st.raw
		if b == nil {
			b = make([]byte, cswLen)
			binary.LittleEndian.PutUint32(b[0:], cswSignature)
			binary.LittleEndian.PutUint32(b[4:], s.lastTag+st.tagDelta)
			binary.LittleEndian.PutUint32(b[8:], st.residue)
			b[12] = st.status
		}
		return copy(p, b), nil
	}
	if st.data != nil {
		return copy(p, st.data), st.err
	}
	n := st.n
	if n < 0 {
		n = len(p)
	}
	return n, st.err
}

func (s *script) ClassRequest(ctx context.Context, in bool, request uint8, value uint16, data []byte) (int, error) {
	st := s.next("class")
	return copy(data, st.data), st.err
}

func (s *script) ClearHalt(ctx context.Context, in bool) error {
	if in {
		return s.next("clearIn").err
	}
	return s.next("clearOut").err
}

func (s *script) ResetPort(ctx context.Context) error { return s.next("reset").err }

// Sleep takes the pauses the transport makes (after a reset) as no time:
// a script has no clock.
func (s *script) Sleep(context.Context, time.Duration) error { return nil }

func (s *script) done() {
	s.t.Helper()
	if len(s.steps) > 0 {
		s.t.Errorf("%d scripted steps not reached, next %q", len(s.steps), s.steps[0].call)
	}
}

var (
	errFakeStall  = fmt.Errorf("fake: %w", ErrStall)
	errFakeGone   = fmt.Errorf("fake: %w", ErrNoDevice)
	errFakeBroken = errors.New("fake: transfer error")
)

// The steps of a clean command and of reset recovery.
var (
	cbw        = step{call: "out", n: -1}
	dataAll    = step{call: "out", n: -1}
	passed     = step{call: "csw"}
	bulkReset  = step{call: "class"}
	clearIn    = step{call: "clearIn"}
	clearOut   = step{call: "clearOut"}
	portReset  = step{call: "reset"}
	resetSteps = []step{bulkReset, clearIn, clearOut}
)

func seq(parts ...any) []step {
	var out []step
	for _, p := range parts {
		switch p := p.(type) {
		case step:
			out = append(out, p)
		case []step:
			out = append(out, p...)
		}
	}
	return out
}

func senseStep(key scsi.SenseKey, asc, ascq byte) step {
	b := make([]byte, senseLen)
	b[0], b[2], b[7], b[12], b[13] = 0x70, byte(key), 10, asc, ascq
	return step{call: "in", data: b}
}

// TestLadder walks each branch of the recovery ladder for one 4 KiB WRITE.
func TestLadder(t *testing.T) {
	tests := []struct {
		name    string
		steps   []step
		chunk   int
		wantN   int // bytes Exec reports; 0 means all 4096
		wantErr func(error) bool
	}{
		{name: "clean", steps: seq(cbw, dataAll, passed)},
		{name: "split in chunks", chunk: 1024, steps: seq(cbw, dataAll, dataAll, dataAll, dataAll, passed)},
		{name: "data stall: clear OUT, read CSW", wantN: 512, steps: seq(cbw, step{call: "out", n: 512, err: errFakeStall}, clearOut, step{call: "csw", residue: 4096 - 512})},
		{name: "CSW stall: clear IN, read again", steps: seq(cbw, dataAll, step{call: "csw", err: errFakeStall}, clearIn, passed)},
		{name: "zero-length packet before CSW", steps: seq(cbw, dataAll, step{call: "csw", raw: []byte{}}, passed)},
		{name: "two CSW stalls: reset, retry", steps: seq(cbw, dataAll, step{call: "csw", err: errFakeStall}, clearIn, step{call: "csw", err: errFakeStall}, resetSteps, cbw, dataAll, passed)},
		{name: "wrong tag: reset, retry", steps: seq(cbw, dataAll, step{call: "csw", tagDelta: 1}, resetSteps, cbw, dataAll, passed)},
		{name: "12-byte CSW: reset, retry", steps: seq(cbw, dataAll, step{call: "csw", raw: make([]byte, 12)}, resetSteps, cbw, dataAll, passed)},
		{name: "residue past length: clamped, as Linux does", wantN: -1, steps: seq(cbw, dataAll, step{call: "csw", residue: 4097})},
		{name: "status 3: reset, retry", steps: seq(cbw, dataAll, step{call: "csw", status: 3}, resetSteps, cbw, dataAll, passed)},
		{name: "phase error: reset, retry", steps: seq(cbw, dataAll, step{call: "csw", status: 2}, resetSteps, cbw, dataAll, passed)},
		{name: "CBW refused: reset, retry", steps: seq(step{call: "out", err: errFakeBroken}, resetSteps, cbw, dataAll, passed)},
		{name: "resets exhausted: port reset, retry", steps: seq(
			step{call: "out", err: errFakeBroken}, resetSteps,
			step{call: "out", err: errFakeBroken}, resetSteps,
			step{call: "out", err: errFakeBroken}, portReset, cbw, dataAll, passed)},
		{name: "all exhausted: give up after a final reset", wantErr: func(err error) bool {
			return errors.Is(err, errFakeBroken) && errors.Is(err, ErrRecoveryFailed)
		}, steps: seq(
			step{call: "out", err: errFakeBroken}, resetSteps,
			step{call: "out", err: errFakeBroken}, resetSteps,
			step{call: "out", err: errFakeBroken}, portReset,
			step{call: "out", err: errFakeBroken}, resetSteps)},
		{name: "reset refused: port reset", steps: seq(step{call: "out", err: errFakeBroken}, step{call: "class", err: errFakeStall}, portReset, cbw, dataAll, passed)},
		{name: "port reset fails: give up", wantErr: func(err error) bool {
			return errors.Is(err, errFakeBroken) && strings.Contains(err.Error(), "port reset failed")
		},
			steps: seq(step{call: "out", err: errFakeBroken}, step{call: "class", err: errFakeStall}, step{call: "reset", err: errFakeBroken})},
		{name: "gone during data: no recovery", wantErr: isGone, steps: seq(cbw, step{call: "out", n: 100, err: errFakeGone})},
		{name: "gone on clear halt: no recovery", wantErr: isGone, steps: seq(cbw, step{call: "out", err: errFakeStall}, step{call: "clearOut", err: errFakeGone})},
		{name: "gone during reset: no port reset", wantErr: isGone, steps: seq(cbw, dataAll, step{call: "csw", status: 2}, step{call: "class", err: errFakeGone})},
		{name: "gone on port reset", wantErr: isGone, steps: seq(
			step{call: "out", err: errFakeBroken}, resetSteps,
			step{call: "out", err: errFakeBroken}, resetSteps,
			step{call: "out", err: errFakeBroken}, step{call: "reset", err: errFakeGone})},
		{name: "failed: REQUEST SENSE gives the reason", wantErr: func(err error) bool { return scsi.IsMediumError(err) },
			steps: seq(cbw, dataAll, step{call: "csw", status: 1}, cbw, senseStep(scsi.MediumError, 0x0C, 0), passed)},
		{name: "failed: REQUEST SENSE fails once under UNIT ATTENTION", wantErr: func(err error) bool { return scsi.IsMediumChanged(err) },
			steps: seq(cbw, dataAll, step{call: "csw", status: 1}, cbw, step{call: "in", data: []byte{}}, step{call: "csw", status: 1, residue: senseLen},
				cbw, senseStep(scsi.UnitAttention, 0x28, 0), passed)},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s := &script{t: t, steps: tt.steps}
			tr := NewTransport(s, TransportOptions{Name: "fake", ChunkSize: tt.chunk})
			cdb := scsi.Write10(0, 8, false)
			n, err := tr.Exec(context.Background(), 0, cdb.Bytes(), DataOut, make([]byte, 4096))
			s.done()
			switch tt.wantN {
			case 0:
				tt.wantN = 4096
			case -1:
				tt.wantN = 0
			}
			if tt.wantErr == nil {
				if err != nil || n != tt.wantN {
					t.Fatalf("Exec = %d, %v; want %d, nil", n, err, tt.wantN)
				}
			} else if !tt.wantErr(err) {
				t.Fatalf("Exec err = %v: not the error wanted", err)
			}
			// Every CBW carries a fresh tag.
			seen := map[uint32]bool{}
			for _, c := range s.cbws {
				tag := binary.LittleEndian.Uint32(c[4:8])
				if seen[tag] {
					t.Errorf("tag %d used twice", tag)
				}
				seen[tag] = true
			}
		})
	}
}

func isGone(err error) bool {
	return errors.Is(err, ErrNoDevice) && strings.Contains(err.Error(), "disconnected")
}

func TestDataInResidue(t *testing.T) {
	inquiry := []byte("\x00\x00\x05\x12\x1f\x00\x00\x12QEMU    QEMU HARDDISK   2.5+")
	tests := []struct {
		name  string
		steps []step
		want  int
	}{
		{"padded, residue 0", seq(cbw, step{call: "in", data: inquiry}, passed), 36},
		{"residue says 20: believed when fewer bytes came", seq(cbw, step{call: "in", data: inquiry[:30]}, step{call: "csw", residue: 16}), 20},
		// Every byte came and the CSW still says 16 were left: Linux
		// takes that for a lie and ignores the residue from then on.
		{"residue 16 on a full INQUIRY: ignored", seq(cbw, step{call: "in", data: inquiry}, step{call: "csw", residue: 16}), 36},
		{"short packet", seq(cbw, step{call: "in", data: inquiry[:8]}, passed), 8},
		{"stall after 8: clear IN", seq(cbw, step{call: "in", n: 8, err: errFakeStall}, clearIn, step{call: "csw", residue: 28}), 8},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s := &script{t: t, steps: tt.steps}
			tr := NewTransport(s, TransportOptions{})
			cdb := scsi.Inquiry(36)
			n, err := tr.Exec(context.Background(), 0, cdb.Bytes(), DataIn, make([]byte, 36))
			s.done()
			if err != nil || n != tt.want {
				t.Errorf("Exec = %d, %v; want %d, nil", n, err, tt.want)
			}
		})
	}
}

func TestMaxLUNAnswers(t *testing.T) {
	tests := []struct {
		name    string
		st      step
		want    int
		wantErr bool
	}{
		{"two LUNs", step{call: "class", data: []byte{1}}, 1, false},
		{"stall", step{call: "class", err: errFakeStall}, 0, false},
		{"no data", step{call: "class", data: []byte{}}, 0, false},
		{"impossible answer", step{call: "class", data: []byte{16}}, 0, false},
		{"gone", step{call: "class", err: errFakeGone}, 0, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s := &script{t: t, steps: []step{tt.st}}
			got, err := NewTransport(s, TransportOptions{}).MaxLUN(context.Background())
			if got != tt.want || (err != nil) != tt.wantErr {
				t.Errorf("MaxLUN() = %d, %v; want %d, error %v", got, err, tt.want, tt.wantErr)
			}
		})
	}
}

func TestExecRejectsBadRequests(t *testing.T) {
	tr := NewTransport(&script{t: t}, TransportOptions{})
	ctx := context.Background()
	cases := []struct {
		lun  int
		cdb  []byte
		dir  Direction
		data []byte
	}{
		{16, []byte{0}, NoData, nil},
		{0, nil, NoData, nil},
		{0, make([]byte, 17), NoData, nil},
		{0, []byte{0}, NoData, make([]byte, 1)},
		{0, []byte{0}, DataOut + 1, make([]byte, 1)},
	}
	for i, c := range cases {
		if _, err := tr.Exec(ctx, c.lun, c.cdb, c.dir, c.data); err == nil {
			t.Errorf("case %d: Exec accepted a bad request", i)
		}
	}
}

// okDevice answers every command as passed, without allocating, to measure
// what the host side allocates per command.
type okDevice struct {
	tag uint32
}

func (d *okDevice) BulkOut(ctx context.Context, p []byte) (int, error) {
	if len(p) == cbwLen && binary.LittleEndian.Uint32(p) == cbwSignature {
		d.tag = binary.LittleEndian.Uint32(p[4:8])
	}
	return len(p), nil
}

func (d *okDevice) BulkIn(ctx context.Context, p []byte) (int, error) {
	if len(p) != cswLen {
		return len(p), nil
	}
	binary.LittleEndian.PutUint32(p[0:], cswSignature)
	binary.LittleEndian.PutUint32(p[4:], d.tag)
	binary.LittleEndian.PutUint32(p[8:], 0)
	p[12] = 0
	return cswLen, nil
}

func (d *okDevice) ClassRequest(context.Context, bool, uint8, uint16, []byte) (int, error) {
	return 0, nil
}
func (d *okDevice) ClearHalt(context.Context, bool) error      { return nil }
func (d *okDevice) ResetPort(context.Context) error            { return nil }
func (d *okDevice) Sleep(context.Context, time.Duration) error { return nil }

// TestWriteAllocations checks the hot path reuses its CBW, CSW and CDB
// buffers. What remains is the per-command timeout's context and timer.
func TestWriteAllocations(t *testing.T) {
	l := &LUN{t: NewTransport(&okDevice{}, TransportOptions{Timeout: time.Minute}), opts: LUNOptions{}.withDefaults(), blockSize: 512, blocks: 1 << 20}
	buf := make([]byte, 1<<20)
	ctx := context.Background()
	var werr error
	allocs := testing.AllocsPerRun(100, func() {
		werr = l.WriteBlocks(ctx, 2048, buf)
	})
	if werr != nil {
		t.Fatal(werr)
	}
	ctxOnly := testing.AllocsPerRun(100, func() {
		c, cancel := context.WithTimeout(ctx, time.Minute)
		cancel()
		_ = c
	})
	if allocs > ctxOnly {
		t.Errorf("WriteBlocks allocates %v times per call; the timeout context alone is %v", allocs, ctxOnly)
	}
}

// deadlineDevice is okDevice with a deadline of its own (DeadlineSetter).
// With expire, a data phase fails as one pending at the deadline does.
type deadlineDevice struct {
	okDevice
	deadline time.Time
	seen     []time.Time // the deadline each data phase ran under
	expire   bool
	resets   int
}

func (d *deadlineDevice) SetDeadline(t time.Time)                    { d.deadline = t }
func (d *deadlineDevice) Sleep(context.Context, time.Duration) error { return nil }

func (d *deadlineDevice) BulkOut(ctx context.Context, p []byte) (int, error) {
	if len(p) != cbwLen {
		d.seen = append(d.seen, d.deadline)
		if d.expire {
			return 0, fmt.Errorf("test: transfer cancelled at the deadline: %w", context.DeadlineExceeded)
		}
	}
	return d.okDevice.BulkOut(ctx, p)
}

func (d *deadlineDevice) ClassRequest(ctx context.Context, in bool, req uint8, v uint16, b []byte) (int, error) {
	if req == reqMassStorageReset {
		d.resets++
	}
	return 0, nil
}

func TestDeadlineSetter(t *testing.T) {
	tests := []struct {
		name       string
		expire     bool
		wantErr    string
		wantResets int
	}{
		{"the deadline bounds the command and is cleared after", false, "", 0},
		{"a transfer past the deadline is no answer, then reset recovery", true, "no answer to WRITE(10) within 1m0s", 2},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			d := &deadlineDevice{expire: tc.expire}
			tr := NewTransport(d, TransportOptions{Timeout: time.Minute, TimeoutPerMiB: time.Second, MaxResets: 2})
			before := time.Now()
			_, err := tr.Exec(context.Background(), 0, []byte{0x2A, 0, 0, 0, 0, 0, 0, 0, 8, 0}, DataOut, make([]byte, 4096))
			if (err == nil) != (tc.wantErr == "") || (err != nil && !strings.Contains(err.Error(), tc.wantErr)) {
				t.Fatalf("Exec = %v, want an error containing %q", err, tc.wantErr)
			}
			if len(d.seen) == 0 || d.seen[0].Before(before.Add(time.Minute)) || d.seen[0].After(time.Now().Add(time.Minute)) {
				t.Errorf("data phase ran under deadline %v, want a minute after the command began", d.seen)
			}
			if !d.deadline.IsZero() || d.resets < tc.wantResets {
				t.Errorf("deadline after the command %v (want cleared), %d Mass Storage Resets (want >= %d)", d.deadline, d.resets, tc.wantResets)
			}
		})
	}
	// With a DeadlineSetter, a command allocates nothing.
	d := &deadlineDevice{}
	l := &LUN{t: NewTransport(d, TransportOptions{Timeout: time.Minute}), opts: LUNOptions{}.withDefaults(), blockSize: 512, blocks: 1 << 20}
	buf := make([]byte, 1<<20)
	var werr error
	allocs := testing.AllocsPerRun(100, func() {
		d.seen = d.seen[:0]
		werr = l.WriteBlocks(context.Background(), 2048, buf)
	})
	if werr != nil || allocs != 0 {
		t.Errorf("WriteBlocks = %v with %v allocations per call, want nil and 0", werr, allocs)
	}
}
