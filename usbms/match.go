package usbms

import (
	"errors"

	"github.com/usbflash/usbflash/scsi"
)

// The predicates below tell what a failed command says about the medium,
// so that callers need not decode SCSI sense data themselves.

// IsNoMedium reports whether err says the slot holds no medium.
func IsNoMedium(err error) bool { return scsi.IsNoMedium(err) }

// IsMediumError reports whether err is a read or write failure of the
// medium itself (sense key MEDIUM ERROR).
func IsMediumError(err error) bool { return scsi.IsMediumError(err) }

// IsMediumChanged reports whether err says the medium changed or left:
// ErrMediumChanged after blocks were written, or a UNIT ATTENTION saying so
// at any time.
func IsMediumChanged(err error) bool {
	return errors.Is(err, ErrMediumChanged) || scsi.IsMediumSwap(err)
}

// HasSense reports whether err carries sense data: the device answered
// the command with a failure it described.
func HasSense(err error) bool {
	_, ok := scsi.AsSense(err)
	return ok
}
