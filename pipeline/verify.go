package pipeline

import (
	"bytes"
	"context"
	"crypto/sha256"
	"errors"
	"fmt"
	"io"
	"time"

	"github.com/usbflash/usbflash/pipeline/blockdev"
)

// VerifyOptions tune Verify and VerifyHash. The zero value is valid.
type VerifyOptions struct {
	// Name names the device in errors; empty: its String method, if any.
	Name string
	// TransferSize is the bytes per READ command, a multiple of the block
	// size. 0 means DefaultReadSize. It is lowered to what a
	// TransferLimiter device takes.
	TransferSize int
	// Buffers is how many read buffers cycle, at least 2 (the next read
	// proceeds while the previous buffer is compared). 0 means 2.
	Buffers int
	// Progress, when set, is called with Phase "verify" at most about 4
	// times a second, plus at the start and the end.
	Progress func(Progress)
	// Only, when set, limits the read-back to these sorted image extents
	// (WriteResult.Written of a write that skipped transfers); the rest
	// of the card is neither read nor compared.
	Only []blockdev.Extent
}

// DefaultReadSize is the bytes per READ when a card is read (a verify, a
// backup) and no size was given. A READ carries nothing from the host, so
// a larger one costs only the memory of its buffers, while every
// command's fixed cost (its CBW and CSW, the card's latency before the
// first block, the host controller's scheduling) is paid a quarter as
// often as at the 1 MiB a write defaults to. Where that
// cost is large the read-back is bound by it: on an emulated EHCI reader a
// 384 MiB read-back took 3.30 s in 1 MiB READs and 2.08 s in 4 MiB ones
// (make profile-slowhost). A reader that fails large commands is stepped
// down by usbms whatever the size asked.
const DefaultReadSize = 4 << 20

// readBackMemory bounds the read-back buffers of all the cards a session
// verifies at once: like the write's ring (autoRingMemory), they then fit
// the memory Linux lets usbfs map by default, and no READ is copied.
const readBackMemory = autoRingMemory

// ReadBackSize is the READ size for verifying cards written with
// transfer-byte commands when the user chose none: DefaultReadSize,
// halved while the read-back buffers of cards cards would pass
// readBackMemory, and never below transfer (the size the write proved).
func ReadBackSize(transfer, cards int) int {
	size := DefaultReadSize
	for size > transfer && 2*size*max(cards, 1) > readBackMemory {
		size /= 2
	}
	return max(size, transfer)
}

// VerifyResult describes a finished verify.
type VerifyResult struct {
	Bytes int64 // image bytes compared or hashed
	Reads int   // READ commands issued
	// TransferSize is the bytes per READ asked of the device, after its
	// limits (usbms may split a READ further for a reader that chokes).
	TransferSize int
	Elapsed      time.Duration //
	DeviceBusy   time.Duration // time inside ReadBlocks
	CPU          time.Duration // user and system time of the process; 0 where the OS does not say
	// Usage and IO are the read-back's cost, as in WriteResult.
	Usage  Usage
	IO     blockdev.IOCounts
	Memory string       // the kind of memory read into, as in WriteResult
	SHA256 [32]byte     // VerifyHash: of the bytes read back
	Method VerifyMethod // how the read-back was checked
}

func (o *VerifyOptions) normalize(dev blockdev.Device) error {
	return o.normalizeBuffers(dev, func(int) int { return 2 })
}

// normalizeBuffers is normalize with defBuffers choosing the buffer count
// when none was asked for, from the transfer size the device allows.
func (o *VerifyOptions) normalizeBuffers(dev blockdev.Device, defBuffers func(transfer int) int) error {
	var err error
	// One more transfer-sized buffer holds the image side of a comparison.
	o.TransferSize, o.Buffers, err = sizeBuffers(dev, o.TransferSize, DefaultReadSize, o.Buffers, defBuffers, 1)
	return err
}

