package usbms

import (
	"errors"

	"github.com/usbflash/usbflash/scsi"
)

// errNoSenseData marks a failed command whose reason could not be learned.
var errNoSenseData = errors.New("no sense data")

// opName names a command by its CDB's opcode, for messages.
func opName(cdb []byte) string {
	if len(cdb) == 0 {
		return "empty command"
	}
	return scsi.OpName(cdb[0])
}
