package fakecheck

import (
	"bytes"
	"encoding/binary"

	"github.com/usbflash/usbflash/internal/lib/splitmix"
)

// magic opens every block the probe writes.
var magic = [8]byte{'u', 's', 'b', 'f', 'l', 'c', 'h', 'k'}

// headerLen is the magic, the run's nonce and the block's LBA.
const headerLen = 24

// fill makes p (one block) the probe's block for lba in the run of nonce:
// a header naming both, then bytes drawn from them, so a block read back
// from elsewhere names where it was written and cannot be mistaken for
// anything else.
func fill(p []byte, nonce uint64, lba int64) {
	copy(p, magic[:])
	binary.LittleEndian.PutUint64(p[8:], nonce)
	binary.LittleEndian.PutUint64(p[16:], uint64(lba))
	body(p[headerLen:], nonce, lba)
}

// body fills p with splitmix64 output seeded by nonce and lba.
func body(p []byte, nonce uint64, lba int64) {
	splitmix.Fill(p, nonce^uint64(lba)*0xD1B54A32D192ED03)
}

// named says which LBA's probe block p is, in the run of nonce (ok false:
// p is no block of this run).
func named(p []byte, nonce uint64, scratch []byte) (lba int64, ok bool) {
	if len(p) < headerLen || !bytes.Equal(p[:8], magic[:]) || binary.LittleEndian.Uint64(p[8:]) != nonce {
		return 0, false
	}
	lba = int64(binary.LittleEndian.Uint64(p[16:]))
	body(scratch[:len(p)-headerLen], nonce, lba)
	return lba, bytes.Equal(p[headerLen:], scratch[:len(p)-headerLen])
}

// verdict is what a block read back says about the write to it.
type verdict int

const (
	kept    verdict = iota // the block holds what was written
	moved                  // it holds the block written to another LBA
	dropped                // it holds what it held before, or one byte repeated (zeros)
	garbled                // it holds something else
)

// judge reads block p, written as lba's probe block of nonce; orig is what
// it held before (nil when unknown).
func judge(p []byte, lba int64, nonce uint64, orig, scratch []byte) (verdict, int64) {
	if at, ok := named(p, nonce, scratch); ok {
		if at == lba {
			return kept, lba
		}
		return moved, at
	}
	if orig != nil && bytes.Equal(p, orig) {
		return dropped, 0
	}
	if len(p) > 0 && bytes.Count(p, p[:1]) == len(p) {
		return dropped, 0
	}
	return garbled, 0
}
