// Package fanout writes one stream of blocks to several block devices at
// once, so that one decode feeds every card and a card that fails drops out
// alone while the others go on.
//
// A Group is itself a blockdev.Device: pipeline.Write drives it exactly
// as it drives one card (first transfer last, sync at the end), and the
// group hands every WriteBlocks to each live member. Verify is per member.
//
// What it promises an importer: a member's failure is its own (its
// Result says why, with the member's error for errors.Is and errors.As)
// and ends no other member's write; the group fails only when every member
// has (ErrAllFailed). Each member is written in the order the group was
// given the blocks, and with Options.Lag no member holds the others back
// until it is that many transfers behind.
package fanout

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/usbflash/usbflash/internal/lib/aligned"
	"github.com/usbflash/usbflash/pipeline/blockdev"
	// its CapacityError: an image too large for one card is the error a single write gives
)

// Target is one card of a group.
type Target struct {
	Name string // as messages and reports name it
	Dev  blockdev.Device
}

// Options tune a Group.
type Options struct {
	// Lag is how many transfers a member may fall behind the group. 0 is
	// lockstep: WriteBlocks returns when every live member has written the
	// buffer, so the slowest card sets the pace and nothing is copied. With
	// Lag > 0 each member gets Lag buffers of its own (device memory when it
	// offers it), WriteBlocks copies the buffer into each member's window
	// and returns at once unless a window is full: a slow card holds the
	// others back only once it is Lag transfers behind.
	Lag int
	// TransferSize is the largest WriteBlocks the group will be given;
	// required when Lag > 0 (it sizes the windows).
	TransferSize int
}

// ErrAllFailed is returned (wrapped, with every member's error) once no
// member is left to write to.
var ErrAllFailed = errors.New("every card of the group failed")

// Result is what happened to one member.
type Result struct {
	Name    string
	Err     error         // nil: every write and the sync succeeded
	Written int64         // bytes written (the held first transfer included)
	Busy    time.Duration // time inside WriteBlocks and Sync
	Memory  string        // the window's memory ("" in lockstep)
}

var _ blockdev.Device = (*Group)(nil)

// Group is a blockdev.Device that writes to every live member.
// WriteBlocks and Sync are for one goroutine (the pipeline's writer).
type Group struct {
	members []*member
	bs      int
	blocks  int64
	lag     int
	// done collects one reply per member for each lockstep write or sync,
	// sized so workers never block on it: no allocation per command.
	done chan struct{}
}

type member struct {
	t       Target
	index   int // in the order of the targets
	jobs    chan job
	window  [][]byte
	free    chan int // window buffers not queued
	memory  string
	release func()

	mu  sync.Mutex // guards res
	res Result
}

type job struct {
	ctx  context.Context
	sync bool
	// do, when set, is run with the member's device (Each): written is
	// what it wrote.
	do  func(i int, dev blockdev.Device) (written int64, err error)
	lba int64
	p   []byte // lockstep: the shared buffer
	idx int    // lag: the window buffer, -1 in lockstep
}

// New starts a group over targets, which must share one block size. Close
// stops it.
func New(targets []Target, opts Options) (*Group, error) {
	if len(targets) == 0 {
		return nil, errors.New("fanout: no targets")
	}
	if opts.Lag < 0 || (opts.Lag > 0 && opts.TransferSize <= 0) {
		return nil, fmt.Errorf("fanout: lag %d with transfer size %d", opts.Lag, opts.TransferSize)
	}
	g := &Group{bs: targets[0].Dev.BlockSize(), blocks: targets[0].Dev.BlockCount(), lag: opts.Lag,
		done: make(chan struct{}, len(targets))}
	for _, t := range targets {
		if bs := t.Dev.BlockSize(); bs != g.bs {
			g.Close()
			return nil, fmt.Errorf("%s has %d-byte blocks and %s %d-byte blocks: write them in separate runs",
				targets[0].Name, g.bs, t.Name, bs)
		}
		g.blocks = max(g.blocks, t.Dev.BlockCount())
		m := &member{t: t, index: len(g.members), res: Result{Name: t.Name}}
		if opts.Lag > 0 {
			if err := m.allocWindow(opts.Lag, opts.TransferSize); err != nil {
				g.Close()
				return nil, err
			}
		}
		m.jobs = make(chan job, max(opts.Lag, 1))
		g.members = append(g.members, m)
		go m.run(g.done)
	}
	return g, nil
}

// allocWindow takes the member's window from the device when it can send
// that memory without a copy, else from aligned Go memory.
func (m *member) allocWindow(count, size int) error {
	if a, ok := m.t.Dev.(blockdev.BufferAllocator); ok {
		if bufs, kind, free, err := a.AllocBuffers(count, size); err == nil {
			m.window, m.memory, m.release = bufs, kind, free
		}
	}
	if m.window == nil {
		mem := aligned.Bytes(count * size)
		for i := range count {
			m.window = append(m.window, mem[i*size:(i+1)*size:(i+1)*size])
		}
		m.memory = "page-aligned"
	}
	m.res.Memory = m.memory
	m.free = make(chan int, count)
	for i := range count {
		m.free <- i
	}
	return nil
}

