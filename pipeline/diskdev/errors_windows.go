package diskdev

import (
	"errors"

	"golang.org/x/sys/windows"

	"github.com/usbflash/usbflash/pipeline/blockdev"
)

// classify marks what Windows said of a failed transfer: a data error
// (ERROR_CRC) or a sector it cannot find is the medium failing the
// blocks, ERROR_WRITE_PROTECT the card's lock switch.
func classify(err error, write bool) error {
	switch {
	case errors.Is(err, windows.ERROR_CRC), errors.Is(err, windows.ERROR_SECTOR_NOT_FOUND):
		return blockdev.MarkBadBlock(err)
	case write && errors.Is(err, windows.ERROR_WRITE_PROTECT):
		return blockdev.MarkWriteProtected(err)
	}
	return err
}
