// How long the simulated device takes, and whether it answers at all:
// availability (closed, unplugged, never answering) and the wire model.

package sim

import (
	"context"
	"fmt"
	"runtime"
	"time"

	"github.com/usbflash/usbflash/usbms"
)

// usable fails a call on a device that is closed, unplugged, or whose ctx
// is already done. Called with d.mu held.
func (d *Device) usable(ctx context.Context, what string) error {
	if d.isShut {
		return fmt.Errorf("sim: %s: device closed: %w", what, usbms.ErrNoDevice)
	}
	if d.disconnectAt >= 0 && d.stats.BytesIn+d.stats.BytesOut >= d.disconnectAt {
		d.gone = true
	}
	if d.gone {
		return fmt.Errorf("sim: %s: %w", what, usbms.ErrNoDevice)
	}
	if err := ctx.Err(); err != nil {
		return fmt.Errorf("sim: %s: %w", what, err)
	}
	return nil
}

// block models a transfer the device never answers (a NAK forever): it
// waits for ctx or Close. Called with d.mu held; releases it while waiting.
func (d *Device) block(ctx context.Context, what string) error {
	if deadline, ok := ctx.Deadline(); ok && d.cfg.VirtualClock && ctx.Err() == nil {
		// The host would wait until its deadline: charge that wait to
		// the modelled clock and end the transfer as the deadline would.
		d.charge(time.Until(deadline))
		return fmt.Errorf("sim: %s: no answer from the device: %w", what, context.DeadlineExceeded)
	}
	start := time.Now()
	d.mu.Unlock()
	defer func() {
		d.mu.Lock()
		d.charge(time.Since(start))
	}()
	select {
	case <-ctx.Done():
		return fmt.Errorf("sim: %s: no answer from the device: %w", what, ctx.Err())
	case <-d.closed:
		return fmt.Errorf("sim: %s: device closed: %w", what, usbms.ErrNoDevice)
	}
}

// pace applies the speed model before n data bytes move: the wire is busy
// until busyUntil (command latency, earlier transfers), and n bytes take
// n/Speed after that. One deadline per transfer, not per packet, so sleep
// overhead stays negligible for large transfers. Idle time is not credited:
// a transfer never starts before now. Called with d.mu held; releases it
// while sleeping so Stats and Inject are not held up.
func (d *Device) pace(ctx context.Context, n int, what string) error {
	speed := d.wireSpeed(d.bot.phase == phaseDataOut)
	if speed > 0 && n > 0 {
		d.charge(time.Duration(float64(n) / speed * float64(time.Second)))
	}
	if d.cfg.VirtualClock {
		return d.usable(ctx, what)
	}
	if speed == 0 && d.busyUntil.IsZero() {
		return nil
	}
	now := time.Now()
	deadline := now
	if d.busyUntil.After(now) {
		deadline = d.busyUntil
	}
	if speed > 0 && n > 0 {
		deadline = deadline.Add(time.Duration(float64(n) / speed * float64(time.Second)))
	}
	if !deadline.After(now) {
		d.busyUntil = time.Time{}
		return nil
	}
	d.mu.Unlock()
	err := sleepUntil(ctx, d.closed, deadline)
	d.mu.Lock()
	if err != nil {
		return fmt.Errorf("sim: %s: %w", what, err)
	}
	d.busyUntil = deadline
	return d.usable(ctx, what)
}

// addLatency charges one command's latency to the wire.
func (d *Device) addLatency() { d.addBusy(d.cfg.Latency) }

// timerSlack is how late a sleep may wake: on common Linux hosts (VMs in
// particular) a sleep shorter than a millisecond takes about a millisecond.
// The speed model must not add that to every command, or a 4 KiB READ at
// 40 MB/s would cost ten times its wire time, so the last stretch of a wait
// is spent polling the clock instead.
const timerSlack = 1500 * time.Microsecond

// sleepUntil waits for t, ctx or closed, whichever comes first.
func sleepUntil(ctx context.Context, closed <-chan struct{}, t time.Time) error {
	if d := time.Until(t) - timerSlack; d > 0 {
		timer := time.NewTimer(d)
		defer timer.Stop()
		select {
		case <-timer.C:
		case <-ctx.Done():
			return ctx.Err()
		case <-closed:
			return fmt.Errorf("device closed: %w", usbms.ErrNoDevice)
		}
	}
	for time.Now().Before(t) {
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-closed:
			return fmt.Errorf("device closed: %w", usbms.ErrNoDevice)
		default:
			runtime.Gosched()
		}
	}
	return nil
}
