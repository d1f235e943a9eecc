package sim

import (
	"fmt"
	"io"
	"strings"
	"sync"

	"github.com/usbflash/usbflash/internal/lib/splitmix"
	"github.com/usbflash/usbflash/internal/lib/units"
	"github.com/usbflash/usbflash/pipeline/blockdev"
)

// FakeKind is how a fake card lies about the blocks past its real flash.
type FakeKind int

// Fake kinds, as the fake= option names them.
const (
	// FakeNone: a genuine card.
	FakeNone FakeKind = iota
	// FakeWrap: block x at or past the real size is block x mod real: a
	// write there overwrites an earlier block, and a read returns it.
	FakeWrap
	// FakeDrop: writes past the real size are lost; reads there return
	// zeros.
	FakeDrop
	// FakeGarbage: writes past the real size are lost; reads there return
	// bytes that change with every read.
	FakeGarbage
	// FakeUnreadable: writes past the real size are lost; reads there fail
	// with an unrecovered read error, as the cards of f3's issues 86 and
	// 228 (a probe that reads what it wrote sees a damaged card, not a
	// fake one).
	FakeUnreadable
)

func (k FakeKind) String() string {
	switch k {
	case FakeWrap:
		return "wrap"
	case FakeDrop:
		return "drop"
	case FakeGarbage:
		return "garbage"
	case FakeUnreadable:
		return "unreadable"
	}
	return "none"
}

// Fake describes a card whose claimed capacity is larger than its flash.
type Fake struct {
	Kind FakeKind
	// Real is the flash behind the claimed capacity, in bytes (a whole
	// number of blocks, not necessarily a power of two).
	Real int64
	// Cache, in bytes, keeps the last blocks written at or past Real, by
	// block number: reading one of them returns what was written, until
	// later writes past Real push it out (oldest first). It is lost when
	// the device closes, as a controller's RAM at power-off.
	Cache int64
}

// NewFakeMedium returns inner seen through f: the first f.Real bytes are
// inner's, the rest behave as f.Kind says.
func NewFakeMedium(inner Medium, blockSize int64, f Fake) Medium {
	return &fakeMedium{inner: inner, bs: blockSize, f: f, cached: map[int64]*cacheEntry{}}
}

type fakeMedium struct {
	mu     sync.Mutex
	inner  Medium
	bs     int64
	f      Fake
	cached map[int64]*cacheEntry // block past Real -> its content
	queue  []queued              // writes into the cache, oldest first
	free   [][]byte              // the memory of blocks pushed out
	stamp  uint64                // counts writes into the cache
	reads  uint64                // garbage changes with every read
}

type cacheEntry struct {
	data  []byte
	stamp uint64 // of the block's latest write
}

type queued struct {
	blk   int64
	stamp uint64
}

// Sync flushes inner when it can be flushed.
func (m *fakeMedium) Sync() error {
	if s, ok := m.inner.(interface{ Sync() error }); ok {
		return s.Sync()
	}
	return nil
}

func (m *fakeMedium) ReadAt(p []byte, off int64) (int, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.reads++
	return m.each(p, off, func(blk, in int64, part []byte) error {
		if c, ok := m.cached[blk]; ok {
			copy(part, c.data[in:])
			return nil
		}
		if m.f.Kind == FakeUnreadable && blk*m.bs >= m.f.Real {
			// What the device reports as a MEDIUM ERROR (readWrite plans
			// it before the data phase); a caller of the medium itself
			// gets the same fact.
			return fmt.Errorf("sim: unrecovered read error at block %d: %w", blk, blockdev.ErrBadBlock)
		}
		return m.readBack(blk, in, part)
	})
}

func (m *fakeMedium) WriteAt(p []byte, off int64) (int, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.each(p, off, func(blk, in int64, part []byte) error {
		pos := blk*m.bs + in
		if pos < m.f.Real {
			_, err := m.inner.WriteAt(part, pos)
			return err
		}
		if m.f.Kind == FakeWrap {
			if _, err := m.inner.WriteAt(part, pos%m.f.Real); err != nil {
				return err
			}
		}
		if m.f.Cache >= m.bs {
			return m.cache(blk, in, part)
		}
		return nil
	})
}

