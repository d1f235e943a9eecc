// Forked from github.com/zeebo/xxh3 v1.1.0 (BSD 2-Clause, LICENSE beside
// this file): the 128-bit hash without a seed, with the implementation of
// the long-input accumulation chosen by the caller. See doc.go.

package xxh3

// Hasher128 hashes an input given in pieces: the same 128-bit hash as
// Hash128 of the pieces together. Its zero value is not ready: New128
// makes one.
type Hasher128 struct {
	a   Accum
	acc [8]u64
	blk u64
	len u64
	buf [_block + _stripe]byte
}

// New128 is a Hasher128 that accumulates with a.
func (a Accum) New128() *Hasher128 {
	h := &Hasher128{a: a}
	h.Reset()
	return h
}

// Reset empties the hash, to hash another input.
func (h *Hasher128) Reset() {
	h.acc = initAccs
	h.blk = 0
	h.len = 0
}

// Write adds buf to the input. It never fails.
func (h *Hasher128) Write(buf []byte) (int, error) {
	n := len(buf)
	// On the first write, whole blocks past the buffer go without a copy.
	for h.len == 0 && len(buf) > len(h.buf) {
		h.a.block(&h.acc, ptr(&buf[0]), key)
		buf = buf[_block:]
		h.blk++
	}
	for len(buf) > 0 {
		if h.len < u64(len(h.buf)) {
			c := copy(h.buf[h.len:], buf)
			h.len += u64(c)
			buf = buf[c:]
			continue
		}
		h.a.block(&h.acc, ptr(&h.buf), key)
		h.blk++
		h.len = _stripe
		copy(h.buf[:_stripe], h.buf[_block:])
	}
	return n, nil
}

// Sum128 is the hash of what was written.
func (h *Hasher128) Sum128() Uint128 {
	if h.blk == 0 {
		return h.a.Hash128(h.buf[:h.len])
	}

	accs := h.acc
	if h.len > 0 {
		h.a.long(&accs, ptr(&h.buf[0]), key, h.len)
	}
	return merge128(&accs, h.blk*_block+h.len)
}
