package session

import (
	"context"
	"fmt"

	"github.com/usbflash/usbflash/internal/drive"
	"github.com/usbflash/usbflash/internal/failure"
	"github.com/usbflash/usbflash/internal/lib/units"
	"github.com/usbflash/usbflash/pipeline"
)

// A card written with an image that then reads back different, or that a
// repair could not make match, holds bytes known to be wrong: it must not
// boot them. Its first transfer (partition table, boot code) is zeroed, as
// a write leaves it until the image is whole (pipeline.ZeroFirst), and the
// card's error says so. A verify that only compares (nothing written) does
// not: a card that holds another image is no card gone wrong.

// unboot zeroes the first transfer of the card d, which did not match
// its image (err, of class Verify), and returns err saying so. transfer is
// the size of the write's first transfer (0: the engine's default).
func (s *session) unboot(ctx context.Context, d *drive.Device, transfer int, err error) error {
	n, zerr := pipeline.ZeroFirst(ctx, d.Dev, d.Name, transfer)
	return &FirstZeroedError{Card: d.Name, Bytes: n, ZeroErr: zerr, Err: err}
}

// FirstZeroedError is a card that does not hold its image (Err: the
// read-back's difference, a repair's failure) and whose first transfer was
// zeroed so that it boots nothing, or (ZeroErr) could not be.
type FirstZeroedError struct {
	Card    string
	Bytes   int64 // zeroed from its start
	ZeroErr error // the zeroing's own failure; nil: done
	Err     error
}

func (e *FirstZeroedError) Error() string {
	if e.ZeroErr != nil {
		return fmt.Sprintf("%v; zeroing %s's first transfer, so that it boots nothing, failed after %s: %v",
			e.Err, e.Card, units.FormatBytes(e.Bytes), e.ZeroErr)
	}
	return fmt.Sprintf("%v; %s's first %s (its partition table and boot code) were zeroed: it boots nothing", e.Err, e.Card, units.FormatSize(e.Bytes))
}

func (e *FirstZeroedError) Unwrap() error { return e.Err }

// Class is the difference's: Verify.
func (e *FirstZeroedError) Class() failure.Class { return failure.Of(e.Err) }

// Zeroed says the card boots nothing now.
func (e *FirstZeroedError) Zeroed() bool { return e.ZeroErr == nil }
