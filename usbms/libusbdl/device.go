//go:build linux || darwin || windows

package libusbdl

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"
	"unsafe"

	"github.com/usbflash/usbflash/internal/lib/aligned"
	"github.com/usbflash/usbflash/usbms"
	"github.com/usbflash/usbflash/usbms/usbdev"
)

// Device is one claimed mass-storage interface. It implements
// usbms.Endpoint, usbms.UASEndpoint, usbms.BufferAllocator and
// usbms.DeadlineSetter.
//
// Bulk transfers share a read lock (BOT never overlaps them); the calls
// that change the device's state take the write lock. Cancel the
// transfers' context before calling Close from another goroutine.
type Device struct {
	lib  *Library
	opts usbdev.OpenOptions
	view usbdev.DiskView

	mu       sync.RWMutex
	info     usbdev.Info
	s        *session // nil when closed, or after a reset whose re-open failed
	closed   bool
	deadline time.Time
	// kernelHad: a kernel driver had the interface at Open; Close hands
	// it back even after resets re-created the session.
	kernelHad bool
	// regions is the memory AllocBuffers handed out and not yet freed.
	regions []*region
}

var (
	_ usbms.Endpoint        = (*Device)(nil)
	_ usbms.UASEndpoint     = (*Device)(nil)
	_ usbms.BufferAllocator = (*Device)(nil)
	_ usbms.DeadlineSetter  = (*Device)(nil)
)

// session is one open of the device: a libusb context with its event
// thread, a handle, the claimed interface and the transfers allocated for
// it. A reset that re-enumerates the device throws it away and builds it
// again.
type session struct {
	lib      *Library
	loop     *eventLoop
	h        uintptr
	iface    int
	claimed  bool
	reattach bool
	bulk     *bulkPath
	uas      *uasSide
	ctrl     *xfer
	ctrlBuf  []byte // setup packet + data, allocated once
	ctrlWait *waiter
}

// Open claims the mass-storage interface info describes (from List). It
// refuses, unless opts.Force, when a disk the system made of that
// interface is mounted or held (usbdev.ErrInUse); then it detaches the
// system's driver from that interface (on macOS from the whole device,
// which needs root) and claims it. Close gives it back.
func Open(ctx context.Context, info usbdev.Info, opts usbdev.OpenOptions) (*Device, error) {
	if !info.Supported {
		reason := info.Reason
		if reason == "" {
			reason = "not a SCSI Bulk-Only interface"
		}
		return nil, usbdev.NewError("opening", info, nil, errors.New(reason))
	}
	l, err := System()
	if err != nil {
		return nil, err
	}
	return l.Open(ctx, info, opts)
}

// Open is the package's Open with this library.
func (l *Library) Open(ctx context.Context, info usbdev.Info, opts usbdev.OpenOptions) (*Device, error) {
	d := &Device{lib: l, opts: opts.WithDefaults(), view: diskView(), info: info}
	s, cur, err := d.openSession(ctx, info, false)
	if errors.Is(err, usbdev.ErrNotFound) {
		// Re-plugged since it was listed: same port, new address.
		s, cur, err = d.openSession(ctx, info, true)
	}
	if err != nil {
		return nil, err
	}
	d.s, d.info, d.kernelHad = s, cur, s.reattach
	return d, nil
}

// Info describes the device as it is now (its address changes when a
// reset made it re-enumerate).
func (d *Device) Info() usbdev.Info {
	d.mu.RLock()
	defer d.mu.RUnlock()
	return d.info
}

// Library is the libusb the device is driven through.
func (d *Device) Library() *Library { return d.lib }

// SetDeadline implements usbms.DeadlineSetter.
func (d *Device) SetDeadline(t time.Time) {
	d.mu.Lock()
	defer d.mu.Unlock()
	d.deadline = t
}

