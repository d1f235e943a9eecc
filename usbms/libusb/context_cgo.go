//go:build cgo && !nousb && (libusb || !(linux || darwin || windows))

package libusb

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"runtime"

	"github.com/google/gousb"

	"github.com/usbflash/usbflash/usbms/usbdev"
)

// usbfsRoot is where Linux puts the device nodes libusb opens.
const usbfsRoot = "/dev/bus/usb"

// checkUSBFS says plainly when this Linux machine exposes no USB devices to
// us at all (a container or VM without USB passthrough). libusb itself may
// start without the directory and just find nothing, which would make
// `usbflash list` look like "no readers plugged in".
func checkUSBFS(goos, root string) error {
	if goos != "linux" {
		return nil
	}
	_, err := os.Stat(root)
	switch {
	case err == nil:
		return nil
	case errors.Is(err, fs.ErrNotExist):
		return fmt.Errorf("%w: %s does not exist", usbdev.ErrNoUSBAccess, root)
	default:
		return fmt.Errorf("%w: cannot read %s: %v", usbdev.ErrNoUSBAccess, root, err)
	}
}

// newContext starts libusb. gousb.NewContext panics when libusb_init fails
// (usb.go newContextWithImpl); the panic is turned into ErrNoUSBAccess so
// the CLI can print one sentence instead of a stack trace.
func newContext() (uc *gousb.Context, err error) {
	if err := checkUSBFS(runtime.GOOS, usbfsRoot); err != nil {
		return nil, err
	}
	defer func() {
		if r := recover(); r != nil {
			uc = nil
			err = fmt.Errorf("%w: libusb could not start (%v)", usbdev.ErrNoUSBAccess, r)
		}
	}()
	return gousb.NewContext(), nil
}
