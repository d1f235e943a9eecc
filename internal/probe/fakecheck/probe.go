// Package fakecheck finds out whether a card holds what it claims: it
// probes any blockdev.Device for the blocks past its real flash that wrap
// around onto earlier ones, drop what is written, or read back garbage,
// also behind a cache that hides them until it is full, and names the
// usable size. It saves every block it overwrites first and puts it back
// (and reads it back) at the end, also after an error or a cancel.
//
// How, in a few hundred commands instead of a write of the whole card:
//
//   - Every block it writes is drawn from the run's random nonce and its
//     own LBA, which its header names: a block read back from elsewhere
//     says where it was written.
//   - A window at the start of the card is written last (from its end
//     down), so whatever wraps around lands on blocks that name
//     themselves. Reading one block every window's length across the
//     card (reads only: nothing to save) then finds a wrap at any
//     boundary, a power of two or not, exactly: the first block past the
//     real size reads back the window block it lands on, and the real
//     size is the difference of the two LBAs.
//   - Dropped and garbled writes need a write and a read of the same
//     block. A grid of single blocks over the card brackets the real
//     size, and rounds of grids inside the bracket (a contiguous run once
//     it is small) name its first bad block.
//   - A cache that keeps the last writes past the real size answers those
//     reads truthfully until it is full. The blocks at the very end of
//     the card (past the real size of any fake) are written first, as
//     witnesses; then the card's own content is read and written back
//     unchanged, block by block, from the top of the card down, which
//     changes nothing on any card but pushes everything older out of a
//     cache (with Destructive it writes zeros instead). A witness read
//     after each doubling of that flush says when the cache gave way, so
//     a fake without a cache costs no flush at all, and a cache of C
//     bytes costs about 2C; only a genuine card pays for the whole bound
//     (Options.MaxCache) to prove no cache hid a lie.
package fakecheck

import (
	"cmp"
	"context"
	"crypto/rand"
	"encoding/binary"
	"errors"
	"fmt"
	"slices"
	"sync"
	"time"

	"github.com/usbflash/usbflash/internal/failure"
	"github.com/usbflash/usbflash/internal/lib/aligned"
	"github.com/usbflash/usbflash/internal/probe/region"
	"github.com/usbflash/usbflash/pipeline/blockdev"
)

// DefaultMaxCache is the largest cache a probe sees through unless told
// otherwise: fake cards' caches found so far hold tens to hundreds of MiB.
const DefaultMaxCache = 1 << 30

// Kind is how a card lies, or that it does not.
type Kind string

// Kinds of card.
const (
	Genuine Kind = "genuine" // holds what it claims
	Wrap    Kind = "wrap"    // writes past the usable size land on earlier blocks
	Drop    Kind = "drop"    // writes past it are lost (reads return zeros or the old data)
	Garbage Kind = "garbage" // writes past it are lost and reads return other data
	// Unreadable: reads past the usable size fail (a MEDIUM ERROR, the
	// kernel's EIO) to the card's end, while the blocks before it read:
	// the fakes of f3's issues 86 and 228, which a probe reading its own
	// writes back calls damaged.
	Unreadable Kind = "unreadable"
)

// Options are a probe's choices.
type Options struct {
	// MaxCache is the largest cache (bytes) the probe sees through: it
	// rewrites up to this much of the card's own content. 0 means
	// DefaultMaxCache; a negative value trusts the first read-back.
	MaxCache int64
	// Destructive skips saving and restoring what the probe overwrites:
	// for a card whose content does not matter.
	Destructive bool
	// Nonce makes the probe's data; 0 draws one at random.
	Nonce uint64
	// Progress, when set, is told each step as it starts and the flush's
	// bytes as they go.
	Progress func(Progress)
	// Abortable, when set, is handed abandon once the first block is
	// saved, and its result is called when every saved block is back (or
	// the probe gave up on them). abandon is for the user's second
	// interrupt: it touches no device, writes the saved blocks to a file
	// and returns the *RestoreError that says where.
	Abortable func(abandon func() error) (done func())
	// Target names the card, as the user named it, in the list of saved
	// blocks a restore that failed leaves (RestoreError).
	Target string
	// SaveDir is where that list and the saved blocks go; "": the
	// system's temporary directory.
	SaveDir string
}

// Progress is how far a probe got.
type Progress struct {
	Step        Step
	Done, Total int64 // bytes of the step, when it counts them (the cache flush)
}

// Step is a probe's step.
type Step string

// The steps, in order.
const (
	StepSave    Step = "save"    // the blocks it will write are saved
	StepProbe   Step = "probe"   // probe blocks written and read back
	StepCache   Step = "cache"   // the card's own content rewritten to push a cache out
	StepRefine  Step = "refine"  // the first bad block narrowed down
	StepRestore Step = "restore" // the saved blocks put back
)