// openSession finds the device (at info's address, or byPort at its port
// whatever its address), checks its disks are not in use, opens it on a
// context of its own and claims the interface.
func (d *Device) openSession(ctx context.Context, info usbdev.Info, byPort bool) (*session, usbdev.Info, error) {
	if err := ctx.Err(); err != nil {
		return nil, info, usbdev.NewError("opening", info, err, nil)
	}
	loop, err := startLoop(d.lib)
	if err != nil {
		return nil, info, usbdev.NewError("starting libusb", info, usbdev.ErrNoUSBAccess, err)
	}
	s := &session{lib: d.lib, loop: loop, iface: info.Interface}
	cur, err := d.lib.openDevice(loop.ctx, info, byPort, &s.h)
	if err != nil {
		s.close(cur)
		return nil, cur, err
	}
	if err := usbdev.CheckKernelDisks(d.view, cur, d.opts); err != nil {
		s.close(cur)
		return nil, cur, err
	}
	if err := s.claim(ctx, cur, d.opts); err != nil {
		s.close(cur)
		return nil, cur, err
	}
	return s, cur, nil
}

// openDevice finds the device info names on context c, checks it is the
// one listed (VID:PID, serial, the interface and its endpoints) and opens
// it into *h. It returns info with the device's current address.
func (l *Library) openDevice(c uintptr, info usbdev.Info, byPort bool, h *uintptr) (usbdev.Info, error) {
	devs, free, err := l.deviceList(c)
	if err != nil {
		return info, usbdev.NewError("looking for the device", info, usbdev.ErrListFailed, err)
	}
	defer free()
	for _, dev := range devs {
		base, alts, err := l.describe(dev)
		if err != nil || base.PortPath != info.PortPath || base.VID != info.VID || base.PID != info.PID ||
			(!byPort && base.Address != info.Address) {
			continue
		}
		info.Bus, info.Address = base.Bus, base.Address
		if !sameInterface(usbdev.InterfaceInfos(base, alts), info) {
			return info, usbdev.NewError("checking the device's descriptors", info, usbdev.ErrDescriptorsChanged,
				fmt.Errorf("no interface %d alt %d with bulk endpoints 0x%02x and 0x%02x in configuration %d",
					info.Interface, info.AltSetting, info.BulkIn, info.BulkOut, info.Config))
		}
		if err := rc(call(l.fn.open, dev, uintptr(unsafe.Pointer(h)))); err != nil {
			*h = 0
			return info, openError(info, err)
		}
		if info.Serial != "" {
			if serial := l.serialOf(*h, dev, info); serial != info.Serial {
				return info, usbdev.NewError("looking for the device", info, usbdev.ErrDeviceChanged,
					fmt.Errorf("the device at port %s has serial %q", info.PortPath, serial))
			}
		}
		return info, nil
	}
	return info, usbdev.NewError("looking for the device", info, usbdev.ErrNotFound, nil)
}

// sameInterface tells whether infos hold info's interface as it was
// listed.
func sameInterface(infos []usbdev.Info, info usbdev.Info) bool {
	for _, x := range infos {
		if x.Config == info.Config && x.Interface == info.Interface && x.AltSetting == info.AltSetting &&
			x.BulkIn == info.BulkIn && x.BulkOut == info.BulkOut {
			return true
		}
	}
	return false
}

// serialOf reads the serial of the open device (from sysfs on Linux).
func (l *Library) serialOf(h, dev uintptr, info usbdev.Info) string {
	if s, ok := sysfsSerial(info.PortPath); ok {
		return s
	}
	var dd deviceDescriptor
	if rc(call(l.fn.getDeviceDescriptor, dev, uintptr(unsafe.Pointer(&dd)))) != nil {
		return ""
	}
	s, _ := l.stringDescriptor(h, dd.iSerialNumber)
	return s
}

