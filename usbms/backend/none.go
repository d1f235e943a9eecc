//go:build nousb

package backend

import (
	"context"

	"github.com/usbflash/usbflash/usbms/usbdev"
)

// Name names this build's backend: none.
const Name = "none"

// List returns usbdev.ErrNoUSBSupport: this build has no USB.
func List(context.Context) ([]usbdev.Info, error) { return nil, usbdev.ErrNoUSBSupport }

// Access is nil: there is nothing to open.
func Access(usbdev.Info) error { return nil }

// Open returns usbdev.ErrNoUSBSupport: this build has no USB.
func Open(context.Context, usbdev.Info, usbdev.OpenOptions) (Device, error) {
	return nil, usbdev.ErrNoUSBSupport
}