// Result is what a probe found.
type Result struct {
	BlockSize int
	Claimed   int64 // bytes the card claims
	Usable    int64 // bytes from the start that hold what is written
	Kind      Kind
	// WrapsTo is, for Wrap, the LBA the block at Usable lands on.
	WrapsTo int64
	// Alias is, for Wrap, the read that showed it.
	Alias *Alias
	// Cache is, when a cache hid the lie at first, about how many bytes
	// had to be written past it before it gave way (0: none did).
	Cache int64
	// CacheChecked is how much the probe rewrote to see through a cache:
	// with a genuine result, no cache up to this size hides a lie.
	CacheChecked int64
	// What the probe did: bytes and commands, and the blocks it saved and
	// put back.
	Written, Read      int64
	Commands           int
	Saved              int64
	Restored, Verified bool
	// PastRegions are the saved regions that reach past the usable size
	// of a fake card, PastBytes their bytes there: put back, but not read
	// back on their own (region.List.Past); on a card that wraps around
	// they alias blocks below it.
	PastRegions int
	PastBytes   int64
	Elapsed     time.Duration
}

// Alias is a block that read back what the probe wrote to a lower one:
// the two share flash.
type Alias struct {
	LBA   int64 // the block read
	Holds int64 // the block whose probe data it held
	// Confirmed: a second write to the first block past the usable size
	// read back at LBA 0 at once. Not when a cache answers for the card:
	// the alias, seen once, is proof enough.
	Confirmed bool
}

// Fake says whether the card lies about its capacity.
func (r *Result) Fake() bool { return r.Kind != Genuine }

// RestoreError is a restore that failed, or that the user stopped: some
// blocks the probe overwrote may not hold their old content. Kept names
// the files that hold them (region.List.Keep: "" when they could not be
// written either, FileErr), from which region.Load and Restore put them
// back.
type RestoreError struct {
	Err     error
	Kept    region.Kept
	FileErr error
	// Aborted: the user stopped it (a second interrupt); the blocks may
	// hold the check's data. Err is then context.Canceled.
	Aborted bool
	// Target is the card as the user named it, for the command that puts
	// the blocks back.
	Target string
}

func (e *RestoreError) Error() string {
	what := fmt.Sprintf("putting back the blocks the check overwrote: %v", e.Err)
	if e.Aborted {
		what = "putting back the blocks the check overwrote was aborted: they may hold its data"
	}
	if e.Kept.Path == "" {
		return fmt.Sprintf("%s; writing them to a file failed too: %v", what, e.FileErr)
	}
	return fmt.Sprintf("%s; they are saved in %s, their %d regions listed in %s", what, e.Kept.Data, e.Kept.Regions, e.Kept.Path)
}
func (e *RestoreError) Unwrap() error { return e.Err }

// Class: blocks not put back are the device's failure, unless the user
// stopped putting them back.
func (e *RestoreError) Class() failure.Class {
	if e.Aborted {
		return failure.Interrupted
	}
	return failure.Device
}

// Probe finds out whether dev holds what it claims. It writes blocks
// (saving them first unless opts.Destructive) and puts them back at the
// end, also when it fails or ctx is cancelled; a cancelled probe returns
// an error wrapping ctx's.
func Probe(ctx context.Context, dev blockdev.Device, opts Options) (*Result, error) {
	p := newProber(dev, opts)
	start := time.Now()
	defer p.done()
	err := p.run(ctx)
	if errors.Is(err, blockdev.ErrBadBlock) && ctx.Err() == nil {
		// A block the card could not read: a few bad blocks (the
		// error stands), or an end that cannot be read at all.
		if tail, terr := p.unreadableTail(ctx); terr == nil && tail {
			err = nil
		}
	}
	if !opts.Destructive {
		if rerr := p.restore(ctx); rerr != nil {
			err = errors.Join(err, rerr)
		}
	}
	if err == nil {
		// Also a cancel while the blocks were put back: the user asked
		// to stop, and the probe did not finish as asked.
		err = ctx.Err()
	}
	p.res.Elapsed = time.Since(start)
	if err != nil {
		return p.res, err
	}
	return p.res, nil
}

// Window and grid sizes.
const (
	windowMin   = 1 << 20  // bytes
	windowMax   = 64 << 20 // bytes
	readGrid    = 4096     // reads across the card, at most about
	gridProbes  = 256      // written blocks per round
	witnesses   = 16       // blocks at the very end
	contiguous  = 4096     // a bracket this many blocks or less is probed whole
	flushChunk  = 4 << 20  // bytes per command of the flush
	firstNotice = 1 << 20  // the first witness read after this much flush
)

