package sim

import (
	"cmp"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"sync"

	"github.com/usbflash/usbflash/internal/lib/units"
)

// WriteBack is a card controller's write-back cache: writes land in its
// RAM by the LBA they name and go to the flash later, on the controller's
// own timer. A READ of a block it holds is answered from it, so until the
// timer fires a read sees what was written there whatever the flash would
// answer; a fake card's flash (Fake) then aliases or loses it. SYNCHRONIZE
// CACHE does not flush it, as on the controllers that ignore the command.
type WriteBack struct {
	// Size is how many bytes of blocks it holds; a write that would take
	// it past Size flushes it first.
	Size int64
	// Every is the timer, counted in READ and WRITE commands so that a
	// run is the same every time: the cache is flushed before the data
	// of the Every-th command after the one whose write it took first.
	Every int
}

// DefaultWriteBackEvery is the write-back timer when write-back-every= is
// not given, in commands: a few tens of commands is tens of milliseconds
// on a card, the order of a controller's flush timer.
const DefaultWriteBackEvery = 32

// CommandClock is a medium that keeps time in commands: the device calls
// Command once for every READ and WRITE, before its data moves.
type CommandClock interface{ Command() }

// WriteBackMedium is a medium behind a WriteBack cache.
type WriteBackMedium struct {
	mu    sync.Mutex
	inner Medium
	bs    int64
	w     WriteBack
	dirty map[int64]*dirtyBlock // by LBA, until flushed
	stamp uint64                // counts writes
	ticks int                   // commands since the first write the cache holds
	// err is a flush the timer ran that failed: the next read or write
	// reports it.
	err error
	// Flushes counts the times the cache was written to the flash.
	flushes int
}

type dirtyBlock struct {
	data  []byte
	stamp uint64 // of its latest write: the flash gets them in this order
}

// NewWriteBackMedium returns inner behind w's cache of whole blocks of
// blockSize bytes.
func NewWriteBackMedium(inner Medium, blockSize int64, w WriteBack) *WriteBackMedium {
	if w.Every <= 0 {
		w.Every = DefaultWriteBackEvery
	}
	return &WriteBackMedium{inner: inner, bs: blockSize, w: w, dirty: map[int64]*dirtyBlock{}}
}

// Command is the controller's timer: a command passed.
func (m *WriteBackMedium) Command() {
	m.mu.Lock()
	defer m.mu.Unlock()
	if len(m.dirty) == 0 {
		return
	}
	if m.ticks++; m.ticks >= m.w.Every {
		if err := m.flush(); err != nil && m.err == nil {
			m.err = err
		}
	}
}

// Flush writes every block the cache holds to the flash, oldest write
// first: what the timer does, and what a device's Close does (the timer
// fires before a reader is unplugged).
func (m *WriteBackMedium) Flush() error {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.flush()
}

// Flushes is how many times the cache was written to the flash.
func (m *WriteBackMedium) Flushes() int {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.flushes
}

func (m *WriteBackMedium) flush() error {
	if len(m.dirty) == 0 {
		return nil
	}
	lbas := make([]int64, 0, len(m.dirty))
	for lba := range m.dirty {
		lbas = append(lbas, lba)
	}
	slices.SortFunc(lbas, func(a, b int64) int { return cmp.Compare(m.dirty[a].stamp, m.dirty[b].stamp) })
	var err error
	for _, lba := range lbas {
		if _, werr := m.inner.WriteAt(m.dirty[lba].data, lba*m.bs); werr != nil && err == nil {
			err = fmt.Errorf("sim: write-back of block %d: %w", lba, werr)
		}
	}
	clear(m.dirty)
	m.ticks = 0
	m.flushes++
	return err
}

// locked runs a read or a write with the cache locked, once a flush the
// timer ran and that failed has been reported.
func (m *WriteBackMedium) locked(op func() (int, error)) (int, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if err := m.err; err != nil {
		m.err = nil
		return 0, err
	}
	return op()
}

// ReadAt answers the blocks the cache holds from it and the rest from the
// flash.
func (m *WriteBackMedium) ReadAt(p []byte, off int64) (int, error) {
	return m.locked(func() (int, error) { return m.read(p, off) })
}

