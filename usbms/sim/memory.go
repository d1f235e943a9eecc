package sim

import (
	"fmt"
	"io"
	"sync"
)

// chunkSize is the allocation unit of Memory: big enough that a 32 MiB
// WRITE touches few map entries, small enough that scattered writes to a
// huge LUN stay cheap.
const chunkSize = 64 << 10

// Memory is a sparse, zero-filled in-memory Medium of fixed size. Chunks are
// allocated on first write, so a LUN of more than 2^32 blocks costs nothing
// until it is written. It is safe for concurrent use, so tests can inspect
// it while a device uses it.
type Memory struct {
	mu     sync.Mutex
	size   int64
	chunks map[int64][]byte
}

// NewMemory returns a zero-filled Memory of size bytes.
func NewMemory(size int64) *Memory {
	return &Memory{size: size, chunks: make(map[int64][]byte)}
}

// Size is the capacity in bytes.
func (m *Memory) Size() int64 { return m.size }

// ReadAt reads zeros where nothing was written.
func (m *Memory) ReadAt(p []byte, off int64) (int, error) {
	if off < 0 {
		return 0, fmt.Errorf("sim memory: read at negative offset %d", off)
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	n := m.walk(p, off, func(idx int64, in int, part []byte) {
		if c, ok := m.chunks[idx]; ok {
			copy(part, c[in:])
		} else {
			clear(part)
		}
	})
	if n < len(p) {
		return n, io.EOF
	}
	return n, nil
}

// WriteAt allocates the chunks it touches, but for zeros written where
// nothing was: they are what is there.
func (m *Memory) WriteAt(p []byte, off int64) (int, error) {
	if off < 0 {
		return 0, fmt.Errorf("sim memory: write at negative offset %d", off)
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	n := m.walk(p, off, func(idx int64, in int, part []byte) {
		c, ok := m.chunks[idx]
		if !ok && allZero(part) {
			return
		}
		if !ok {
			c = make([]byte, chunkSize)
			m.chunks[idx] = c
		}
		copy(c[in:], part)
	})
	if n < len(p) {
		return n, fmt.Errorf("sim memory: write of %d bytes at %d runs past the end (%d bytes)", len(p), off, m.size)
	}
	return n, nil
}

// walk splits p, placed at off and clipped to the size, into the pieces
// that fall in each chunk, and returns how many bytes of p it covered.
func (m *Memory) walk(p []byte, off int64, fn func(idx int64, in int, part []byte)) int {
	n := 0
	for n < len(p) && off+int64(n) < m.size {
		pos := off + int64(n)
		idx, in := pos/chunkSize, int(pos%chunkSize)
		k := min(len(p)-n, chunkSize-in)
		k = int(min(int64(k), m.size-pos))
		fn(idx, in, p[n:n+k])
		n += k
	}
	return n
}

// discard makes n bytes from off read as zeros, dropping the chunks they
// cover whole: what an unmap does to a card's blocks.
func (m *Memory) discard(off, n int64) {
	m.mu.Lock()
	defer m.mu.Unlock()
	for pos, end := off, min(off+n, m.size); pos < end; {
		idx, in := pos/chunkSize, pos%chunkSize
		k := min(chunkSize-in, end-pos)
		if c, ok := m.chunks[idx]; ok {
			if k == chunkSize {
				delete(m.chunks, idx)
			} else {
				clear(c[in : in+k])
			}
		}
		pos += k
	}
}