type prober struct {
	dev    blockdev.Device
	opt    Options
	bs, n  int64 // block size, blocks
	nonce  uint64
	res    *Result
	saved  []*region.Saved
	cover  map[int64]bool // single blocks saved
	window int64          // blocks
	buf    []byte         // one block
	chunk  []byte         // a flush or window command
	// freeChunk gives chunk back to the device that allocated it (nil:
	// ordinary memory).
	freeChunk func()
	scr       []byte // scratch for named
	orig      map[int64][]byte

	wrote [][2]int64 // the runs of blocks written, [first, end)

	windowSaved bool
	windowData  []byte

	mu        sync.Mutex // guards saved against abandon
	abortable func()     // Options.Abortable's done, once registered
}

// done ends what Options.Abortable registered and gives the device's
// memory back.
func (p *prober) done() {
	if p.abortable != nil {
		p.abortable()
	}
	if p.freeChunk != nil {
		p.freeChunk()
	}
}

// abandon writes the saved blocks to a file, for a second interrupt.
func (p *prober) abandon() error {
	kept, err := p.keep()
	return &RestoreError{Err: context.Canceled, Kept: kept, FileErr: err, Aborted: true, Target: p.opt.Target}
}

func newProber(dev blockdev.Device, opts Options) *prober {
	bs, n := int64(dev.BlockSize()), dev.BlockCount()
	if opts.MaxCache == 0 {
		opts.MaxCache = DefaultMaxCache
	}
	nonce := opts.Nonce
	for nonce == 0 {
		var b [8]byte
		rand.Read(b[:])
		nonce = binary.LittleEndian.Uint64(b[:])
	}
	chunk := int64(blockdev.FitTransfer(dev, flushChunk).Size)
	w := min(max(n*bs/readGrid, windowMin), windowMax)
	w = (w + windowMin - 1) / windowMin * windowMin / bs
	w = max(min(w, n/4), 1)
	p := &prober{dev: dev, opt: opts, bs: bs, n: n, nonce: nonce,
		res:   &Result{BlockSize: int(bs), Claimed: n * bs, Usable: n * bs, Kind: Genuine},
		cover: map[int64]bool{}, window: w, orig: map[int64][]byte{},
		buf: aligned.Bytes(int(bs)), scr: make([]byte, bs)}
	// The flush moves up to MaxCache twice: from the device's own memory
	// (usbfs), as the engine's transfers do, it costs no copy.
	if a, ok := dev.(blockdev.BufferAllocator); ok {
		if bufs, _, free, err := a.AllocBuffers(1, int(chunk)); err == nil {
			p.chunk, p.freeChunk = bufs[0][:chunk], free
		}
	}
	if p.chunk == nil {
		p.chunk = aligned.Bytes(int(chunk))
	}
	return p
}

func (p *prober) progress(step Step, done, total int64) {
	if p.opt.Progress != nil {
		p.opt.Progress(Progress{Step: step, Done: done, Total: total})
	}
}

// read and write count what the probe does. A cancel stops the probe
// between commands: one cut short in flight costs the reader a reset
// recovery, seconds long, and the card is as well put back either way.
func (p *prober) read(ctx context.Context, lba int64, b []byte) error {
	if err := ctx.Err(); err != nil {
		return err // stop between commands, whatever the device does
	}
	p.res.Read += int64(len(b))
	p.res.Commands++
	if err := p.dev.ReadBlocks(context.WithoutCancel(ctx), lba, b); err != nil {
		return fmt.Errorf("reading LBA %d: %w", lba, err)
	}
	return nil
}

func (p *prober) write(ctx context.Context, lba int64, b []byte) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	p.res.Written += int64(len(b))
	p.res.Commands++
	p.wrote = append(p.wrote, [2]int64{lba, lba + int64(len(b))/p.bs})
	if err := p.dev.WriteBlocks(context.WithoutCancel(ctx), lba, b); err != nil {
		return fmt.Errorf("writing LBA %d: %w", lba, err)
	}
	return nil
}

// save keeps blocks [lba, lba+count) before they are overwritten.
func (p *prober) save(ctx context.Context, lba, count int64) error {
	if p.opt.Destructive {
		return nil
	}
	if (count == 1 && p.cover[lba]) || (p.windowSaved && lba+count <= p.window) {
		return nil // saved already, before anything was written over it
	}
	if err := ctx.Err(); err != nil {
		return err
	}
	s, err := region.Save(context.WithoutCancel(ctx), p.dev, blockdev.Name(p.dev, ""), region.Region{Name: "check", Offset: lba * p.bs, Length: count * p.bs})
	p.res.Commands++
	p.res.Read += count * p.bs
	if err != nil {
		return err
	}
	p.mu.Lock()
	p.saved = append(p.saved, s)
	p.mu.Unlock()
	if p.abortable == nil && p.opt.Abortable != nil {
		p.abortable = p.opt.Abortable(p.abandon)
	}
	p.res.Saved += count * p.bs
	if count == 1 {
		p.cover[lba] = true
		p.orig[lba] = s.Bytes()
	}
	if lba == 0 && count == p.window {
		p.windowSaved, p.windowData = true, s.Bytes()
	}
	return nil
}

