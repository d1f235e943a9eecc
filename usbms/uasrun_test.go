package usbms

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"testing"
)

// scriptEndpoint is a UASEndpoint whose transfers end as a script says:
// each reap ends the next step's transfer (by index in the order
// submitted) unless a cancelled one is waiting, which comes back first; a
// step of -1 is a reap whose ctx is done.
type scriptEndpoint struct {
	subs      []*PipeXfer
	steps     []scriptStep
	cancelled []*PipeXfer // cancelled, not yet reaped
	cancels   []int       // indexes cancelled, in order
	failAt    int         // PipeSubmit of this index fails (-1: none)
}

type scriptStep struct {
	i    int // transfer index; -1: ctx done
	n    int
	err  error
	data []byte // what an IN transfer brings (n is then its length)
}

func (e *scriptEndpoint) UASMode() (bool, int) { return true, 16 }

func (e *scriptEndpoint) PipeSubmit(x *PipeXfer) error {
	if len(e.subs) == e.failAt {
		return errors.New("submit refused")
	}
	e.subs = append(e.subs, x)
	return nil
}

func (e *scriptEndpoint) PipeCancel(x *PipeXfer) {
	if slices.Contains(e.cancelled, x) {
		return
	}
	e.cancels = append(e.cancels, slices.Index(e.subs, x))
	e.cancelled = append(e.cancelled, x)
}

func (e *scriptEndpoint) PipeReap(ctx context.Context) (*PipeXfer, error) {
	if len(e.cancelled) > 0 {
		x := e.cancelled[0]
		e.cancelled = e.cancelled[1:]
		x.N, x.Err = 0, fmt.Errorf("discarded: %w", context.Canceled)
		return x, nil
	}
	if len(e.steps) == 0 {
		return nil, errors.New("script ran out: the transfer would wait for ever")
	}
	s := e.steps[0]
	e.steps = e.steps[1:]
	if s.i < 0 {
		return nil, context.DeadlineExceeded
	}
	x := e.subs[s.i]
	x.N, x.Err = s.n, s.err
	if s.data != nil {
		x.N = copy(x.Buf, s.data)
	}
	return x, nil
}

// TestUASRun: runXfers submits in order and reaps until every transfer is
// back: a status read on a stream that ends cancels the data transfer of
// its stream (residue) but no other; a failing transfer (a stall) cancels
// all the rest; a ctx that ends cancels all and still reaps them; a
// submit that fails cancels those submitted and submits no more.
func TestUASRun(t *testing.T) {
	stall := errors.New("stall")
	cases := []struct {
		name    string
		steps   []scriptStep
		failAt  int
		wantErr error
		cancels []int
		want    []int // N of each transfer after the run; -1: not checked
	}{
		{name: "all answered", steps: []scriptStep{{4, 32, nil, nil}, {1, 4096, nil, nil}, {0, 16, nil, nil}, {3, 4096, nil, nil}, {2, 16, nil, nil}, {5, 32, nil, nil}},
			failAt: -1, want: []int{16, 4096, 16, 4096, 32, 32}},
		{name: "residue: status ends its stream's data", steps: []scriptStep{{4, 32, nil, nil}, {5, 32, nil, nil}, {0, 16, nil, nil}, {3, 4096, nil, nil}, {2, 16, nil, nil}},
			failAt: -1, cancels: []int{1}, want: []int{16, 0, 16, 4096, 32, 32}},
		{name: "a stall cancels the rest", steps: []scriptStep{{4, 32, nil, nil}, {1, 512, stall, nil}},
			failAt: -1, cancels: []int{0, 2, 3, 5}, want: []int{0, 512, 0, 0, 32, 0}},
		{name: "ctx done", steps: []scriptStep{{4, 32, nil, nil}, {-1, 0, nil, nil}},
			failAt: -1, wantErr: context.DeadlineExceeded, cancels: []int{0, 1, 2, 3, 5}, want: []int{0, 0, 0, 0, 32, 0}},
		{name: "submit refused", failAt: 2, wantErr: errors.New("submit refused"), cancels: []int{0, 1}, want: []int{0, 0, 0, 0, 0, 0}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			ep := &scriptEndpoint{steps: c.steps, failAt: c.failAt}
			u := &uasTransport{ep: ep, streams: 16}
			xs := []*PipeXfer{
				{Pipe: PipeStatus, Stream: 1, Buf: make([]byte, 112)},
				{Pipe: PipeDataOut, Stream: 1, Buf: make([]byte, 4096)},
				{Pipe: PipeStatus, Stream: 2, Buf: make([]byte, 112)},
				{Pipe: PipeDataOut, Stream: 2, Buf: make([]byte, 4096)},
				{Pipe: PipeCommand, Buf: make([]byte, 32)},
				{Pipe: PipeCommand, Buf: make([]byte, 32)},
			}
			err := u.runXfers(context.Background(), xs...)
			if (err == nil) != (c.wantErr == nil) || err != nil && err.Error() != c.wantErr.Error() {
				t.Errorf("runXfers: %v, want %v", err, c.wantErr)
			}
			for i, x := range xs {
				if x.pending {
					t.Errorf("transfer %d still pending: its buffer is the device's", i)
				}
				if x.N != c.want[i] {
					t.Errorf("transfer %d moved %d, want %d", i, x.N, c.want[i])
				}
			}
			if !slices.Equal(ep.cancels, c.cancels) {
				t.Errorf("cancelled %v, want %v", ep.cancels, c.cancels)
			}
			if len(ep.steps) != 0 {
				t.Errorf("%d steps of the script left", len(ep.steps))
			}
		})
	}
}

