package pipeline

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"strings"

	"github.com/usbflash/usbflash/internal/failure"
	"github.com/usbflash/usbflash/internal/lib/units"
	"github.com/usbflash/usbflash/pipeline/blockdev"
)

// A card whose read-back differs is most often right but for a few
// blocks (a write its cache lost, a transient fault of the reader), and a
// factory would rather write those again than the whole image (bmaptool
// #56). Repair finds every range that differs by comparing the card with
// the image decoded again, writes exactly those ranges again, syncs and
// compares them again, a few rounds at most. It writes nothing outside the
// blocks that differed, and keeps the first transfer's rule: a range in the
// first transfer's region (the partition table, the boot code) is written
// after every other, so a repair cut short never leaves that region
// claiming an image whose other ranges were not yet repaired.

// DefaultRepairRounds is how many times Repair writes ranges again before
// it gives up on a card: a transient fault is gone after one; a card that
// keeps losing the same blocks will not hold them.
const DefaultRepairRounds = 3

// RepairOptions tune Repair.
type RepairOptions struct {
	// Verify is how the card is read back: Name, its READ size and
	// buffers, and Only, the image extents the write wrote (nil: all).
	Verify VerifyOptions
	// TransferSize is the largest WRITE (the write's transfer size: the
	// first transfer's region is that many bytes); 0: DefaultTransferSize.
	TransferSize int
	// Rounds is how many times ranges are written again at most; 0:
	// DefaultRepairRounds.
	Rounds int
}

// RepairResult says what a repair did.
type RepairResult struct {
	Ranges int   // ranges that differed and were written again
	Bytes  int64 // their bytes
	Rounds int   // times ranges were written
}

// RepairError is a card that still differs from the image after Rounds
// repairs: Left are the ranges that do (byte extents of the card).
type RepairError struct {
	Device string
	Rounds int
	Left   []blockdev.Extent
	// First is the first range's first differing byte, as a comparison
	// names it.
	First *VerifyError
}

func (e *RepairError) Error() string {
	var ranges []string
	for i, r := range e.Left {
		if i == 4 {
			ranges = append(ranges, fmt.Sprintf("and %d more", len(e.Left)-i))
			break
		}
		ranges = append(ranges, fmt.Sprintf("byte offset %d (%s)", r.Off, units.FormatSize(r.Len)))
	}
	return fmt.Sprintf("%s still reads back different after %d repairs: %d range(s), %s, at %s",
		e.Device, e.Rounds, len(e.Left), units.FormatBytes(extentsLen(e.Left)), strings.Join(ranges, ", "))
}

// Class is Verify: the card does not hold the image.
func (e *RepairError) Class() failure.Class { return failure.Verify }

// Unwrap gives the first difference.
func (e *RepairError) Unwrap() error {
	if e.First == nil {
		return nil
	}
	return e.First
}

// ErrNothingToRepair: the comparison with the image found no difference,
// so the verify's mismatch was the reader's (it returned different data
// for the same blocks): nothing can be repaired by writing.
var ErrNothingToRepair = errors.New("a comparison with the image found no difference to repair")

// Repair compares dev with the image (open decodes it from its start;
// size is its length) over opts.Verify.Only, and writes the ranges that
// differ again until they match, at most opts.Rounds times. A card that
// then matches gives the RepairResult; one that does not a *RepairError
// naming what is left. A card that matches at the first comparison gives
// ErrNothingToRepair.
func Repair(ctx context.Context, dev blockdev.Device, open func() (io.ReadCloser, error), size int64, opts RepairOptions) (RepairResult, error) {
	if opts.Rounds <= 0 {
		opts.Rounds = DefaultRepairRounds
	}
	vo := opts.Verify
	vo.Progress = nil // a repair is part of the verify that failed
	name := blockdev.Name(dev, vo.Name)
	bad, _, err := differing(ctx, dev, open, size, vo)
	if err != nil {
		return RepairResult{}, err
	}
	if len(bad) == 0 {
		return RepairResult{}, ErrNothingToRepair
	}
	res := RepairResult{Ranges: len(bad), Bytes: extentsLen(bad)}
	for {
		res.Rounds++
		if err := rewrite(ctx, dev, name, open, size, bad, opts.TransferSize); err != nil {
			return res, err
		}
		vo.Only = bad
		left, first, err := differing(ctx, dev, open, size, vo)
		if err != nil {
			return res, err
		}
		if len(left) == 0 {
			return res, nil
		}
		if res.Rounds >= opts.Rounds {
			return res, &RepairError{Device: name, Rounds: res.Rounds, Left: left, First: first}
		}
		bad = left
	}
}