// origOf is what block lba held before the probe, nil when unknown.
func (p *prober) origOf(lba int64) []byte {
	if o := p.orig[lba]; o != nil {
		return o
	}
	if p.windowSaved && lba < p.window {
		return p.windowData[lba*p.bs : (lba+1)*p.bs]
	}
	return nil
}

// writeProbe writes lba's probe block.
func (p *prober) writeProbe(ctx context.Context, lba int64) error {
	fill(p.buf, p.nonce, lba)
	return p.write(ctx, lba, p.buf)
}

// check reads lba back and judges it.
func (p *prober) check(ctx context.Context, lba int64) (verdict, int64, error) {
	if err := p.read(ctx, lba, p.buf); err != nil {
		return 0, 0, err
	}
	v, at := judge(p.buf, lba, p.nonce, p.origOf(lba), p.scr)
	return v, at, nil
}

func (p *prober) run(ctx context.Context) error {
	n, w := p.n, p.window
	if n < 8 {
		return nil // nothing to probe on a card of a few blocks
	}
	// Witnesses at the very end, then a grid over the rest, then the
	// window: all saved before anything is written.
	wit := min(int64(witnesses), n-w)
	var grid []int64
	if span := n - wit - w; span > 0 {
		k := min(int64(gridProbes), span)
		for i := range k {
			grid = append(grid, w+i*span/k)
		}
	}
	p.progress(StepSave, 0, 0)
	if err := p.save(ctx, 0, w); err != nil {
		return err
	}
	for i := range wit {
		if err := p.save(ctx, n-1-i, 1); err != nil {
			return err
		}
	}
	for _, g := range grid {
		if err := p.save(ctx, g, 1); err != nil {
			return err
		}
	}
	p.progress(StepProbe, 0, 0)
	for i := range wit {
		if err := p.writeProbe(ctx, n-1-i); err != nil {
			return err
		}
	}
	for _, g := range slices.Backward(grid) {
		if err := p.writeProbe(ctx, g); err != nil {
			return err
		}
	}
	if err := p.writeWindow(ctx); err != nil {
		return err
	}

	// A wrap shows without any flush: the window read back, then one
	// block every window's length.
	if found, err := p.findWrap(ctx); found || err != nil {
		return err
	}

	// Drops and garbage: see through a cache, then judge the grid.
	after := (w + int64(len(grid)) + wit) * p.bs // written after the first witness
	bound, err := p.flushCache(ctx, wit, grid, after)
	if err != nil {
		return err
	}
	// The window first: a card whose usable size lies inside it.
	switch bad, v, at, err := p.checkRun(ctx, 0, w); {
	case err != nil:
		return err
	case v == moved && at < bad:
		return p.confirmWrap(ctx, bad, at)
	case bad >= 0:
		return p.found(ctx, bad-1, bad, v, bound)
	}
	lo := w - 1 // the last block known good
	for _, g := range append(grid, witnessLBAs(n, wit)...) {
		v, at, err := p.check(ctx, g)
		switch {
		case err != nil:
			return err
		case v == kept:
			lo = g
			continue
		case v == moved && at < g:
			return p.confirmWrap(ctx, g, at)
		}
		return p.found(ctx, lo, g, v, bound)
	}
	return nil // genuine
}

// found: block hi did not keep what was written (v says how), block lo
// did; refine names the first bad block between them.
func (p *prober) found(ctx context.Context, lo, hi int64, v verdict, bound int64) error {
	if v == moved {
		v = garbled // another run's block, or one from above: not a wrap onto the start
	}
	return p.refine(ctx, lo, hi, v, bound)
}

// checkRun reads blocks [from, to) back and returns the first that does
// not hold its probe block (-1: all do), what it holds, and for a moved
// block the LBA it names.
func (p *prober) checkRun(ctx context.Context, from, to int64) (int64, verdict, int64, error) {
	per := int64(len(p.chunk)) / p.bs
	for at := from; at < to; at += per {
		k := min(per, to-at)
		b := p.chunk[:k*p.bs]
		if err := p.read(ctx, at, b); err != nil {
			return 0, 0, 0, err
		}
		for i := range k {
			lba := at + i
			if v, to := judge(b[i*p.bs:(i+1)*p.bs], lba, p.nonce, p.origOf(lba), p.scr); v != kept {
				return lba, v, to, nil
			}
		}
	}
	return -1, kept, 0, nil
}