// TestUASRunNoStreams: without streams (stream 0) too, a status read that
// ends while the data transfer is pending (the device ended the command
// having taken less) cancels it, and the cancel is no failure.
func TestUASRunNoStreams(t *testing.T) {
	ep := &scriptEndpoint{steps: []scriptStep{{1, 16, nil, nil}}, failAt: -1}
	u := &uasTransport{ep: ep}
	data := &PipeXfer{Pipe: PipeDataOut, Buf: make([]byte, 4096)}
	st := &PipeXfer{Pipe: PipeStatus, Buf: make([]byte, 112)}
	if err := u.runXfers(context.Background(), data, st); err != nil {
		t.Fatalf("runXfers: %v", err)
	}
	if st.Err != nil || st.N != 16 || !errors.Is(data.Err, context.Canceled) || !data.cancelled || data.pending {
		t.Errorf("status %d %v, data %v (cancelled %v, pending %v); want the status, the data cancelled", st.N, st.Err, data.Err, data.cancelled, data.pending)
	}
}

// TestUASReadyDeadline: without streams, a deadline that passes while the
// data and the status read after WRITE READY are pending is reported as
// the deadline (so the attempt counts as not answered), not as the
// cancel it caused.
func TestUASReadyDeadline(t *testing.T) {
	ep := &scriptEndpoint{failAt: -1, steps: []scriptStep{
		{i: 1, n: 32}, // the COMMAND IU
		{i: 0, data: []byte{iuWriteReady, 0, 0, 1}}, // WRITE READY, tag 1
		{i: 2, n: 4096}, // the data
		{i: -1},         // the deadline, the SENSE IU not come
	}}
	u := &uasTransport{ep: ep}
	_, moved, err := u.attemptReady(context.Background(), request{dir: DataOut, data: make([]byte, 4096)}, 1)
	if !errors.Is(err, context.DeadlineExceeded) || moved != 4096 {
		t.Fatalf("attemptReady: %d bytes, %v; want 4096 and the deadline", moved, err)
	}
	// The status read is one PipeXfer, submitted twice: index 0.
	if len(ep.steps) != 0 || !slices.Equal(ep.cancels, []int{0}) {
		t.Errorf("steps left %d, cancelled %v; want none left, the status read (0) cancelled", len(ep.steps), ep.cancels)
	}
}