func (m *WriteBackMedium) read(p []byte, off int64) (int, error) {
	n := 0
	for n < len(p) {
		pos := off + int64(n)
		blk, in := pos/m.bs, pos%m.bs
		if d, ok := m.dirty[blk]; ok {
			n += copy(p[n:], d.data[in:])
			continue
		}
		// A run of blocks the cache does not hold goes to the flash in
		// one read.
		end := n + int(min(int64(len(p)-n), m.bs-in))
		for end < len(p) {
			if _, ok := m.dirty[(off+int64(end))/m.bs]; ok {
				break
			}
			end += int(min(int64(len(p)-end), m.bs))
		}
		k, err := m.inner.ReadAt(p[n:end], pos)
		n += k
		if err != nil {
			return n, err
		}
	}
	return n, nil
}

// WriteAt puts the blocks into the cache, flushing it first when they
// would not fit.
func (m *WriteBackMedium) WriteAt(p []byte, off int64) (int, error) {
	return m.locked(func() (int, error) { return m.write(p, off) })
}

func (m *WriteBackMedium) write(p []byte, off int64) (int, error) {
	n := 0
	for n < len(p) {
		pos := off + int64(n)
		blk, in := pos/m.bs, pos%m.bs
		k := int(min(int64(len(p)-n), m.bs-in))
		d, ok := m.dirty[blk]
		if !ok {
			if int64(len(m.dirty)+1)*m.bs > m.w.Size {
				if err := m.flush(); err != nil {
					return n, err
				}
			}
			d = &dirtyBlock{data: make([]byte, m.bs)}
			if k < int(m.bs) {
				// Part of a block: the rest is what the flash holds (or
				// zeros where it cannot be read).
				if err := readFull(m.inner, d.data, blk*m.bs); err != nil {
					clear(d.data)
				}
			}
			if len(m.dirty) == 0 {
				m.ticks = 0
			}
			m.dirty[blk] = d
		}
		copy(d.data[in:], p[n:n+k])
		m.stamp++
		d.stamp = m.stamp
		n += k
	}
	return n, nil
}

// Sync is SYNCHRONIZE CACHE: the flash behind is synced, the cache is
// not flushed.
func (m *WriteBackMedium) Sync() error {
	if s, ok := m.inner.(interface{ Sync() error }); ok {
		return s.Sync()
	}
	return nil
}

// firstUnreadable passes the flash's unreadable blocks on, but for those
// the cache answers.
func (m *WriteBackMedium) firstUnreadable(lba, count int64) int64 {
	u, ok := m.inner.(interface{ firstUnreadable(lba, count int64) int64 })
	if !ok {
		return -1
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	for end := lba + count; lba < end; {
		bad := u.firstUnreadable(lba, end-lba)
		if bad < 0 {
			return -1
		}
		if _, cached := m.dirty[bad]; !cached {
			return bad
		}
		lba = bad + 1
	}
	return -1
}

// writeBackOptions are the write-back= and write-back-every= options of
// a sim: target.
type writeBackOptions struct {
	size      int64
	every     int
	haveEvery bool
}

// isWriteBackOption says whether key is one of the options
// writeBackOptions reads.
func isWriteBackOption(key string) bool { return key == "write-back" || key == "write-back-every" }

// writeBackOptionNames lists them for the unknown-option message.
const writeBackOptionNames = "write-back, write-back-every"

func (o *writeBackOptions) set(key, val string) error {
	var err error
	switch key {
	case "write-back":
		o.size, err = units.ParseSize(val)
		if err == nil && o.size < 0 {
			err = errors.New("want a size of 0 or more")
		}
	case "write-back-every":
		o.every, err = strconv.Atoi(val)
		if err == nil && o.every < 1 {
			err = errors.New("want 1 or more commands")
		}
		o.haveEvery = true
	}
	return err
}

// check finds what needs no card: a timer without a cache, a cache
// smaller than a block.
func (o *writeBackOptions) check(block int64) error {
	switch {
	case o.haveEvery && o.size == 0:
		return errors.New("option write-back-every= needs write-back=SIZE, the cache it flushes")
	case o.size > 0 && o.size < block:
		return fmt.Errorf("option write-back=%d: want at least one %d-byte block", o.size, block)
	}
	return nil
}

// wrap puts m behind the cache the options ask for (m itself when none).
func (o *writeBackOptions) wrap(m Medium, block int64) Medium {
	if o.size == 0 {
		return m
	}
	return NewWriteBackMedium(m, block, WriteBack{Size: o.size, Every: o.every})
}