// differing compares dev with the image over opts.Only and lists the
// blocks that differ, as merged byte extents, and the first differing
// byte.
func differing(ctx context.Context, dev blockdev.Device, open func() (io.ReadCloser, error), size int64, opts VerifyOptions) ([]blockdev.Extent, *VerifyError, error) {
	image, err := open()
	if err != nil {
		return nil, nil, fmt.Errorf("opening the image again to compare: %w", err)
	}
	defer image.Close()
	if err := opts.normalize(dev); err != nil {
		return nil, nil, err
	}
	name, bs := blockdev.Name(dev, opts.Name), dev.BlockSize()
	img := make([]byte, opts.TransferSize)
	var pos int64
	var bad []blockdev.Extent
	var first *VerifyError
	_, err = readBack(ctx, dev, size, size, opts, func(f fill, got []byte) (int, bool, error) {
		if f.err != nil {
			return 0, false, nilIfEOF(f.err)
		}
		if f.off > pos {
			if _, err := io.CopyN(io.Discard, image, f.off-pos); err != nil {
				return 0, false, fmt.Errorf("reading the image to compare, up to byte offset %d: %w", f.off, err)
			}
		}
		n, err := readFull(image, img[:f.n])
		pos = f.off + int64(n)
		if n < f.n {
			return n, false, &ImageSizeError{Declared: size, Actual: pos, Verifying: true}
		}
		if err != nil && err != io.EOF {
			return n, false, fmt.Errorf("reading the image to compare, at byte offset %d: %w", pos, err)
		}
		if bytes.Equal(img[:n], got[:n]) {
			return n, true, nil
		}
		for b := 0; b < n; b += bs {
			e := min(b+bs, n)
			if bytes.Equal(img[b:e], got[b:e]) {
				continue
			}
			off := f.off + int64(b)
			if first == nil {
				i := b + firstDiff(img[b:e], got[b:e])
				first = &VerifyError{Device: name, LBA: off / int64(bs), Offset: f.off + int64(i), Want: img[i], Got: got[i]}
			}
			bad = addExtent(bad, off, int64(bs))
		}
		return n, true, nil
	})
	return bad, first, err
}

// rewrite writes the ranges bad (sorted, block-aligned byte extents) from
// the image again, in WRITEs of at most transfer bytes, the parts in the
// first transfer's region last, and syncs.
func rewrite(ctx context.Context, dev blockdev.Device, name string, open func() (io.ReadCloser, error), size int64, bad []blockdev.Extent, transfer int) error {
	if transfer <= 0 {
		transfer = DefaultTransferSize
	}
	bs := int64(dev.BlockSize())
	transfer = blockdev.FitTransfer(dev, transfer/int(bs)*int(bs)).Size
	image, err := open()
	if err != nil {
		return fmt.Errorf("opening the image again to repair %s: %w", name, err)
	}
	defer image.Close()
	// One buffer to stream through, one to hold the first region's part.
	mem, err := allocBuffers(dev, name, 2, transfer)
	if err != nil {
		return err
	}
	defer mem.release()
	buf, held := mem.bufs[0], mem.bufs[1]
	firstEnd := int64(transfer)
	var heldParts []blockdev.Extent
	devCtx := context.WithoutCancel(ctx) // a command sent is finished
	var pos int64
	write := func(off int64, p []byte) error {
		if err := dev.WriteBlocks(devCtx, off/bs, p); err != nil {
			return &DeviceError{Device: name, Op: OpWrite, LBA: off / bs, Count: int64(len(p)) / bs, BlockSize: int(bs), Err: err}
		}
		return nil
	}
	for _, r := range bad {
		for off := r.Off; off < r.End(); {
			if err := ctx.Err(); err != nil {
				// What was rewritten is synced; the first region, if it
				// needed it, stays as the verify found it.
				_ = dev.Sync(devCtx)
				return &CancelledError{Device: name, Phase: PhaseWrite, Bytes: pos, LBA: off / bs, Err: err}
			}
			n := min(r.End()-off, int64(transfer))
			if off < firstEnd {
				n = min(n, firstEnd-off)
			}
			p := buf[:n]
			if off < firstEnd {
				p = held[off : off+n]
			}
			if err := imageAt(image, &pos, off, size, p); err != nil {
				return err
			}
			if off < firstEnd {
				heldParts = addExtent(heldParts, off, n)
			} else if err := write(off, p); err != nil {
				return err
			}
			off += n
		}
	}
	for _, r := range heldParts {
		if err := write(r.Off, held[r.Off:r.End()]); err != nil {
			return err
		}
	}
	if err := dev.Sync(devCtx); err != nil {
		return &DeviceError{Device: name, Op: OpSync, LBA: -1, BlockSize: int(bs), Err: err}
	}
	return nil
}

// imageAt fills p with the image's bytes from off (pos is how far image
// was read; it must not be past off), zeros past the image's end, as the
// write padded its last block.
func imageAt(image io.Reader, pos *int64, off, size int64, p []byte) error {
	if off > *pos {
		k, err := io.CopyN(io.Discard, image, off-*pos)
		*pos += k
		if err != nil {
			return fmt.Errorf("reading the image to repair, up to byte offset %d: %w", off, err)
		}
	}
	want := max(min(int64(len(p)), size-off), 0)
	n, err := readFull(image, p[:want])
	*pos += int64(n)
	if int64(n) < want {
		return fmt.Errorf("reading the image to repair, at byte offset %d: %w", *pos, cmpEOF(err))
	}
	clear(p[want:])
	return nil
}

// cmpEOF is err, or io.ErrUnexpectedEOF for an image that ended early.
func cmpEOF(err error) error {
	if err == nil || err == io.EOF {
		return io.ErrUnexpectedEOF
	}
	return err
}
