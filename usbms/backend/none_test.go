//go:build nousb

package backend

import (
	"context"
	"errors"
	"testing"

	"github.com/usbflash/usbflash/usbms/usbdev"
)

// TestNone: -tags nousb has no backend, whatever the system: it lists and
// opens nothing and says why.
func TestNone(t *testing.T) {
	if Name != "none" {
		t.Errorf("Name %q, want none", Name)
	}
	if _, err := List(context.Background()); !errors.Is(err, usbdev.ErrNoUSBSupport) {
		t.Errorf("List: %v, want ErrNoUSBSupport", err)
	}
	if d, err := Open(context.Background(), usbdev.Info{}, usbdev.OpenOptions{}); d != nil || !errors.Is(err, usbdev.ErrNoUSBSupport) {
		t.Errorf("Open: %v, %v; want no device and ErrNoUSBSupport", d, err)
	}
}
