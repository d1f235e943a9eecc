package scsi

import (
	"fmt"

	"github.com/usbflash/usbflash/internal/failure"
)

// ErrShortResponse is wrapped by decoders given fewer bytes than the
// response's fixed part.
var ErrShortResponse = failure.New(failure.Device, "response too short")

// ErrMalformed is wrapped by decoders given bytes that are not the response
// they decode (wrong page code, unknown format).
var ErrMalformed = failure.New(failure.Device, "malformed response")

func short(what string, got, need int) error {
	return fmt.Errorf("scsi: %s is %d bytes, need at least %d: %w", what, got, need, ErrShortResponse)
}
