package usbms

import (
	"context"
	"errors"
	"fmt"

	"github.com/usbflash/usbflash/scsi"
)

// senseLen is the REQUEST SENSE allocation: fixed-format sense without
// additional bytes, the length every device answers.
const senseLen = 18

// requestSense fetches the reason a command failed, as a *scsi.SenseError.
// A device with a pending UNIT ATTENTION may fail REQUEST SENSE itself once
// (QEMU does); the second one returns the condition.
func (t *Transport) requestSense(ctx context.Context, r request) error {
	cdb := scsi.RequestSense(senseLen)
	sr := request{lun: r.lun, cdb: cdb.Bytes(), dir: DataIn, data: t.sense[:], maxResets: r.maxResets, portReset: false}
	var lastErr error
	for range 2 {
		res, err := t.run(ctx, sr)
		if err != nil {
			return fmt.Errorf("command failed, and so did REQUEST SENSE: %w", errors.Join(errNoSenseData, err))
		}
		if res.status == statusFailed {
			lastErr = fmt.Errorf("command failed, and REQUEST SENSE reported failure twice: %w", errNoSenseData)
			continue
		}
		se, err := scsi.ParseSense(t.sense[:res.n])
		if err != nil {
			return fmt.Errorf("command failed with unreadable sense data: %w", errors.Join(errNoSenseData, err))
		}
		return se
	}
	return lastErr
}

// errNoSenseData marks a failed command whose reason could not be learned.
var errNoSenseData = errors.New("no sense data")

// opName names a command by its CDB's opcode, for messages.
func opName(cdb []byte) string {
	if len(cdb) == 0 {
		return "empty command"
	}
	return scsi.OpName(cdb[0])
}