// Verify reads the medium back from LBA 0 and compares it with image, a
// fresh decode of the image that was written. size is the image length, or
// -1 to compare until image ends. The first difference is reported as a
// *VerifyError naming its LBA and byte offset; padding after the image's
// last byte is not compared. image is read to its end even when size is
// known, so that a decoder's last checks run: an error there, or image
// bytes past size, fails the verify.
func Verify(ctx context.Context, dev blockdev.Device, image io.Reader, size int64, opts VerifyOptions) (VerifyResult, error) {
	return verify(ctx, dev, image, size, opts, true)
}

// verify is Verify; toEnd=false stops reading the image once the last
// range to compare is compared (locating a difference in one range needs
// nothing past it).
func verify(ctx context.Context, dev blockdev.Device, image io.Reader, size int64, opts VerifyOptions, toEnd bool) (VerifyResult, error) {
	if err := opts.normalize(dev); err != nil {
		return VerifyResult{}, err
	}
	name, bs := blockdev.Name(dev, opts.Name), int64(dev.BlockSize())
	if err := blockdev.CheckFits(dev, name, size, true); err != nil {
		return VerifyResult{}, err
	}
	limit := size
	if size < 0 {
		limit = blockdev.Capacity(dev)
	}
	img := make([]byte, opts.TransferSize) // the image side needs no alignment
	var pos int64                          // image bytes consumed
	res, err := readBack(ctx, dev, limit, size, opts, func(f fill, got []byte) (int, bool, error) {
		if f.err == io.EOF {
			if !toEnd {
				return 0, false, nil
			}
			if size < 0 {
				return 0, false, imageEnds(image, name, limit)
			}
			return 0, false, imageEndsAt(image, pos, size)
		}
		if f.err != nil {
			return 0, false, f.err
		}
		if f.off > pos { // Only skipped a part the card need not hold
			if _, err := io.CopyN(io.Discard, image, f.off-pos); err != nil {
				return 0, false, fmt.Errorf("reading the image to verify against, up to byte offset %d: %w", f.off, err)
			}
		}
		n, err := readFull(image, img[:f.n])
		pos = f.off + int64(n)
		if i := firstDiff(img[:n], got[:n]); i >= 0 {
			off := f.off + int64(i)
			return i, false, &VerifyError{Device: name, LBA: off / bs, Offset: off, Want: img[i], Got: got[i]}
		}
		switch {
		case err == io.EOF && size >= 0 && n < f.n:
			return n, false, &ImageSizeError{Declared: size, Actual: f.off + int64(n), Verifying: true}
		case err == io.EOF && size >= 0:
			// Its last bytes came with the end (a body's last Read): the
			// end is checked where every image's is.
			return n, true, nil
		case err == io.EOF:
			return n, false, nil
		case err != nil:
			return n, false, fmt.Errorf("reading the image to verify against, at byte offset %d: %w", f.off+int64(n), err)
		}
		return n, true, nil
	})
	res.Method = MethodCompare
	return res, err
}

// imageEnds checks that an image of unknown length has no bytes left once
// the whole medium (capacity bytes) matched it.
func imageEnds(image io.Reader, name string, capacity int64) error {
	switch err := probePast(image); {
	case isPastLimit(err):
		return &blockdev.CapacityError{Device: name, ImageSize: -1, Capacity: capacity, Written: capacity}
	case err != io.EOF:
		return fmt.Errorf("reading the image to verify against, at byte offset %d: %w", capacity, err)
	}
	return nil
}

// imageEndsAt checks that an image of declared size, pos bytes of which
// were compared, ends there: it reads the rest, which the card need not
// hold (Only skipped it), and then to the end of the image. Only there does
// a decoder verify its last block check, index and footer (xz), or an
// entry's CRC-32 (zip); an image whose archive fails there, or that goes on
// past its size, does not match, however well the bytes compared.
func imageEndsAt(image io.Reader, pos, size int64) error {
	if rest := size - pos; rest > 0 {
		n, err := io.CopyN(io.Discard, image, rest)
		switch {
		case err == io.EOF:
			return &ImageSizeError{Declared: size, Actual: pos + n, Verifying: true}
		case err != nil:
			return fmt.Errorf("reading the image to verify against, at byte offset %d: %w", pos+n, err)
		}
	}
	switch err := probePast(image); {
	case isPastLimit(err):
		return &ImageSizeError{Declared: size, Actual: size, Longer: true, Verifying: true}
	case err != io.EOF:
		return fmt.Errorf("reading the image to verify against, at its end (byte offset %d): %w", size, err)
	}
	return nil
}

