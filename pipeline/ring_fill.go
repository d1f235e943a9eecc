package pipeline

import (
	"hash"
	"io"
	"time"
)

// pastLimit is the decoder's terminal error when the stream holds more than
// limit bytes. The writer turns it into a CapacityError or ImageSizeError.
type pastLimit struct{}

func (pastLimit) Error() string { return "image continues past the limit" }

// decoder is the producer side of the write ring: it fills free buffers
// from the image stream, hashes what it reads (overlapping with the device),
// zero-pads the tail to a whole block and hands each buffer over in order.
type decoder struct {
	src       io.Reader
	r         *ring
	blockSize int
	limit     int64     // most bytes accepted: capacity, or the declared size
	hash      hash.Hash // nil: no hash
	pieces    func(off int64, p []byte, into []Extent) []Extent
	chosen    [][]Extent // by buffer: the pieces to write, relative to it
	written   hash.Hash  // with pieces: of the bytes written
	probe     [1]byte    // scratch for the read past the limit

	wait time.Duration // waiting for a free buffer: the device was the bottleneck
	busy time.Duration // reading and hashing
}

// run fills buffers until the stream ends, fails or passes the limit, or
// stop is closed. Its last fill carries a non-nil err.
func (d *decoder) run(stop <-chan struct{}) {
	var off int64
	t := time.Now()
	for {
		var idx int
		select {
		case idx = <-d.r.free:
		case <-stop:
			return
		}
		var waited time.Duration
		waited, t = since(t)
		d.wait += waited

		buf := d.r.bufs[idx]
		room := len(buf)
		if rest := d.limit - off; rest < int64(room) {
			room = int(rest)
		}
		n, err := readFull(d.src, buf[:room])
		if err == nil && off+int64(n) == d.limit {
			err = d.probePast()
		}
		if d.hash != nil {
			d.hash.Write(buf[:n])
		}
		padded := roundUp(n, d.blockSize)
		clear(buf[n:padded]) // the buffer may hold an earlier transfer's bytes
		part := d.pick(idx, off, buf[:padded], n)

		var worked time.Duration
		worked, t = since(t)
		d.busy += worked
		// full has room for every buffer, so this never blocks.
		d.r.full <- fill{idx: idx, off: off, n: n, padded: padded, part: part, err: err}
		off += int64(n)
		if err != nil {
			return
		}
	}
}

// probePast reads one byte beyond the limit: the only way to learn whether
// a stream of unknown length fits exactly or continues.
func (d *decoder) probePast() error {
	n, err := readFull(d.src, d.probe[:])
	switch {
	case n > 0:
		return pastLimit{}
	case err == nil:
		return io.ErrNoProgress
	default:
		return err // io.EOF: fits exactly; anything else is a source error
	}
}