func witnessLBAs(n, wit int64) []int64 {
	var l []int64
	for i := wit - 1; i >= 0; i-- {
		l = append(l, n-1-i)
	}
	return l
}

// writeWindow writes the window's probe blocks, its last command first,
// so a block that wraps onto the window is overwritten by the block that
// names itself there.
func (p *prober) writeWindow(ctx context.Context) error { return p.writeRun(ctx, 0, p.window) }

// findWrap reads the window back, then one block every window's length
// across the card: the first block that holds the probe block of a lower
// LBA is where the card wraps around.
func (p *prober) findWrap(ctx context.Context) (bool, error) {
	x, to, err := p.scanWrap(ctx)
	if err != nil || x < 0 {
		return false, err
	}
	return true, p.confirmWrap(ctx, x, to)
}

// scanWrap is findWrap's reads: the first block x that holds the probe
// block of a lower LBA, to (x -1: none does). It writes nothing.
func (p *prober) scanWrap(ctx context.Context) (x, to int64, err error) {
	per := int64(len(p.chunk)) / p.bs
	for at := int64(0); at < p.window; at += per {
		k := min(per, p.window-at)
		b := p.chunk[:k*p.bs]
		if err := p.read(ctx, at, b); err != nil {
			return -1, 0, err
		}
		for i := range k {
			lba := at + i
			v, to := judge(b[i*p.bs:(i+1)*p.bs], lba, p.nonce, nil, p.scr)
			if v == moved && to < lba {
				return lba, to, nil
			}
		}
	}
	for x := p.window; x < p.n; x += p.window {
		v, to, err := p.check(ctx, x)
		if err != nil {
			return -1, 0, err
		}
		if v == moved && to < x {
			return x, to, nil
		}
	}
	return -1, 0, nil
}

// confirmWrap records that block x, which read back as block to's, is
// where the card wraps around. That read alone proves the card fake: no
// card that keeps what is written reads back at one LBA the block written
// to another. Its distance is a multiple of the real size, the size
// itself when to lies in the window (written last, so x is the first
// block past the real size). A write-back cache that its own timer
// flushes (not SYNCHRONIZE CACHE) can hide the window from the first
// reads, and x is then farther: so the probe lets the timer run (settle)
// and reads the window and the card again, keeping the nearer alias. A
// block of a new run written to the first block past the real size then
// confirms the size when it reads back at block 0 at once; when a cache
// still answers for one of the two, the alias stands unconfirmed.
func (p *prober) confirmWrap(ctx context.Context, x, to int64) error {
	real := x - to
	p.res.Kind, p.res.WrapsTo = Wrap, 0
	p.res.Alias = &Alias{LBA: x, Holds: to}
	if err := p.settle(ctx, min(to+1, p.window)); err != nil {
		return err
	}
	x2, to2, err := p.scanWrap(ctx)
	if err != nil {
		return err
	}
	if x2 >= 0 && x2-to2 < real {
		real = x2 - to2
		p.res.Alias = &Alias{LBA: x2, Holds: to2}
	}
	p.res.Usable = real * p.bs
	if err := p.save(ctx, real, 1); err != nil {
		return err
	}
	nonce := p.nonce + 1
	fill(p.buf, nonce, real)
	if err := p.write(ctx, real, p.buf); err != nil {
		return err
	}
	if err := p.read(ctx, 0, p.buf); err != nil {
		return err
	}
	at, ok := named(p.buf, nonce, p.scr)
	p.res.Alias.Confirmed = ok && at == real
	return nil
}

// flushCache sees through a cache that keeps the latest writes: it
// rewrites the card's own content from the top down (skipping the grid),
// reading a witness after each doubling; once one gives way, after more
// bytes go through (what was written after the first witness) everything
// is pushed out. It returns how much had to be written, the bound a
// later round flushes (-1: no cache to see through).
func (p *prober) flushCache(ctx context.Context, wit int64, grid []int64, after int64) (int64, error) {
	if p.opt.MaxCache < 0 || wit == 0 {
		return -1, nil
	}
	// The flush cannot rewrite more than the card has above the window.
	limit := min(p.opt.MaxCache, (p.n-wit-p.window)*p.bs)
	p.progress(StepCache, 0, limit)
	i := int64(0)
	witness := func() (bool, error) {
		if i >= wit {
			return false, nil
		}
		v, _, err := p.check(ctx, p.n-1-i)
		i++
		return v != kept, err
	}
	gave, err := witness()
	if err != nil {
		return 0, err
	}
	if gave {
		p.res.CacheChecked = 0
		return after, p.flush(ctx, p.n-wit, p.window, after, grid, nil)
	}
	next := int64(firstNotice)
	var done int64
	err = p.flush(ctx, p.n-wit, p.window, p.opt.MaxCache+after, grid, func(total int64) (bool, error) {
		done = total
		p.progress(StepCache, min(total, limit), limit)
		if total < next || total > p.opt.MaxCache+after {
			return false, nil
		}
		next *= 2
		g, err := witness()
		if g {
			p.res.Cache = total
		}
		return g, err
	})
	p.res.CacheChecked = done
	if err != nil || p.res.Cache == 0 {
		return done, err
	}
	// The cache gave way after done bytes: push out what came after the
	// witness too.
	return done + after, p.flush(ctx, p.n-wit-done/p.bs, p.window, after, grid, nil)
}