// firstUnreadable is the first of count blocks from lba that a read
// fails on (-1: none): with FakeUnreadable, a block past Real that the cache
// does not hold.
func (m *fakeMedium) firstUnreadable(lba, count int64) int64 {
	if m.f.Kind != FakeUnreadable {
		return -1
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	for b := max(lba, m.f.Real/m.bs); b < lba+count; b++ {
		if _, ok := m.cached[b]; !ok {
			return b
		}
	}
	return -1
}

// readBack is what the flash (not the cache) answers for part of block
// blk.
func (m *fakeMedium) readBack(blk, in int64, part []byte) error {
	pos := blk*m.bs + in
	switch {
	case pos < m.f.Real:
		return readFull(m.inner, part, pos)
	case m.f.Kind == FakeWrap:
		return readFull(m.inner, part, pos%m.f.Real)
	case m.f.Kind == FakeGarbage:
		splitmix.Fill(part, uint64(pos)^m.reads*0x9E3779B97F4A7C15)
		return nil
	}
	clear(part)
	return nil
}

// cache keeps a write past Real as the newest entry, pushing the oldest
// out when the cache is full.
func (m *fakeMedium) cache(blk, in int64, part []byte) error {
	c, ok := m.cached[blk]
	if !ok {
		// A block pushed out gives its memory to the next: a flush
		// through a cache of hundreds of MiB allocates nothing.
		c = &cacheEntry{}
		if n := len(m.free); n > 0 {
			c.data, m.free = m.free[n-1], m.free[:n-1]
		} else {
			c.data = make([]byte, m.bs)
		}
		if err := m.readBack(blk, 0, c.data); err != nil {
			return err
		}
		m.cached[blk] = c
	}
	copy(c.data[in:], part)
	m.stamp++
	c.stamp = m.stamp
	m.queue = append(m.queue, queued{blk, m.stamp})
	for int64(len(m.cached))*m.bs > m.f.Cache {
		old := m.queue[0]
		m.queue = m.queue[1:]
		if e := m.cached[old.blk]; e != nil && e.stamp == old.stamp {
			delete(m.cached, old.blk)
			m.free = append(m.free, e.data)
		}
	}
	if len(m.queue) > 2*len(m.cached)+1024 {
		// Drop the entries of blocks written again since.
		live := make([]queued, 0, len(m.cached))
		for _, q := range m.queue {
			if e := m.cached[q.blk]; e != nil && e.stamp == q.stamp {
				live = append(live, q)
			}
		}
		m.queue = live
	}
	return nil
}

// each splits p at off into block pieces and calls fn for each.
func (m *fakeMedium) each(p []byte, off int64, fn func(blk, in int64, part []byte) error) (int, error) {
	n := 0
	for n < len(p) {
		pos := off + int64(n)
		blk, in := pos/m.bs, pos%m.bs
		k := int(min(int64(len(p)-n), m.bs-in))
		if err := fn(blk, in, p[n:n+k]); err != nil {
			return n, err
		}
		n += k
	}
	return n, nil
}

// readFull reads len(p) bytes at off; past the end of a short file it
// reads zeros.
func readFull(r io.ReaderAt, p []byte, off int64) error {
	n, err := r.ReadAt(p, off)
	if err == io.EOF {
		clear(p[n:])
		return nil
	}
	return err
}

// fakeOptions are the fake=, real= and fake-cache= options of a sim:
// target.
type fakeOptions struct {
	kind         FakeKind
	real, cache  int64
	haveReal     bool
	haveCacheOpt bool
}

// isFakeOption says whether key is one of the options fakeOptions reads.
func isFakeOption(key string) bool {
	return key == "fake" || key == "real" || key == "fake-cache"
}

// set applies one fake option.
func (o *fakeOptions) set(key, val string) error {
	var err error
	switch key {
	case "fake":
		switch val {
		case "wrap":
			o.kind = FakeWrap
		case "drop":
			o.kind = FakeDrop
		case "garbage":
			o.kind = FakeGarbage
		case "unreadable":
			o.kind = FakeUnreadable
		default:
			err = fmt.Errorf("want wrap, drop, garbage or unreadable")
		}
	case "real":
		o.real, err = units.ParseSize(val)
		if err == nil && o.real <= 0 {
			err = fmt.Errorf("want a positive size")
		}
		o.haveReal = true
	case "fake-cache":
		o.cache, err = units.ParseSize(val)
		if err == nil && o.cache < 0 {
			err = fmt.Errorf("want a size of 0 or more")
		}
		o.haveCacheOpt = true
	}
	return err
}

// check finds the fake options' contradictions that need no card: an
// option without the others it needs, a real size that is no whole number
// of blocks or passes size= (0: the card file's size, known later).
func (o *fakeOptions) check(size, block int64) error {
	switch {
	case o.kind == FakeNone && (o.haveReal || o.haveCacheOpt):
		return fmt.Errorf("option real= or fake-cache= needs fake=wrap, drop, garbage or unreadable")
	case o.kind == FakeNone:
		return nil
	case !o.haveReal:
		return fmt.Errorf("option fake=%s needs real=SIZE, the flash behind the claimed capacity", o.kind)
	case o.real%block != 0:
		return fmt.Errorf("option real=%d: want a whole number of %d-byte blocks", o.real, block)
	case size > 0 && o.real > size:
		return fmt.Errorf("option real=%d: larger than the card's %d bytes", o.real, size)
	}
	return nil
}

// fake checks the fake options against the card's capacity and block
// size and says what they make of it (ok false: a genuine card).
func (o *fakeOptions) fake(capacity, block int64) (Fake, bool, error) {
	if err := o.check(capacity, block); err != nil || o.kind == FakeNone {
		return Fake{}, false, err
	}
	return Fake{Kind: o.kind, Real: o.real, Cache: o.cache}, true, nil
}

// fakeOptionNames lists the fake options for the unknown-option message.
func fakeOptionNames() string { return strings.Join([]string{"fake", "real", "fake-cache"}, ", ") }

// fakeLUN is l's medium (memory when it has none) seen through f; a LUN
// smaller than f.Real is genuine.
func fakeLUN(l LUN, f Fake) Medium {
	m := l.Medium
	if m == nil {
		m = NewMemory(l.Blocks * int64(l.BlockSize))
	}
	if f.Real >= l.Blocks*int64(l.BlockSize) && f.Cache == 0 {
		return m
	}
	return NewFakeMedium(m, int64(l.BlockSize), f)
}
