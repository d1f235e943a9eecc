//go:build !windows

package diskdev

import (
	"errors"
	"io/fs"
	"syscall"

	"github.com/usbflash/usbflash/pipeline/blockdev"
)

// classify marks what the system said of a failed transfer: EIO is the
// medium failing the blocks (a bad block), a write refused as read-only
// is write protection.
func classify(err error, write bool) error {
	switch {
	case errors.Is(err, syscall.EIO):
		return blockdev.MarkBadBlock(err)
	case write && (errors.Is(err, syscall.EROFS) || errors.Is(err, fs.ErrPermission)):
		return blockdev.MarkWriteProtected(err)
	}
	return err
}