// flush rewrites up to amount bytes of the card's own content below block
// top and not below block floor, from the top down, skipping the blocks in
// skip; each command's running total goes to step, which may stop it.
func (p *prober) flush(ctx context.Context, top, floor, amount int64, skip []int64, step func(int64) (bool, error)) error {
	per := int64(len(p.chunk)) / p.bs
	var total int64
	for end := top; end > floor && total < amount; {
		start := max(end-per, floor)
		// Leave out the blocks to skip: write the part above the highest
		// one inside, and continue below it.
		if j, _ := slices.BinarySearch(skip, end); j > 0 && skip[j-1] >= start {
			start = skip[j-1] + 1 // and the block below it is skipped
		}
		if start < end {
			if err := p.rewrite(ctx, start, end); err != nil {
				return err
			}
			total += (end - start) * p.bs
		}
		end = start
		if j, found := slices.BinarySearch(skip, end-1); found && j >= 0 {
			end-- // a block to skip
		}
		if step != nil {
			stop, err := step(total)
			if err != nil || stop {
				return err
			}
		}
	}
	return nil
}

// rewrite reads blocks [from, to) and writes them back unchanged; with
// Destructive it only writes (whatever the buffer holds).
func (p *prober) rewrite(ctx context.Context, from, to int64) error {
	b := p.chunk[:(to-from)*p.bs]
	if p.opt.Destructive {
		clear(b) // zeros: no probe block of this run lands anywhere
	} else if err := p.read(ctx, from, b); err != nil {
		return err
	}
	return p.write(ctx, from, b)
}

// refine narrows the first bad block down between lo (good, -1 for none)
// and hi (bad) with rounds of probes, each flushed through the cache when
// there is one (bound >= 0), and records what it found. A round reads its
// blocks back soon after writing them: a write-back cache that its own
// timer flushes, not the amount written after it, still answers for them
// then. So once the rounds end, the probe lets time and commands pass
// (settle) and reads every block the rounds found kept again; one that
// no longer holds its probe block is where the rounds start again.
func (p *prober) refine(ctx context.Context, lo, hi int64, kind verdict, bound int64) error {
	p.progress(StepRefine, 0, 0)
	for {
		base := lo // known good before the rounds
		held, wrapped, err := p.narrow(ctx, &lo, &hi, &kind, bound)
		if err != nil || wrapped {
			return err
		}
		if len(held) == 0 {
			break
		}
		if err := p.settle(ctx, lo); err != nil {
			return err
		}
		bad, v, at, err := p.recheck(ctx, held, base, &lo)
		if err != nil {
			return err
		}
		if bad < 0 {
			break
		}
		if v == moved && at < bad {
			return p.confirmWrap(ctx, bad, at)
		}
		hi, kind = bad, v
	}
	p.res.Usable = hi * p.bs
	p.res.Kind = Drop
	if kind == garbled || kind == moved {
		p.res.Kind = Garbage
	}
	return nil
}

