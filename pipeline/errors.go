package pipeline

import (
	"encoding/hex"
	"fmt"
	"strings"

	"github.com/usbflash/usbflash/internal/failure"
	"github.com/usbflash/usbflash/internal/lib/units"
)

// The errors below state facts: what failed, on which device, at which
// blocks. What the user can do about it is the caller's to say.

// Op is the device operation a DeviceError names.
type Op string

// Device operations.
const (
	OpWrite Op = "write"
	OpRead  Op = "read"
	OpSync  Op = "sync"
)

// ImageSizeError says the decoded image was not as long as its container
// declared: the image file is truncated or damaged. The first transfer was
// left zeroed, so the card does not boot what was written.
type ImageSizeError struct {
	Declared int64 // bytes the container promised
	Actual   int64 // bytes decoded; for a longer image, the point where the write stopped
	Longer   bool  // the image went on past Declared
	// Verifying: the image was read again to verify a card, and nothing
	// was written.
	Verifying bool
}

func (e *ImageSizeError) Error() string {
	const zeroed = "; the first transfer was left zeroed so the card does not boot it"
	var msg string
	if e.Longer {
		msg = fmt.Sprintf("image goes on past the %d bytes it declared: the image file is damaged", e.Declared)
	} else {
		msg = fmt.Sprintf("image ended after %d bytes but declared %d: the image file is truncated", e.Actual, e.Declared)
	}
	if e.Verifying {
		return msg
	}
	return msg + zeroed
}

// Class is Image: the image file is truncated or damaged.
func (e *ImageSizeError) Class() failure.Class { return failure.Image }

// ImageCheckError is a check of the whole image (WriteOptions.BeforeFirst)
// that failed once it was streamed: everything but the first transfer was
// written, and the first transfer was left zeroed so the card does not
// boot it.
type ImageCheckError struct {
	Device string
	Err    error
}

func (e *ImageCheckError) Error() string {
	return fmt.Sprintf("%v; the first transfer of %s was left zeroed so the card does not boot it", e.Err, e.Device)
}
func (e *ImageCheckError) Unwrap() error { return e.Err }

// DeviceError is a failed command on the block device, naming the range of
// blocks it covered. Err is the device's own error, so errors.As finds the
// transport's or SCSI layer's types through it.
type DeviceError struct {
	Device    string
	Op        Op
	LBA       int64 // first block of the command; -1 for sync
	Count     int64 // blocks in the command
	BlockSize int
	Err       error
}

func (e *DeviceError) Error() string {
	var b strings.Builder
	fmt.Fprintf(&b, "%s failed on %s", e.Op, e.Device)
	if e.LBA >= 0 {
		fmt.Fprintf(&b, " at LBA %d-%d (%s at byte offset %d)", e.LBA, e.LBA+e.Count-1,
			units.FormatSize(e.Count*int64(e.BlockSize)), e.LBA*int64(e.BlockSize))
	}
	fmt.Fprintf(&b, ": %v", e.Err)
	if e.Op == OpSync {
		b.WriteString("; the data may not have reached the card")
	}
	return b.String()
}

// Class is the cause's (a write-protected card stays a refusal, a
// cancellation an interruption), else Device.
func (e *DeviceError) Class() failure.Class { return failure.Within(failure.Device, e.Err) }

func (e *DeviceError) Unwrap() error { return e.Err }

// VerifyError says what was read back differs from the image. A byte
// comparison names the first differing byte; a hash comparison (HashOnly)
// only knows that something differs, a digest comparison (Transfer) in
// which write command's blocks; LocateMismatch finds the byte.
type VerifyError struct {
	Device    string
	HashOnly  bool
	Transfer  bool  // a digest: LBA to LBA+Blocks-1 hold the first difference
	LBA       int64 // block holding the first difference (Transfer: the range's first)
	Offset    int64 // byte offset of the first difference (Transfer: of the range)
	Want, Got byte  // the image's byte and the medium's byte there
	Size      int64 // bytes compared by a hash verify
	WantHash  [32]byte
	GotHash   [32]byte
	// Transfer: the range's blocks and their xxh3-128 as written and as
	// read back.
	Blocks                int64
	BlockSize             int
	WantDigest, GotDigest [16]byte
}

func (e *VerifyError) Error() string {
	if e.Transfer {
		return fmt.Sprintf("verify failed on %s: the write command at LBA %d-%d (%s at byte offset %d) reads back "+
			"different from what was written (xxh3-128 %s, written %s)", e.Device, e.LBA, e.LBA+e.Blocks-1,
			units.FormatSize(e.Blocks*int64(e.BlockSize)), e.Offset, hex.EncodeToString(e.GotDigest[:8]), hex.EncodeToString(e.WantDigest[:8]))
	}
	if e.HashOnly {
		return fmt.Sprintf("verify failed on %s: the SHA-256 of the %s read back is %s but the image's is %s",
			e.Device, units.FormatBytes(e.Size), hex.EncodeToString(e.GotHash[:8]), hex.EncodeToString(e.WantHash[:8]))
	}
	return fmt.Sprintf("verify failed on %s: first difference at LBA %d (byte offset %d): image has 0x%02x, "+
		"the card has 0x%02x", e.Device, e.LBA, e.Offset, e.Want, e.Got)
}

// Class is Verify.
func (e *VerifyError) Class() failure.Class { return failure.Verify }

// InconsistentError says the hash or digest of what was read back differed
// from the image's (Err, the *VerifyError of VerifyHash or VerifyDigests),
// but a second look found no difference: the reader returned different
// data for the same blocks, so neither read can be trusted. Reread: the
// second look was a read of the same range matching its digest; otherwise
// a byte-by-byte comparison with the image decoded again.
type InconsistentError struct {
	Err    error
	Reread bool
}

func (e *InconsistentError) Error() string {
	if e.Reread {
		return e.Err.Error() + " (a second read of those blocks matched what was written: the reader returned inconsistent data)"
	}
	return e.Err.Error() + " (a second, byte-by-byte comparison found no difference: the reader returned inconsistent data)"
}

func (e *InconsistentError) Unwrap() error { return e.Err }

// CancelledError reports how far an operation got before its context was
// cancelled. Err is the context's error (context.Canceled or
// context.DeadlineExceeded). A cancelled write left its first transfer
// zeroed.
type CancelledError struct {
	Device string
	Phase  Phase // PhaseWrite, PhaseVerify or PhaseRead
	Bytes  int64 // image bytes written (first transfer excluded) or verified
	LBA    int64 // first block not written or verified
	Err    error
}

func (e *CancelledError) Error() string {
	// Err is context.Canceled or DeadlineExceeded: "cancelled" says it.
	switch e.Phase {
	case PhaseVerify, PhaseRead:
		return fmt.Sprintf("%s of %s cancelled after %s (up to LBA %d)",
			e.Phase, e.Device, units.FormatBytes(e.Bytes), e.LBA)
	}
	if e.Bytes == 0 && e.LBA == 0 {
		return fmt.Sprintf("write to %s cancelled before anything was written", e.Device)
	}
	return fmt.Sprintf("write to %s cancelled after %s (up to LBA %d); the first transfer was left "+
		"zeroed so the card does not boot a partial image",
		e.Device, units.FormatBytes(e.Bytes), e.LBA)
}

// Class is Interrupted.
func (e *CancelledError) Class() failure.Class { return failure.Interrupted }

func (e *CancelledError) Unwrap() error { return e.Err }
