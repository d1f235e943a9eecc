//go:build nousb || !cgo || (!libusb && (linux || darwin || windows))

package libusb

import (
	"context"
	"errors"
	"testing"

	"github.com/usbflash/usbflash/usbms/usbdev"
)

func TestStubSaysHowToGetUSB(t *testing.T) {
	ctx := context.Background()
	if _, err := List(ctx); !errors.Is(err, usbdev.ErrNoUSBSupport) {
		t.Errorf("List = %v", err)
	}
	if _, err := Open(ctx, usbdev.Info{}, usbdev.OpenOptions{}); !errors.Is(err, usbdev.ErrNoUSBSupport) {
		t.Errorf("Open = %v", err)
	}
	d := &Device{}
	errs := map[string]error{}
	_, errs["BulkOut"] = d.BulkOut(ctx, nil)
	_, errs["BulkIn"] = d.BulkIn(ctx, nil)
	_, errs["ClassRequest"] = d.ClassRequest(ctx, true, 0xFE, 0, nil)
	errs["ClearHalt"] = d.ClearHalt(ctx, true)
	errs["ResetPort"] = d.ResetPort(ctx)
	for name, err := range errs {
		if !errors.Is(err, usbdev.ErrNoUSBSupport) {
			t.Errorf("%s = %v, want usbdev.ErrNoUSBSupport", name, err)
		}
	}
	if err := d.Close(); err != nil {
		t.Errorf("Close = %v", err)
	}
}