// claim takes the interface from whatever driver has it (the system's
// checks first: platformClaimCheck), selects the configuration and the
// alternate setting (UAS's with opts.UAS), and allocates the transfers.
func (s *session) claim(ctx context.Context, info usbdev.Info, opts usbdev.OpenOptions) error {
	l := s.lib
	op := "claiming the mass-storage interface"
	active, err := s.kernelDriverActive(info.Interface)
	if err != nil {
		return mapError(ctx, op, info, err)
	}
	if err := platformClaimCheck(l, info, active); err != nil {
		return err
	}
	s.reattach = active
	if err := rc(call(l.fn.setAutoDetachKernelDriver, s.h, 1)); err != nil && err != ErrNotSupported {
		return mapError(ctx, op, info, err)
	}
	var cur int32
	if err := rc(call(l.fn.getConfiguration, s.h, uintptr(unsafe.Pointer(&cur)))); err != nil {
		return mapError(ctx, op, info, err)
	}
	if int(cur) != info.Config {
		if err := rc(call(l.fn.setConfiguration, s.h, uintptr(info.Config))); err != nil {
			return mapError(ctx, "selecting the configuration", info, err)
		}
	}
	if err := rc(call(l.fn.claimInterface, s.h, uintptr(info.Interface))); err != nil {
		return mapError(ctx, op, info, err)
	}
	s.claimed = true
	if s.ctrl, err = s.loop.newXfer(); err != nil {
		return mapError(ctx, op, info, err)
	}
	s.ctrlBuf = aligned.Bytes(controlSetupLen + smallLen)
	s.ctrlWait = newWaiter()
	if opts.UAS || info.Protocol == usbdev.ProtocolUAS {
		s.uas, err = s.setupUAS(info)
		if err != nil {
			return mapError(ctx, "selecting the UAS alternate setting", info, err)
		}
		return nil
	}
	if info.AltSetting != 0 {
		if err := rc(call(l.fn.setInterfaceAltSetting, s.h, uintptr(info.Interface), uintptr(info.AltSetting))); err != nil {
			return mapError(ctx, "selecting the alternate setting", info, err)
		}
	}
	s.bulk, err = newBulkPath(s, info, opts)
	if err != nil {
		return mapError(ctx, op, info, err)
	}
	return nil
}

// kernelDriverActive tells whether a driver of the system has the
// interface (libusb_kernel_driver_active: Linux; macOS with libusb 1.0.25
// or later). Not supported (Windows, older macOS libusb) is no.
func (s *session) kernelDriverActive(iface int) (bool, error) {
	r := int32(call(s.lib.fn.kernelDriverActive, s.h, uintptr(iface)))
	switch {
	case r == int32(ErrNotSupported):
		return false, nil
	case r < 0:
		return false, Code(r)
	}
	return r == 1, nil
}

// release gives the interface up and, when a system driver had it, hands
// it back, reporting a failure to (libusb's auto-attach would not).
func (s *session) release(info usbdev.Info) error {
	if s.bulk != nil {
		s.bulk.close()
		s.bulk = nil
	}
	if !s.claimed {
		return nil
	}
	s.freeStreams()
	l := s.lib
	call(l.fn.setAutoDetachKernelDriver, s.h, 0)
	call(l.fn.releaseInterface, s.h, uintptr(s.iface))
	s.claimed = false
	if !s.reattach {
		return nil
	}
	switch err := rc(call(l.fn.attachKernelDriver, s.h, uintptr(s.iface))); err {
	case nil, ErrNotFound, ErrBusy, ErrNotSupported, ErrNoDevice:
		// No driver wanted it, one has it already, or there is none
		// to give it to: nothing was left undone.
		return nil
	default:
		return usbdev.NewError("giving the interface back to the kernel driver", info, usbdev.ErrReattachFailed, err)
	}
}

// close releases the interface, stops the event thread, and closes the
// handle and the context; it is safe on a half-built session and after
// the device vanished.
func (s *session) close(info usbdev.Info) error {
	var err error
	if s.h != 0 {
		err = s.release(info)
	}
	s.loop.stopThread() // frees the transfers: none is in flight
	if s.h != 0 {
		call(s.lib.fn.close, s.h)
		s.h = 0
	}
	s.loop.exit()
	return err
}

// closedErr is what calls on a closed Device (or one whose reset could
// not re-open it) return.
func (d *Device) closedErr(op string) error {
	if d.closed {
		return usbdev.NewError(op, d.info, usbdev.ErrClosed, nil)
	}
	return usbdev.NewError(op, d.info, usbdev.ErrReenumerationLost, nil)
}

