package sim

import (
	"context"
	"time"

	"github.com/usbflash/usbflash/usbms"
)

var _ usbms.Sleeper = (*Device)(nil)

// charge adds t to the modelled clock. Called with d.mu held.
func (d *Device) charge(t time.Duration) {
	if t > 0 {
		d.stats.ModelTime += t
	}
}

// Sleep implements usbms.Sleeper: a pause the host makes between
// commands (while a unit becomes ready, or a reader settles after a
// reset) passes on the device's clock. On the virtual clock it only
// advances the clock; otherwise it sleeps too.
func (d *Device) Sleep(ctx context.Context, t time.Duration) error {
	d.mu.Lock()
	d.charge(t)
	virtual := d.cfg.VirtualClock
	d.mu.Unlock()
	if err := ctx.Err(); err != nil || virtual || t <= 0 {
		return err
	}
	timer := time.NewTimer(t)
	defer timer.Stop()
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-timer.C:
		return nil
	case <-d.closed:
		return nil
	}
}