// narrow is refine's rounds: it moves *lo up and *hi down until hi is the
// first bad block as read back at once, and returns the runs of blocks
// [from, to) it found kept; wrapped: a block read back another's, and
// confirmWrap recorded the verdict.
func (p *prober) narrow(ctx context.Context, lo, hi *int64, kind *verdict, bound int64) (held [][2]int64, wrapped bool, err error) {
	for *hi-*lo > 1 {
		var (
			bad   = int64(-1)
			v     verdict
			newLo = *lo
		)
		if span := *hi - *lo - 1; span <= p.wholeRun(bound) {
			// Small enough to write whole.
			if err := p.save(ctx, *lo+1, span); err != nil {
				return nil, false, err
			}
			if err := p.writeRun(ctx, *lo+1, *hi); err != nil {
				return nil, false, err
			}
			if err := p.flushAbove(ctx, *hi, bound, span*p.bs); err != nil {
				return nil, false, err
			}
			var at int64
			if bad, v, at, err = p.checkRun(ctx, *lo+1, *hi); err != nil {
				return nil, false, err
			}
			if v == moved && at < bad {
				return nil, true, p.confirmWrap(ctx, bad, at)
			}
			if bad < 0 {
				held = append(held, [2]int64{*lo + 1, *hi})
				break // hi is the first bad block
			}
			if bad > *lo+1 {
				held = append(held, [2]int64{*lo + 1, bad})
			}
			newLo = bad - 1
		} else {
			var lbas []int64
			for i := int64(1); i <= gridProbes; i++ {
				lbas = append(lbas, *lo+i*(*hi-*lo)/(gridProbes+1))
			}
			lbas = slices.Compact(lbas)
			for _, x := range lbas {
				if err := p.save(ctx, x, 1); err != nil {
					return nil, false, err
				}
			}
			for _, x := range slices.Backward(lbas) {
				if err := p.writeProbe(ctx, x); err != nil {
					return nil, false, err
				}
			}
			if err := p.flushAbove(ctx, *hi, bound, int64(len(lbas))*p.bs); err != nil {
				return nil, false, err
			}
			for _, x := range lbas {
				var at int64
				if v, at, err = p.check(ctx, x); err != nil {
					return nil, false, err
				}
				if v == kept {
					newLo = x
					held = append(held, [2]int64{x, x + 1})
					continue
				}
				if v == moved && at < x {
					return nil, true, p.confirmWrap(ctx, x, at)
				}
				bad = x
				break
			}
		}
		if bad >= 0 {
			*hi, *kind = bad, v
		}
		if newLo == *lo && bad < 0 {
			break
		}
		*lo = newLo
	}
	return held, false, nil
}

// settleReads is how many single-block reads settle makes: commands, and
// on a real card the better part of a second, for a write-back cache's
// timer to send what it holds to the flash.
const settleReads = 1024

// settle lets a write-back cache's timer run: it reads single blocks
// spread over the first good blocks of the card (reads only: nothing is
// written, nothing to save).
func (p *prober) settle(ctx context.Context, good int64) error {
	span := max(good, 1)
	for i := range int64(settleReads) {
		if err := p.read(ctx, i*span/settleReads, p.buf); err != nil {
			return err
		}
	}
	return nil
}

// recheck reads the runs the rounds found kept again, in LBA order, and
// returns the first block that no longer holds its probe block (-1: none
// does), what it holds and, for a moved one, the LBA it names; *lo
// becomes the last block below it that still does (base, known good
// before the runs, when none).
func (p *prober) recheck(ctx context.Context, runs [][2]int64, base int64, lo *int64) (int64, verdict, int64, error) {
	*lo = base
	slices.SortFunc(runs, func(a, b [2]int64) int { return cmp.Compare(a[0], b[0]) })
	for _, r := range runs {
		bad, v, at, err := p.checkRun(ctx, r[0], r[1])
		if err != nil || bad >= 0 {
			if bad > r[0] {
				*lo = bad - 1
			}
			return bad, v, at, err
		}
		*lo = max(*lo, r[1]-1)
	}
	return -1, kept, 0, nil
}

// wholeRun is the most blocks a refine round writes whole, when the
// first bad block is known to lie among them. A round behind a cache
// flushes bound bytes whatever it writes (twice that moved: each block is
// read and written back), so a run of up to bound bytes is cheaper than a
// grid round and the run after it: on a 4 GiB card with a 256 MiB cache
// the 16 MiB the first grid leaves is one round, not two (issue 31 item
// 13c). It holds the run's saved content in memory: at most maxWholeRun.
func (p *prober) wholeRun(bound int64) int64 {
	return max(contiguous, min(bound, maxWholeRun)/p.bs)
}

// maxWholeRun bounds a run written whole, in bytes: its saved content is
// kept in memory.
const maxWholeRun = 64 << 20

// writeRun writes the probe blocks of [from, to), its last command first.
func (p *prober) writeRun(ctx context.Context, from, to int64) error {
	per := int64(len(p.chunk)) / p.bs
	for at := from + (to-from-1)/per*per; at >= from; at -= per {
		k := min(per, to-at)
		b := p.chunk[:k*p.bs]
		for i := range k {
			fill(b[i*p.bs:(i+1)*p.bs], p.nonce, at+i)
		}
		if err := p.write(ctx, at, b); err != nil {
			return err
		}
	}
	return nil
}

// flushAbove pushes bound and then extra bytes through a cache,
// rewriting the card's content above block hi (past the usable size); a
// negative bound: no cache to see through.
func (p *prober) flushAbove(ctx context.Context, hi, bound, extra int64) error {
	if bound < 0 || p.opt.MaxCache < 0 {
		return nil
	}
	return p.flush(ctx, p.n, max(hi, p.window), bound+extra, nil, nil)
}

// restoreTimeout bounds putting blocks back after a cancel.
const restoreTimeout = 10 * time.Minute

