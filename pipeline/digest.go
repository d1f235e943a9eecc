package pipeline

import (
	"context"
	"fmt"
	"io"
	"sync"
	"sync/atomic"
	"time"

	"github.com/usbflash/usbflash/internal/lib/xxh3"
	"github.com/usbflash/usbflash/pipeline/blockdev"
)

// A verify by SHA-256 pays for a cryptographic hash twice, once over the
// decoded image and once over the read-back; on a host without SHA
// instructions (an emulator, a small board) that is several times the cost
// of the I/O, and a mismatch still needs a second decode to say where. A
// verify by digests records, on the decoding goroutine, a fast
// non-cryptographic hash of every write command's bytes as they go to the
// card, and the read-back checks each command's range against its own:
// the first bad command is known at once, with no decode at all.
//
// xxh3-128 detects any accidental change (bad blocks, a reader returning
// stale or shifted data) with a chance of missing one of 2^-128; it is no
// defence against someone forging a card, which is not what a verify is
// for: a published checksum of the image (--sha256) is checked separately.

// Which xxh3 code computes the digests is chosen by measuring, once per
// process: every implementation this CPU runs (the portable one, AVX2 or
// SSE2 on amd64, NEON on arm64; xxh3.Accums) hashes a 64 KiB block a few
// times, and the fastest is kept. They give the same digests. Vector code
// is the faster on real hardware; under an emulator it need not be (in
// the arm64 guest of issue 45, qemu ran NEON at 165-183 MB/s and the
// portable code at 434-994, and NEON took most of a verify's CPU), and
// the host a card is written from may be one.

// DigestOf is the digest of p, one command's bytes, as a write records it.
func DigestOf(p []byte) [16]byte { return digestAccum().Hash128(p).Bytes() }

// digestAccum is the implementation the digests use (digestChoice).
func digestAccum() xxh3.Accum { return digestChoice.get() }

// digestChoice is the process's choice of implementation: a package
// variable because the choice is the process's (the CPU it runs on, the
// emulator it may run under), made the first time a digest is taken.
var digestChoice = &accumChoice{candidates: xxh3.Accums, timing: timeAccum}

// accumChoice chooses the fastest xxh3 implementation once.
type accumChoice struct {
	candidates func() []xxh3.Accum
	timing     func(a xxh3.Accum, block []byte) time.Duration

	once        sync.Once
	chosen      xxh3.Accum
	chosenIndex int          // of the candidates, for the tests
	timed       atomic.Int32 // timings taken, for the tests
}

// choiceBlock and choiceRounds are what each candidate hashes: a block
// the size of a small command, the best of a few rounds taken in turn,
// so that a moment's load on a shared host does not decide.
const (
	choiceBlock  = 64 << 10
	choiceRounds = 5
)

// get is the chosen implementation, measured on the first call.
func (c *accumChoice) get() xxh3.Accum {
	c.once.Do(func() {
		cands := c.candidates()
		block := make([]byte, choiceBlock)
		for i := range block {
			block[i] = byte(i*7 + i>>8)
		}
		best := make([]time.Duration, len(cands))
		for r := range choiceRounds {
			for i, a := range cands {
				d := c.timing(a, block)
				c.timed.Add(1)
				if r == 0 || d < best[i] {
					best[i] = d
				}
			}
		}
		k := 0
		for i := range cands {
			if best[i] < best[k] {
				k = i
			}
		}
		c.chosen, c.chosenIndex = cands[k], k
	})
	return c.chosen
}

// timeAccum is how long a takes to hash block.
func timeAccum(a xxh3.Accum, block []byte) time.Duration {
	start := time.Now()
	a.Hash128(block)
	return time.Since(start)
}

// TransferDigest is the xxh3-128 of the bytes of one write command: Blocks
// blocks from LBA, padding included, exactly as they were sent.
type TransferDigest struct {
	LBA    int64
	Blocks int32 // a command is at most one buffer: blockdev.MaxBufferMemory bounds it
	Sum    [16]byte
}