// ClassRequest sends a class-specific request to the interface
// (bmRequestType 0xA1 in, 0x21 out; wIndex = interface number) as an
// asynchronous control transfer handled on the event thread, bounded by
// the sooner of ctx's deadline and OpenOptions.ControlTimeout.
func (d *Device) ClassRequest(ctx context.Context, in bool, request uint8, value uint16, data []byte) (int, error) {
	d.mu.Lock()
	defer d.mu.Unlock()
	op := fmt.Sprintf("class request 0x%02x", request)
	if d.s == nil {
		return 0, d.closedErr(op)
	}
	timeout, fromCtx, err := usbdev.ControlTimeout(ctx, d.opts.ControlTimeout, time.Now())
	if err != nil {
		return 0, usbdev.NewError(op, d.info, err, nil)
	}
	if len(data) > smallLen {
		return 0, usbdev.NewError(op, d.info, nil, fmt.Errorf("%d bytes of data: at most %d", len(data), smallLen))
	}
	rType := uint8(0x21)
	if in {
		rType = 0xA1
	}
	n, err := d.s.control(ctx, rType, request, value, uint16(d.info.Interface), data, timeout)
	if err != nil {
		e := mapError(ctx, op, d.info, err)
		var me *usbdev.Error
		if fromCtx && errors.As(e, &me) && me.Kind == nil && err == Status(statusTimedOut) {
			me.Kind = context.DeadlineExceeded
		}
		return n, e
	}
	return n, nil
}

// control runs one control transfer on the event thread.
func (s *session) control(ctx context.Context, rType, request uint8, value, index uint16, data []byte, timeout time.Duration) (int, error) {
	b := s.ctrlBuf[:controlSetupLen+len(data)]
	b[0], b[1] = rType, request
	b[2], b[3] = byte(value), byte(value>>8)
	b[4], b[5] = byte(index), byte(index>>8)
	b[6], b[7] = byte(len(data)), byte(len(data)>>8)
	if rType&0x80 == 0 {
		copy(b[controlSetupLen:], data)
	}
	if err := s.loop.submit(s.ctrl, s.h, 0, transferTypeControl, b, max(timeout, time.Millisecond), 0); err != nil {
		return 0, err
	}
	var none time.Time
	n, err, _ := s.ctrlWait.await(s.loop, ctx, s.ctrl, &none)
	n = max(0, min(n, len(data)))
	if rType&0x80 != 0 {
		copy(data, b[controlSetupLen:controlSetupLen+n])
	}
	return n, err
}

// ClearHalt clears ENDPOINT_HALT with libusb_clear_halt, which resets the
// host's side of the endpoint (its data toggle) too: on Linux the
// USBDEVFS_CLEAR_HALT ioctl (usb_clear_halt, then usb_reset_endpoint), on
// macOS ClearPipeStallBothEnds, on Windows WinUsb_ResetPipe. A control
// transfer sending CLEAR_FEATURE would leave the host's toggle as it was.
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
		return usbdev.NewError(op, d.info, err, nil)
	}
	return mapError(ctx, op, d.info, rc(call(d.lib.fn.clearHalt, d.s.h, uintptr(ep))))
}

// ResetPort resets the device (libusb_reset_device) and leaves it
// claimed. When the device re-enumerated instead (NOT_FOUND, NO_DEVICE),
// the session is thrown away and the device found again at the same port
// with the same VID:PID and serial, waiting up to
// OpenOptions.ReenumerateTimeout, and claimed again, the in-use check
// included.
func (d *Device) ResetPort(ctx context.Context) error {
	d.mu.Lock()
	defer d.mu.Unlock()
	const op = "resetting the port"
	if d.closed {
		return d.closedErr(op)
	}
	if err := ctx.Err(); err != nil {
		return usbdev.NewError(op, d.info, err, nil)
	}
	if d.s != nil {
		err := rc(call(d.lib.fn.resetDevice, d.s.h))
		if err == nil {
			return nil
		}
		gone := err == ErrNotFound || err == ErrNoDevice
		if !gone && d.s.claimed {
			return mapError(ctx, op, d.info, err)
		}
		d.s.reattach = false // claimed again right below
		_ = d.s.close(d.info)
		d.s = nil
		if !gone {
			return mapError(ctx, op, d.info, err)
		}
	}
	return usbdev.AwaitReenumeration(ctx, d.info, d.opts.ReenumerateTimeout, func() error {
		s, cur, err := d.openSession(ctx, d.info, true)
		if err != nil {
			return err
		}
		s.reattach = s.reattach || d.kernelHad
		d.s, d.info = s, cur
		return nil
	})
}

// Close releases the interface, hands it back to the system's driver if
// one had it, frees the buffers and ends the session. Calling it again
// does nothing.
func (d *Device) Close() error {
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.closed {
		return nil
	}
	d.closed = true
	var err error
	if d.s != nil {
		err = d.s.close(d.info)
		d.s = nil
	}
	for _, r := range d.regions {
		r.free()
	}
	d.regions = nil
	return err
}
