//go:build linux

package usbfs

import (
	"context"

	"golang.org/x/sys/unix"

	"github.com/usbflash/usbflash/usbms/usbdev"
)

// Access says whether this process may open the device node of info for
// reading and writing, as Open does, without opening it: a reader the
// kernel holds is left alone, and a reader this user may not open is
// known before anything is done. access(2) weighs the owner, the group,
// the supplementary groups and the ACL a udev uaccess rule adds. nil, or
// a *usbdev.Error of kind ErrPermission (ErrNotFound: the node is gone).
func Access(info usbdev.Info) error { return access(info, unix.Access) }

// access is Access with the system call given (tests).
func access(info usbdev.Info, check func(path string, mode uint32) error) error {
	if err := check(info.DevNode(), unix.R_OK|unix.W_OK); err != nil {
		return mapError(context.Background(), "opening "+info.DevNode(), info, err)
	}
	return nil
}
