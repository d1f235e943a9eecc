package sim

import (
	"context"
	"fmt"
	"time"

	"github.com/usbflash/usbflash/usbms"
)

// Class-specific requests of BOT (BOT 3.1, 3.2).
const (
	reqMassStorageReset = 0xFF
	reqGetMaxLUN        = 0xFE
)

// BulkOut receives a CBW or data-out bytes on bulk-OUT.
func (d *Device) BulkOut(ctx context.Context, p []byte) (int, error) {
	d.mu.Lock()
	defer d.mu.Unlock()
	if err := d.usable(ctx, "bulk-out"); err != nil {
		return 0, err
	}
	if d.uas.on {
		return 0, stallError(false)
	}
	if d.bot.haltOut {
		return 0, stallError(false)
	}
	if d.bot.hung {
		return 0, d.block(ctx, "bulk-out")
	}
	switch d.bot.phase {
	case phaseCBW:
		c, ok := parseCBW(p)
		if !ok {
			// The packet is taken (it was ACKed on the wire); the device
			// then stalls both endpoints.
			d.wedge()
			return len(p), nil
		}
		if d.losesCBW() {
			// Still resetting: the packet is ACKed and forgotten.
			d.stats.LostCBWs++
			d.bot.hung = true
			return len(p), nil
		}
		d.begin(c)
		return len(p), nil
	case phaseDataOut:
		return d.dataOut(ctx, p)
	}
	return 0, d.block(ctx, "bulk-out (the device has a CSW to send, not data to take)")
}

// BulkIn sends data-in bytes or the CSW on bulk-IN.
func (d *Device) BulkIn(ctx context.Context, p []byte) (int, error) {
	d.mu.Lock()
	defer d.mu.Unlock()
	if err := d.usable(ctx, "bulk-in"); err != nil {
		return 0, err
	}
	if d.uas.on {
		return 0, stallError(true)
	}
	if d.bot.haltIn {
		return 0, stallError(true)
	}
	if d.bot.hung {
		return 0, d.block(ctx, "bulk-in")
	}
	switch d.bot.phase {
	case phaseDataIn:
		return d.dataIn(ctx, p)
	case phaseCSW:
		return d.sendCSW(ctx, p)
	}
	return 0, d.block(ctx, "bulk-in (the device waits for a CBW)")
}

// ClassRequest answers Bulk-Only Mass Storage Reset and Get Max LUN; any
// other request gets a protocol STALL on the control endpoint, which does
// not halt the bulk endpoints.
func (d *Device) ClassRequest(ctx context.Context, in bool, request uint8, value uint16, data []byte) (int, error) {
	d.mu.Lock()
	defer d.mu.Unlock()
	if err := d.usable(ctx, "class request"); err != nil {
		return 0, err
	}
	switch {
	case request == reqMassStorageReset && !in && value == 0 && len(data) == 0:
		// BOT 3.1: back to waiting for a CBW. Halts and data toggles are
		// preserved: the host clears them next.
		d.bot = botState{phase: phaseCBW, haltIn: d.bot.haltIn, haltOut: d.bot.haltOut, stallAt: -1}
		d.stats.BOTResets++
		d.startSettling()
		return 0, nil
	case request == reqGetMaxLUN && in && value == 0 && len(data) >= 1 && d.cfg.Misbehaviour.MaxLUN == MaxLUNHang:
		return 0, d.block(ctx, "Get Max LUN")
	case request == reqGetMaxLUN && in && value == 0 && len(data) >= 1 && d.cfg.Misbehaviour.MaxLUN == MaxLUNError:
		return 0, fmt.Errorf("sim: Get Max LUN: control transfer failed (not a stall)")
	case request == reqGetMaxLUN && in && value == 0 && len(data) >= 1 && d.cfg.Misbehaviour.MaxLUN == MaxLUNReport:
		data[0] = byte(d.cfg.Misbehaviour.MaxLUNValue)
		return 1, nil
	case request == reqGetMaxLUN && in && value == 0 && len(data) >= 1 && !d.cfg.StallGetMaxLUN:
		data[0] = byte(len(d.luns) - 1)
		return 1, nil
	}
	return 0, fmt.Errorf("sim: class request %#02x (in=%v, value %d, %d bytes): control %w",
		request, in, value, len(data), usbms.ErrStall)
}

// ClearHalt clears ENDPOINT_HALT on one bulk endpoint. After an invalid
// CBW the endpoints stay halted until a Mass Storage Reset (BOT 6.6.1),
// after which the host clears them again.
func (d *Device) ClearHalt(ctx context.Context, in bool) error {
	d.mu.Lock()
	defer d.mu.Unlock()
	if err := d.usable(ctx, "clear halt"); err != nil {
		return err
	}
	// Resetting the toggle is implicit: see botState. A wedged device
	// halts the endpoint again at once, so the halt stays until reset
	// recovery has cleared the wedge and the host clears it once more.
	if in {
		d.bot.haltIn = d.bot.wedged
		d.stats.ClearHaltsIn++
	} else {
		d.bot.haltOut = d.bot.wedged
		d.stats.ClearHaltsOut++
	}
	return nil
}

// ResetPort re-enumerates the device: transport state, halts, faults and
// ejections are cleared, and every LUN reports 6/29/00 (power on or reset
// occurred) on its next command, as real devices do. A disconnected device
// stays gone.
func (d *Device) ResetPort(ctx context.Context) error {
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.backOnReset && d.gone && !d.isShut {
		// It re-enumerates: the port reset finds it again.
		d.gone, d.backOnReset = false, false
	}
	if err := d.usable(ctx, "reset port"); err != nil {
		return err
	}
	d.bot = botState{phase: phaseCBW, stallAt: -1}
	d.resetUAS()
	d.faults = nil
	d.disconnectAt = -1
	d.busyUntil = time.Time{}
	d.settleUntil = 0
	d.read10Failed = 0
	for _, l := range d.luns {
		ua := sensePowerOnReset()
		l.sense, l.ejected, l.prevent, l.unitAttention = sense{}, false, false, &ua
	}
	d.stats.PortResets++
	return nil
}
