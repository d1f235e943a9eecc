package bmap

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"hash"
)

// DefaultBlockSize is the block size of maps usbflash creates, bmaptool's.
const DefaultBlockSize = 4096

// Builder is an io.Writer that maps the blocks of the image written to it
// which are not entirely zero, hashing each range with SHA-256 as it goes.
// Its memory does not grow with the image, only with the number of ranges.
type Builder struct {
	bs      int64
	size    int64 // bytes written
	partial []byte
	zero    []byte
	h       hash.Hash
	open    bool // a range is being hashed
	cur     Range
	ranges  []Range
	mapped  int64
}

// NewBuilder maps blocks of blockSize bytes (0: DefaultBlockSize).
func NewBuilder(blockSize int) *Builder {
	if blockSize <= 0 {
		blockSize = DefaultBlockSize
	}
	return &Builder{bs: int64(blockSize), partial: make([]byte, 0, blockSize),
		zero: make([]byte, blockSize), h: sha256.New()}
}

// Write never fails.
func (b *Builder) Write(p []byte) (int, error) {
	n := len(p)
	if len(b.partial) > 0 {
		k := min(len(p), cap(b.partial)-len(b.partial))
		b.partial = append(b.partial, p[:k]...)
		p = p[k:]
		if len(b.partial) < cap(b.partial) {
			return n, nil
		}
		b.block(b.partial)
		b.partial = b.partial[:0]
	}
	for int64(len(p)) >= b.bs {
		b.block(p[:b.bs])
		p = p[b.bs:]
	}
	b.partial = append(b.partial, p...)
	return n, nil
}

// block takes one block (the last one may be short) at offset b.size.
func (b *Builder) block(p []byte) {
	idx := b.size / b.bs
	b.size += int64(len(p))
	if bytes.Equal(p, b.zero[:len(p)]) {
		b.closeRange()
		return
	}
	if !b.open {
		b.open, b.cur = true, Range{First: idx}
		b.h.Reset()
	}
	b.cur.Last = idx
	b.h.Write(p)
}

func (b *Builder) closeRange() {
	if !b.open {
		return
	}
	b.cur.Checksum = hex.EncodeToString(b.h.Sum(nil))
	b.ranges = append(b.ranges, b.cur)
	b.mapped += b.cur.Last - b.cur.First + 1
	b.open = false
}

// Map ends the image and returns its map. The Builder is done after it.
func (b *Builder) Map() *Map {
	if len(b.partial) > 0 {
		b.block(b.partial)
		b.partial = b.partial[:0]
	}
	b.closeRange()
	return &Map{Version: "2.0", ImageSize: b.size, BlockSize: b.bs,
		BlocksCount: (b.size + b.bs - 1) / b.bs, MappedBlocksCount: b.mapped,
		ChecksumType: SHA256, Ranges: b.ranges}
}