// Digests are a write's TransferDigests in LBA order, one per write
// command but the zeroing one (the held first transfer overwrites it): 32
// bytes a command, 32 KiB per GiB of image with 1 MiB transfers, however
// the write's commands were ordered. A block map's pieces are one command
// each, and the ranges it left out have none.
type Digests struct {
	BlockSize int
	List      []TransferDigest
	// Size is the image's length: what lies past it in the last block is
	// padding, checked but not counted as image bytes verified.
	Size int64
}

// Bytes is how many bytes of the card the digests cover.
func (d *Digests) Bytes() int64 {
	var n int64
	for _, t := range d.List {
		n += int64(t.Blocks) * int64(d.BlockSize)
	}
	return n
}

// imageBytes is how many bytes of the image in [off, off+n) lie before
// the image's end.
func (d *Digests) imageBytes(off, n int64) int64 {
	return max(min(off+n, d.Size)-off, 0)
}

// extents are the byte ranges the digests cover, merged where they touch.
func (d *Digests) extents() []blockdev.Extent {
	var list []blockdev.Extent
	bs := int64(d.BlockSize)
	for _, t := range d.List {
		list = addExtent(list, t.LBA*bs, int64(t.Blocks)*bs)
	}
	return list
}

// record appends the digest of p, the bytes of one command at byte offset
// off. Commands come in stream order, so the list is sorted by LBA even
// though the first transfer is written last.
func (d *Digests) record(off int64, p []byte) {
	if len(p) == 0 {
		return
	}
	bs := int64(d.BlockSize)
	d.List = append(d.List, TransferDigest{LBA: off / bs, Blocks: int32(int64(len(p)) / bs), Sum: DigestOf(p)})
}

// VerifyDigests reads back every range the digests cover, and nothing
// else, and checks each against its digest. The reads may be any size (the
// verify's TransferSize, what the reader takes): a range spread over
// several reads is hashed as it streams; opts.Only is ignored, the digests
// say what was written.
//
// On the first range that differs it reads that range once more. When the
// second read matches, the reader returned different data for the same
// blocks: an *InconsistentError wrapping the mismatch. Otherwise it is a
// *VerifyError with Transfer set, naming the command's LBA range;
// LocateMismatch narrows it to the first bad byte when the image can be
// decoded again.
func VerifyDigests(ctx context.Context, dev blockdev.Device, d Digests, opts VerifyOptions) (VerifyResult, error) {
	if err := opts.normalize(dev); err != nil {
		return VerifyResult{}, err
	}
	name, bs := blockdev.Name(dev, opts.Name), int64(dev.BlockSize())
	if int64(d.BlockSize) != bs && len(d.List) > 0 {
		return VerifyResult{}, fmt.Errorf("digests of %d-byte blocks cannot verify %s, which has %d-byte blocks", d.BlockSize, name, bs)
	}
	opts.Only = d.extents()
	var limit int64
	if k := len(opts.Only); k > 0 {
		limit = opts.Only[k-1].End()
	}
	if err := blockdev.CheckFits(dev, name, limit, true); err != nil {
		return VerifyResult{}, err
	}
	var total int64 // image bytes to verify, padding left out, as progress and Bytes count them
	for _, e := range opts.Only {
		total += d.imageBytes(e.Off, e.Len)
	}
	h := digestAccum().New128()
	var (
		i    int   // the digest being checked
		done int64 // its bytes hashed so far
		bad  *VerifyError
	)
	res, err := readBack(ctx, dev, limit, total, opts, func(f fill, got []byte) (int, bool, error) {
		if f.err != nil {
			return 0, false, nilIfEOF(f.err)
		}
		pos := f.off
		for p := got; len(p) > 0; {
			t := d.List[i]
			size := int64(t.Blocks) * bs
			if done == 0 && pos != t.LBA*bs {
				// The reader reads the merged ranges in order, so this
				// cannot happen unless the list was not sorted.
				return 0, false, fmt.Errorf("verifying %s: read back byte offset %d, expected the range at LBA %d", name, pos, t.LBA)
			}
			take := min(int64(len(p)), size-done)
			var sum [16]byte
			switch {
			case done == 0 && take == size: // the read holds the whole range: one call
				sum = DigestOf(p[:take])
			default:
				h.Write(p[:take])
				if done += take; done < size {
					// The range goes on in the next read.
					return int(d.imageBytes(f.off, int64(len(got)))), true, nil
				}
				sum = h.Sum128().Bytes()
				h.Reset()
			}
			done = 0
			if sum != t.Sum {
				bad = &VerifyError{Device: name, Transfer: true, LBA: t.LBA, Blocks: int64(t.Blocks), Offset: t.LBA * bs,
					BlockSize: int(bs), WantDigest: t.Sum, GotDigest: sum}
				return 0, false, bad
			}
			i++
			pos += take
			p = p[take:]
		}
		return int(d.imageBytes(f.off, int64(len(got)))), true, nil
	})
	res.Method = MethodDigests
	if bad == nil || err != bad {
		return res, err
	}
	return res, rereadRange(ctx, dev, bad)
}