// restore puts every saved block back (the latest saved first, so a block
// saved twice through two LBAs that share flash ends with its first,
// original content), syncs once, and reads back what the card can hold:
// region.List.Restore, as `usbflash restore` does from the file keep
// leaves.
func (p *prober) restore(ctx context.Context) error {
	if len(p.saved) == 0 {
		return nil
	}
	rctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), restoreTimeout)
	defer cancel()
	p.progress(StepRestore, 0, 0)
	l := p.list()
	err := l.Restore(rctx, p.dev, blockdev.Name(p.dev, p.opt.Target))
	p.res.Restored = err == nil || failure.Of(err) == failure.Verify
	p.res.Verified = err == nil
	p.res.PastRegions, p.res.PastBytes = l.Past()
	if err == nil {
		return nil
	}
	kept, kerr := l.Keep(p.opt.SaveDir, "usbflash-check-saved-*")
	return &RestoreError{Err: err, Kept: kept, FileErr: kerr, Target: p.opt.Target}
}

// keep writes the saved blocks, in the order they go back, to a data file
// and a list of regions beside it (region.List.Keep) in Options.SaveDir.
func (p *prober) keep() (region.Kept, error) {
	return p.list().Keep(p.opt.SaveDir, "usbflash-check-saved-*")
}

// list is the saved blocks as a list of regions of this card, in the
// order they go back, and what the card holds (Card.Holds: its usable
// size, past which nothing is read back).
func (p *prober) list() *region.List {
	p.mu.Lock()
	l := &region.List{Card: region.Card{Target: p.opt.Target, Capacity: p.n * p.bs, BlockSize: int(p.bs), Holds: p.res.Usable},
		Saved: slices.Clone(p.saved)}
	p.mu.Unlock()
	slices.Reverse(l.Saved)
	return l
}

// tailSamples is how many blocks past the first unreadable one must fail
// too for the card's end to count as unreadable.
const tailSamples = 64

// unreadableTail is what run does when a read fails on a bad block: it
// finds, by reads alone, the first block from which the card reads
// nothing, and says whether the whole end fails from there (Kind
// Unreadable, Usable set) or only some blocks do (false: a failing card,
// whose error stands). Blocks the probe wrote are left out of every
// judgement: a cache may answer for them.
func (p *prober) unreadableTail(ctx context.Context) (bool, error) {
	reads := func(lba int64) (bool, error) {
		err := p.read(ctx, lba, p.buf)
		if errors.Is(err, blockdev.ErrBadBlock) {
			return false, nil
		}
		return err == nil, err
	}
	// The last block the probe did not write must fail.
	hi := p.unwritten(p.n-1, -1, -1)
	if hi < 0 {
		return false, nil
	}
	if ok, err := reads(hi); ok || err != nil {
		return false, err
	}
	// Bisect: lo reads (or is -1), hi does not.
	lo := int64(-1)
	for hi-lo > 1 {
		mid := p.unwritten(lo+(hi-lo)/2, lo, hi)
		if mid < 0 {
			break // only written blocks between: the boundary is as fine as it gets
		}
		ok, err := reads(mid)
		if err != nil {
			return false, err
		}
		if ok {
			lo = mid
		} else {
			hi = mid
		}
	}
	if lo < 0 {
		return false, nil // nothing reads: a dead card, not a short one
	}
	// Every sample past hi fails too, or some bad blocks fooled the
	// bisection.
	for i := int64(1); i <= tailSamples; i++ {
		x := p.unwritten(hi+i*(p.n-1-hi)/tailSamples, hi, p.n)
		if x < 0 {
			continue
		}
		if ok, err := reads(x); ok || err != nil {
			return false, err
		}
	}
	// And the card still answers at its start.
	if ok, err := reads(lo); !ok || err != nil {
		return false, err
	}
	p.res.Kind, p.res.Usable = Unreadable, hi*p.bs
	return true, nil
}

// unwritten is the block nearest x, strictly between lo and hi, that the
// probe never wrote (-1: none).
func (p *prober) unwritten(x, lo, hi int64) int64 {
	down, up := x, x
	for down > lo {
		r, ok := p.writtenRun(down)
		if !ok {
			break
		}
		down = r[0] - 1
	}
	for up < hi {
		r, ok := p.writtenRun(up)
		if !ok {
			break
		}
		up = r[1]
	}
	switch {
	case down > lo && (up >= hi || x-down <= up-x):
		return down
	case up < hi:
		return up
	}
	return -1
}

// writtenRun is a run of blocks the probe wrote that holds lba.
func (p *prober) writtenRun(lba int64) ([2]int64, bool) {
	for _, r := range p.wrote {
		if lba >= r[0] && lba < r[1] {
			return r, true
		}
	}
	return [2]int64{}, false
}
