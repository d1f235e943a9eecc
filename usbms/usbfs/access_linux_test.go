//go:build linux

package usbfs

import (
	"errors"
	"testing"

	"golang.org/x/sys/unix"

	"github.com/usbflash/usbflash/usbms/usbdev"
)

func TestAccess(t *testing.T) {
	info := usbdev.Info{Bus: 1, Address: 7, VID: 0x46f4, PID: 0x0001}
	for _, tc := range []struct {
		errno error
		kind  error // nil: access
	}{
		{nil, nil},
		{unix.EACCES, usbdev.ErrPermission},
		{unix.EPERM, usbdev.ErrPermission},
		{unix.ENOENT, usbdev.ErrNotFound},
	} {
		var asked string
		var mode uint32
		err := access(info, func(path string, m uint32) error { asked, mode = path, m; return tc.errno })
		if asked != "/dev/bus/usb/001/007" || mode != unix.R_OK|unix.W_OK {
			t.Errorf("asked %s for mode %o, want /dev/bus/usb/001/007 for reading and writing", asked, mode)
		}
		if tc.kind == nil {
			if err != nil {
				t.Errorf("%v: %v, want access", tc.errno, err)
			}
			continue
		}
		var e *usbdev.Error
		if !errors.Is(err, tc.kind) || !errors.As(err, &e) || e.VID != 0x46f4 || !errors.Is(err, tc.errno) {
			t.Errorf("%v: %v, want a *usbdev.Error of kind %v for 46f4 wrapping the errno", tc.errno, err, tc.kind)
		}
	}
}