// firstDiff returns the index of the first differing byte, or -1. It
// compares in chunks with bytes.Equal (vectorised) and only looks at
// single bytes inside the chunk that differs.
func firstDiff(a, b []byte) int {
	const chunk = 4096
	for base := 0; base < len(a); base += chunk {
		end := min(base+chunk, len(a))
		if bytes.Equal(a[base:end], b[base:end]) {
			continue
		}
		for i := base; i < end; i++ {
			if a[i] != b[i] {
				return i
			}
		}
	}
	return -1
}

// VerifyHash reads back the first size bytes of the medium and compares
// their SHA-256 with want, the hash Write returned. It needs no second
// decode of the image; on a mismatch (*VerifyError with HashOnly set) the
// caller runs Verify against a fresh decode to find the first bad LBA.
func VerifyHash(ctx context.Context, dev blockdev.Device, size int64, want [32]byte, opts VerifyOptions) (VerifyResult, error) {
	if err := opts.normalize(dev); err != nil {
		return VerifyResult{}, err
	}
	name := blockdev.Name(dev, opts.Name)
	if size < 0 {
		return VerifyResult{}, fmt.Errorf("hash verify of %s needs the image size, got %d", name, size)
	}
	if err := blockdev.CheckFits(dev, name, size, true); err != nil {
		return VerifyResult{}, err
	}
	h := sha256.New()
	res, err := readBack(ctx, dev, size, size, opts, func(f fill, got []byte) (int, bool, error) {
		if f.err != nil {
			return 0, false, nilIfEOF(f.err)
		}
		h.Write(got)
		return len(got), true, nil
	})
	if err != nil {
		return res, err
	}
	h.Sum(res.SHA256[:0])
	res.Method = MethodSHA256
	if res.SHA256 != want {
		return res, &VerifyError{Device: name, HashOnly: true, Size: size, WantHash: want, GotHash: res.SHA256}
	}
	return res, nil
}

func nilIfEOF(err error) error {
	if err == io.EOF {
		return nil
	}
	return err
}

// LocateMismatch turns a failed VerifyHash or VerifyDigests into the first
// differing LBA: a hash only says that something differs, a digest in
// which command's range, and a person fixing a card (or a developer fixing
// a reader) needs to know where. hashErr is the verify's error and size and
// opts what it was given; open decodes the image again from its start (the
// stream written was consumed). The card is compared with it byte by byte
// (opts.Progress is not called, as the second pass is a diagnosis of the
// verify, not a phase of its own), and its *VerifyError names the first bad
// LBA and byte offset. After VerifyHash the whole image is compared; after
// VerifyDigests only the range it named, and the image is decoded only up
// to that range's end.
//
// When the second comparison finds no difference, the card reads back
// right now and the first read was wrong: the reader returned inconsistent
// data, an *InconsistentError wrapping hashErr. Any other error of
// the second pass (a read failing, a cancel) is returned as it is. An
// error that is not a hash or digest mismatch (an *InconsistentError
// already among them) is returned unchanged, and open not called; when the
// image cannot be opened again (it was standard input), hashErr is
// returned with a note of why.
func LocateMismatch(ctx context.Context, dev blockdev.Device, open func() (io.ReadCloser, error), size int64, opts VerifyOptions, hashErr error) error {
	var ve *VerifyError
	var ie *InconsistentError
	if errors.As(hashErr, &ie) || !errors.As(hashErr, &ve) || !(ve.HashOnly || ve.Transfer) {
		return hashErr
	}
	src, err := open()
	if err != nil {
		return fmt.Errorf("%w (the image could not be opened again to locate the difference: %v)", hashErr, err)
	}
	defer src.Close()
	opts.Progress = nil
	if ve.Transfer {
		return locateInRange(ctx, dev, src, size, opts, ve)
	}
	_, err = Verify(ctx, dev, src, size, opts)
	if err == nil {
		return &InconsistentError{Err: hashErr}
	}
	return err
}
