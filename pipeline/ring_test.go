package pipeline

import (
	"bytes"
	"context"
	"errors"
	"io"
	"testing"
	"unsafe"

	"github.com/usbflash/usbflash/internal/lib/aligned"
)

func TestAlignedBuffersRing(t *testing.T) {
	for _, tc := range []struct{ count, size int }{{2, 512}, {3, 4096}, {5, 8192 + 512}, {2, 1 << 20}} {
		r := newRing(alignedBuffers(tc.count, tc.size))
		if len(r.bufs) != tc.count || len(r.free) != tc.count {
			t.Fatalf("%+v: %d buffers, %d free", tc, len(r.bufs), len(r.free))
		}
		for i, b := range r.bufs {
			if len(b) != tc.size || cap(b) != tc.size {
				t.Errorf("%+v: buffer %d len %d cap %d", tc, i, len(b), cap(b))
			}
			if p := uintptr(unsafe.Pointer(unsafe.SliceData(b))); p%uintptr(aligned.Alignment()) != 0 {
				t.Errorf("%+v: buffer %d at %#x is not %d-aligned", tc, i, p, aligned.Alignment())
			}
		}
		// Buffers must not overlap: fill each with its index and read back.
		for i, b := range r.bufs {
			for j := range b {
				b[j] = byte(i + 1)
			}
		}
		for i, b := range r.bufs {
			if bytes.Count(b, []byte{byte(i + 1)}) != len(b) {
				t.Errorf("%+v: buffer %d was overwritten by another", tc, i)
			}
		}
	}
}

// TestRingSteadyStateAllocs proves the hot path allocates nothing per
// buffer: 1024 more buffers through Write, or back through VerifyHash, must
// cost no more allocations (a little slack for the runtime's own, unrelated
// ones).
func TestRingSteadyStateAllocs(t *testing.T) {
	for _, tc := range []struct {
		name string
		run  func(testing.TB, int, int)
	}{{"write", writeBuffers}, {"verify", readBuffers}} {
		if per := allocsPerBuffer(t, 4096, tc.run); per > 0.01 {
			t.Errorf("%s: %.3f allocations per buffer, want 0", tc.name, per)
		}
	}
}

// zeroNilReader returns 0, nil forever: readFull must give up, not spin.
type zeroNilReader struct{}

func (zeroNilReader) Read([]byte) (int, error) { return 0, nil }

func TestReadFull(t *testing.T) {
	for _, tc := range []struct {
		name  string
		r     io.Reader
		size  int
		wantN int
		err   error
	}{
		{"fills", bytes.NewReader(make([]byte, 100)), 64, 64, nil},
		{"exact then nothing", bytes.NewReader(make([]byte, 64)), 64, 64, nil},
		{"short is EOF, not unexpected", bytes.NewReader(make([]byte, 10)), 64, 10, io.EOF},
		{"source's own unexpected EOF passes through", io.MultiReader(bytes.NewReader(make([]byte, 5)), errReader{io.ErrUnexpectedEOF}), 64, 5, io.ErrUnexpectedEOF},
		{"no progress", zeroNilReader{}, 8, 0, io.ErrNoProgress},
	} {
		n, err := readFull(tc.r, make([]byte, tc.size))
		if n != tc.wantN || err != tc.err {
			t.Errorf("%s: readFull = %d, %v; want %d, %v", tc.name, n, err, tc.wantN, tc.err)
		}
	}
}

type errReader struct{ err error }

func (e errReader) Read([]byte) (int, error) { return 0, e.err }

// TestRingHandsOverInOrder: the producer's fills arrive in order, each
// buffer comes back to the producer, and take gives up once stopped.
func TestRingHandsOverInOrder(t *testing.T) {
	r := newRing(alignedBuffers(3, 512))
	const n = 20
	done := make(chan []int)
	go func() {
		var used []int
		for i := 0; ; i++ {
			idx, buf, ok := r.take()
			if !ok {
				done <- used
				return
			}
			used = append(used, idx)
			buf[0] = byte(i)
			if i < n {
				r.hand(fill{idx: idx, off: int64(i), n: 1, padded: 1})
			}
		}
	}()
	for i := 0; i < n; i++ {
		f, err := r.receive(context.Background())
		if err != nil || f.off != int64(i) || r.data(f)[0] != byte(i) {
			t.Fatalf("fill %d: %+v, %v", i, f, err)
		}
		r.giveBack(f)
	}
	close(r.stop)
	used := <-done
	if len(used) < n {
		t.Fatalf("%d buffers taken for %d fills", len(used), n)
	}
	for i, idx := range used[:n] {
		if idx != i%3 {
			t.Fatalf("take %d got buffer %d, want %d: buffers do not cycle", i, idx, i%3)
		}
	}
}

func TestRingReceiveCancelled(t *testing.T) {
	r := newRing(alignedBuffers(2, 512))
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if _, err := r.receive(ctx); !errors.Is(err, context.Canceled) {
		t.Fatalf("receive on a cancelled context with nothing filled: %v", err)
	}
}

// stuckProducer fills one buffer and then waits for another that never
// comes back: only the driver's stop lets it return.
type stuckProducer struct{ returned bool }

func (p *stuckProducer) produce(r *ring) {
	defer func() { p.returned = true }()
	for i := 0; ; i++ {
		idx, _, ok := r.take()
		if !ok {
			return
		}
		r.hand(fill{idx: idx, off: int64(i)})
	}
}

// failingConsumer fails on its first buffer without giving it back.
type failingConsumer struct{ err error }

func (c *failingConsumer) begin() error                { return nil }
func (c *failingConsumer) consume(fill) (bool, error)  { return false, c.err }
func (c *failingConsumer) cancelled(cause error) error { return cause }

// TestDriveWaitsForProducer: drive returns the consumer's error only once
// the producer has stopped, so the buffers are the caller's again.
func TestDriveWaitsForProducer(t *testing.T) {
	for _, cancelled := range []bool{false, true} {
		ctx, cancel := context.WithCancel(context.Background())
		want := errors.New("consumer failed")
		if cancelled {
			cancel()
			want = context.Canceled
		}
		p := &stuckProducer{}
		err := drive(ctx, newRing(alignedBuffers(2, 512)), p, &failingConsumer{err: want})
		cancel()
		if !errors.Is(err, want) || !p.returned {
			t.Errorf("cancelled %v: err = %v, producer returned %v", cancelled, err, p.returned)
		}
	}
}
