//go:build cgo && !nousb && (libusb || !(linux || darwin || windows))

package libusb

import (
	"context"
	"fmt"

	"github.com/google/gousb"

	"github.com/usbflash/usbflash/internal/lib/linuxdisk"
	"github.com/usbflash/usbflash/usbms/usbdev"
)

// ClearHalt clears ENDPOINT_HALT on the bulk-IN (in) or bulk-OUT endpoint
// and resets the host's data toggle for it, as USB 2.0 9.4.5 requires.
//
// Why libusb_clear_halt and not a CLEAR_FEATURE sent with Device.Control:
// after CLEAR_FEATURE(ENDPOINT_HALT) the device restarts the endpoint at
// DATA0, so the host must too, or the next packet is dropped as a duplicate.
// A control transfer from user space goes through usbfs as a plain URB:
// drivers/usb/core/devio.c do_proc_control / proc_do_submiturb submit it
// without looking at what it asks (only check_ctrlrecip checks permission),
// so the host's toggle is left as it was. The dedicated ioctl is different:
// devio.c proc_clearhalt (USBDEVFS_CLEAR_HALT) calls usb_clear_halt in
// drivers/usb/core/message.c, which sends the same CLEAR_FEATURE and then,
// on success, calls usb_reset_endpoint(dev, endp) -> usb_hcd_reset_endpoint,
// documented as "Resets any host-side endpoint state such as the toggle bit,
// sequence number or current window". (linux/usb.h lists usb_clear_halt
// among the "wrappers that also update important state inside usbcore";
// usbip's stub_rx.c turns a forwarded CLEAR_FEATURE(ENDPOINT_HALT) into
// usb_clear_halt for exactly this reason.) libusb's libusb_clear_halt is
// that ioctl on Linux (os/linux_usbfs.c op_clear_halt: ioctl(fd,
// IOCTL_USBFS_CLEAR_HALT, &endpoint)); on macOS it is ClearPipeStallBothEnds
// (os/darwin_usb.c darwin_clear_halt) and on Windows WinUsb_ResetPipe, both
// of which reset the host side too.
//
// gousb has no ClearHalt, so this calls libusb_clear_halt through cgo on the
// handle gousb holds (libusb_cgo.go; Open fails when it is unreachable). The
// kernel bounds the call by USB_CTRL_SET_TIMEOUT (5 s); ctx is checked
// before it starts.
func (d *Device) ClearHalt(ctx context.Context, in bool) error {
	d.mu.Lock()
	defer d.mu.Unlock()
	ep := d.info.BulkOut
	if in {
		ep = d.info.BulkIn
	}
	op := fmt.Sprintf("clearing the halt on endpoint 0x%02x", ep)
	if d.s == nil {
		return d.closedErr(op)
	}
	if err := ctx.Err(); err != nil {
		return d.stopped(op, err)
	}
	return mapError(ctx, op, d.info, d.s.h.clearHalt(ep))
}

// ResetPort resets the device (libusb_reset_device) and leaves this Device
// claimed and usable. A reset resets every endpoint's toggle on both sides.
//
// In the common case the device keeps its descriptors and libusb re-claims
// the interface itself on the same handle (os/linux_usbfs.c op_reset_device
// releases, resets, then detach-and-claims again, so usb-storage never gets
// the interface), and the kernel restores the configuration and alternate
// setting (usb_reset_and_verify_device). When the device re-enumerated
// instead (libusb reports NOT_FOUND or NO_DEVICE), the old handle is dead:
// the session is closed and the device is found again at the same port path
// with the same VID:PID and serial, waiting up to
// OpenOptions.ReenumerateTimeout, and claimed again, the in-use check
// included (the kernel may have bound usb-storage to the new device).
func (d *Device) ResetPort(ctx context.Context) error {
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.closed {
		return d.closedErr("resetting the port")
	}
	if err := ctx.Err(); err != nil {
		return d.stopped("resetting the port", err)
	}
	if d.s != nil {
		err := d.s.h.resetDevice()
		if err == nil {
			return nil
		}
		ge, ts, _ := libusbCode(err)
		gone := ge == gousb.ErrorNotFound || ge == gousb.ErrorNoDevice || ts == gousb.TransferNoDevice
		if !gone && d.s.claimed {
			// Still claimed on a live handle: report, stay usable.
			return mapError(ctx, "resetting the port", d.info, err)
		}
		// The handle is dead, or the interface is no longer claimed.
		// Do not hand the interface to usb-storage on the way out: it is
		// claimed again right below.
		d.s.reattach = false
		_ = d.s.close(d.info)
		d.s = nil
		if !gone {
			return mapError(ctx, "resetting the port", d.info, err)
		}
	}
	s, info, err := reopen(ctx, d.info, d.opts, d.view)
	if err != nil {
		return err
	}
	// The driver had the interface when we first opened it: give it back
	// on Close even though, this time, it was we who left it unbound.
	s.reattach = s.reattach || d.kernelHad
	d.s, d.info = s, info
	return nil
}

// reopen finds the device again at its port after it re-enumerated.
func reopen(ctx context.Context, info usbdev.Info, opts usbdev.OpenOptions, view linuxdisk.Sys) (*session, usbdev.Info, error) {
	var s *session
	cur := info
	err := usbdev.AwaitReenumeration(ctx, info, opts.ReenumerateTimeout, func() (err error) {
		s, cur, err = openSession(ctx, info, opts, view, true)
		return err
	})
	if err != nil {
		return nil, info, err
	}
	return s, cur, nil
}

// isTimeout tells whether err is libusb's timeout.
func isTimeout(err error) bool {
	ge, ts, ok := libusbCode(err)
	return ok && (ge == gousb.ErrorTimeout || ts == gousb.TransferTimedOut)
}
