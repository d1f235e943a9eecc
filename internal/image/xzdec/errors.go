package xzdec

import (
	"errors"
	"fmt"
)

// Sentinel causes, wrapped inside *Error so callers can use errors.Is to tell
// a damaged file from an unsupported one without parsing messages.
var (
	// ErrFormat reports that the input is not a valid .xz file.
	ErrFormat = errors.New("corrupt or invalid xz data")
	// ErrChecksum reports a CRC32/CRC64/SHA-256 mismatch.
	ErrChecksum = errors.New("checksum mismatch")
	// ErrUnsupported reports a valid but unsupported feature (filter, check).
	ErrUnsupported = errors.New("unsupported xz feature")
	// ErrTruncated reports that the input ended before the xz data did.
	ErrTruncated = errors.New("truncated xz data")
)

// Error is the error returned for any problem in the compressed data. Offset
// is the byte offset in the compressed input where the problem was detected,
// so a user can tell a damaged download (offset near the end) from garbage.
type Error struct {
	Offset int64
	Err    error
}

func (e *Error) Error() string {
	return fmt.Sprintf("xz: at compressed offset %d: %v", e.Offset, e.Err)
}

func (e *Error) Unwrap() error { return e.Err }

// errAt builds an *Error with a formatted message wrapping kind.
func errAt(off int64, kind error, format string, args ...any) error {
	return &Error{Offset: off, Err: fmt.Errorf("%w: "+format, append([]any{kind}, args...)...)}
}

var errClosed = errors.New("xz: read from closed reader")
