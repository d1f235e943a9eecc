package pipeline

import (
	"hash"
	"io"
	"time"

	"github.com/usbflash/usbflash/pipeline/blockdev"
)

// pastLimit is the filler's terminal error when the stream holds more than
// limit bytes. The writer turns it into a blockdev.CapacityError or ImageSizeError.
type pastLimit struct{}

func (pastLimit) Error() string { return "image continues past the limit" }

func isPastLimit(err error) bool {
	_, ok := err.(pastLimit)
	return ok
}

// filler is the producer side of a write: it reads the decoded image
// stream straight into the ring's free buffers (the decoder's output is
// copied once, into the memory the device sends), hashes what it reads
// (overlapping with the device), zero-pads the tail to a whole block and
// hands each buffer over in order.
type filler struct {
	src       io.Reader
	blockSize int
	limit     int64     // most bytes accepted: capacity, or the declared size
	hash      hash.Hash // nil: no hash
	pieces    func(off int64, p []byte, into []blockdev.Extent) []blockdev.Extent
	chosen    [][]blockdev.Extent // by buffer: the pieces to write, relative to it
	written   hash.Hash           // with pieces: of the bytes written
	// digests, when set, gets a digest of each command the writer will
	// send for a filled buffer: the buffer whole, or its pieces.
	digests *Digests

	busy time.Duration // reading and hashing
}

// produce fills buffers until the stream ends, fails or passes the limit,
// or the consumer stops. Its last fill carries a non-nil err.
func (f *filler) produce(r *ring) {
	var off int64
	for {
		idx, buf, ok := r.take()
		if !ok {
			return
		}
		t := time.Now()
		room := len(buf)
		if rest := f.limit - off; rest < int64(room) {
			room = int(rest)
		}
		n, err := readFull(f.src, buf[:room])
		if err == nil && off+int64(n) == f.limit {
			err = probePast(f.src)
		}
		if f.hash != nil {
			f.hash.Write(buf[:n])
		}
		padded := roundUp(n, f.blockSize)
		clear(buf[n:padded]) // the buffer may hold an earlier transfer's bytes
		part := f.pick(idx, off, buf[:padded], n)
		f.digest(idx, off, buf[:padded], part)
		f.busy += time.Since(t)
		r.hand(fill{idx: idx, off: off, n: n, padded: padded, part: part, err: err})
		off += int64(n)
		if err != nil {
			return
		}
	}
}

// digest records the digests of what the writer sends for a buffer (p,
// padded to whole blocks, at image offset off): the same bytes the writer
// passes to WriteBlocks, hashed here so the hash overlaps the device. Every
// buffer but the last is a whole transfer, so its LBA is off / blockSize,
// the first transfer's included, though it is written last.
func (f *filler) digest(idx int, off int64, p []byte, part bool) {
	if f.digests == nil {
		return
	}
	if !part {
		f.digests.record(off, p)
		return
	}
	for _, e := range f.chosen[idx] {
		f.digests.record(off+e.Off, p[e.Off:e.End()])
	}
}

// probePast reads one byte beyond a limit: the only way to learn whether a
// stream of unknown length fits exactly or continues. It returns io.EOF when
// the stream ends there, pastLimit when it goes on, or the stream's error.
func probePast(src io.Reader) error {
	var probe [1]byte
	n, err := readFull(src, probe[:])
	switch {
	case n > 0:
		return pastLimit{}
	case err == nil:
		return io.ErrNoProgress
	}
	return err
}