// rereadRange reads the range a digest mismatch names once more. A second
// read that matches the digest means the reader is not consistent, which
// says more about the reader (a bad cable, a failing bridge) than about
// the card. A read that fails leaves the mismatch, with why it was not
// confirmed.
func rereadRange(ctx context.Context, dev blockdev.Device, bad *VerifyError) error {
	if ctx.Err() != nil {
		return bad
	}
	n := int(bad.Blocks) * bad.BlockSize
	mem, err := allocBuffers(dev, bad.Device, 1, n)
	if err != nil {
		return fmt.Errorf("%w (a second read was not possible: %v)", bad, err)
	}
	defer mem.release()
	if err := dev.ReadBlocks(context.WithoutCancel(ctx), bad.LBA, mem.bufs[0]); err != nil {
		derr := &DeviceError{Device: bad.Device, Op: OpRead, LBA: bad.LBA, Count: bad.Blocks, BlockSize: bad.BlockSize, Err: err}
		return fmt.Errorf("%w (reading those blocks again failed: %v)", bad, derr)
	}
	if DigestOf(mem.bufs[0]) == bad.WantDigest {
		return &InconsistentError{Err: bad, Reread: true}
	}
	return bad
}

// locateInRange compares the range a digest mismatch names with the image
// decoded again, reading the image only up to the range's end: the first
// differing byte, or an *InconsistentError when the card now reads right.
func locateInRange(ctx context.Context, dev blockdev.Device, image io.Reader, size int64, opts VerifyOptions, bad *VerifyError) error {
	bs := int64(bad.BlockSize)
	r := blockdev.Extent{Off: bad.LBA * bs, Len: bad.Blocks * bs}
	end := r.End()
	if size >= 0 {
		r.Len = min(end, size) - r.Off
	}
	if r.Len > 0 {
		opts.Only = []blockdev.Extent{r}
		if _, err := verify(ctx, dev, image, size, opts, false); err != nil {
			return err
		}
	}
	if size >= 0 && size < end {
		// The range ends in the last block's padding, which the
		// comparison with the image leaves out; it was written as zeros.
		if err := checkPadding(ctx, dev, size, bad); err != nil {
			return err
		}
	}
	return &InconsistentError{Err: bad}
}

// checkPadding reads the block holding the image's last byte (size) and
// names the first byte after it that is not the zero written there.
func checkPadding(ctx context.Context, dev blockdev.Device, size int64, bad *VerifyError) error {
	bs := int64(bad.BlockSize)
	lba := size / bs
	mem, err := allocBuffers(dev, bad.Device, 1, int(bs))
	if err != nil {
		return fmt.Errorf("%w (the block after the image's end could not be read: %v)", bad, err)
	}
	defer mem.release()
	blk := mem.bufs[0]
	if err := dev.ReadBlocks(context.WithoutCancel(ctx), lba, blk); err != nil {
		return &DeviceError{Device: bad.Device, Op: OpRead, LBA: lba, Count: 1, BlockSize: int(bs), Err: err}
	}
	for i := size % bs; i < bs; i++ {
		if blk[i] != 0 {
			return &VerifyError{Device: bad.Device, LBA: lba, Offset: lba*bs + i, Want: 0, Got: blk[i]}
		}
	}
	return nil
}