// run is the member's worker: it performs queued commands in order. After
// the first failure it performs nothing more but keeps answering, so the
// group never waits on a dead card.
func (m *member) run(done chan<- struct{}) {
	for j := range m.jobs {
		m.mu.Lock()
		failed := m.res.Err != nil
		m.mu.Unlock()
		if !failed {
			start := time.Now()
			var err error
			p := j.p
			if j.idx >= 0 {
				p = m.window[j.idx][:len(j.p)]
			}
			var wrote int64
			switch {
			case j.do != nil:
				wrote, err = j.do(m.index, m.t.Dev)
			case j.sync:
				err = m.t.Dev.Sync(j.ctx)
			case j.lba+int64(len(p)/m.t.Dev.BlockSize()) > m.t.Dev.BlockCount():
				// An image of unknown size outgrew this card, not the
				// larger ones: it drops out alone, its first transfer
				// still zeroed, so it does not boot a truncated image.
				bs := int64(m.t.Dev.BlockSize())
				err = &blockdev.CapacityError{Device: m.t.Name, ImageSize: -1,
					Capacity: m.t.Dev.BlockCount() * bs, Written: j.lba * bs}
			default:
				err = m.t.Dev.WriteBlocks(j.ctx, j.lba, p)
			}
			m.mu.Lock()
			m.res.Busy += time.Since(start)
			switch {
			case err != nil:
				m.res.Err = err
			case j.do != nil:
				m.res.Written += wrote
			case !j.sync:
				m.res.Written += int64(len(p))
			}
			m.mu.Unlock()
		}
		if j.idx >= 0 {
			m.free <- j.idx
		}
		if j.idx < 0 || j.sync || j.do != nil {
			done <- struct{}{}
		}
	}
}

func (m *member) alive() bool {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.res.Err == nil
}

// BlockSize is the members' common block size.
func (g *Group) BlockSize() int { return g.bs }

// BlockCount is the largest member's. An image that does not fit a
// smaller card (its size known only by writing it) fails that card alone
// with a *blockdev.CapacityError when the stream reaches its end; an
// image whose size is known is refused up front, card by card.
func (g *Group) BlockCount() int64 { return g.blocks }

// String names the group in the pipeline's messages.
func (g *Group) String() string { return fmt.Sprintf("%d cards", len(g.members)) }

// WriteBlocks hands p to every live member. It fails only when no member
// is left.
func (g *Group) WriteBlocks(ctx context.Context, lba int64, p []byte) error {
	if g.lag == 0 {
		return g.each(job{ctx: ctx, lba: lba, p: p, idx: -1})
	}
	for _, m := range g.members {
		if !m.alive() {
			continue
		}
		idx := <-m.free // blocks only while this member is Lag transfers behind
		copy(m.window[idx], p)
		m.jobs <- job{ctx: ctx, lba: lba, p: m.window[idx][:len(p)], idx: idx}
	}
	return g.failure()
}

// Sync waits for every member to finish what it was given, then syncs it.
func (g *Group) Sync(ctx context.Context) error {
	return g.each(job{ctx: ctx, sync: true, idx: -1})
}

// Each runs fn on every live member's own goroutine, once the member has
// written everything it was given, with the member's index (the order of
// the targets) and device: the last writes of a write that differ per
// card (a customisation and the first transfer). A member whose fn fails
// drops out with that error; Each fails only when no member is left.
func (g *Group) Each(ctx context.Context, fn func(i int, dev blockdev.Device) (written int64, err error)) error {
	return g.each(job{ctx: ctx, do: fn, idx: -1})
}

// each gives j to every live member and waits for all of them.
func (g *Group) each(j job) error {
	n := 0
	for _, m := range g.members {
		if m.alive() {
			m.jobs <- j
			n++
		}
	}
	for range n {
		<-g.done
	}
	return g.failure()
}

// failure is nil while any member is alive.
func (g *Group) failure() error {
	for _, m := range g.members {
		if m.alive() {
			return nil
		}
	}
	errs := make([]error, 0, len(g.members))
	for _, r := range g.Results() {
		errs = append(errs, fmt.Errorf("%s: %w", r.Name, r.Err))
	}
	return fmt.Errorf("%w: %w", ErrAllFailed, errors.Join(errs...))
}

// ReadBlocks is refused: a group is written as one, but each card is read
// back, and verified, on its own.
func (g *Group) ReadBlocks(context.Context, int64, []byte) error {
	return errors.New("fanout: a group cannot be read; verify each card on its own")
}

// Results reports every member, in the order of the targets. Call it after
// Sync (or after the write failed) for final figures.
func (g *Group) Results() []Result {
	out := make([]Result, len(g.members))
	for i, m := range g.members {
		m.mu.Lock()
		out[i] = m.res
		m.mu.Unlock()
	}
	return out
}

// Close stops the workers once their queues are drained and frees the
// members' windows. The devices themselves stay open.
func (g *Group) Close() error {
	for _, m := range g.members {
		if m.jobs != nil {
			close(m.jobs)
		}
	}
	for _, m := range g.members {
		if m.release != nil {
			// The worker may still be sending from the window: wait until
			// every buffer is back before the device memory goes.
			for range len(m.window) {
				<-m.free
			}
			m.release()
		}
	}
	return nil
}
