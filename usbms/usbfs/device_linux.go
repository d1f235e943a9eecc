//go:build linux

package usbfs

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sync"
	"time"
	"unsafe"

	"golang.org/x/sys/unix"

	"github.com/usbflash/usbflash/internal/lib/linuxdisk"
	"github.com/usbflash/usbflash/usbms"
	"github.com/usbflash/usbflash/usbms/usbdev"
)

const (
	// smallPiece is the URB size on kernels without
	// USBFS_CAP_NO_PACKET_SIZE_LIM (before Linux 3.3).
	smallPiece = 16 << 10
)

// Device is one claimed mass-storage interface on an open usbfs node. It
// implements usbms.Endpoint, usbms.BufferAllocator and
// usbms.DeadlineSetter.
//
// Bulk transfers share a read lock (BOT never overlaps them); the calls
// that change the device's state take the write lock. Cancel the
// transfers' context before calling Close from another goroutine.
type Device struct {
	opts usbdev.OpenOptions
	root string // sysfs USB devices directory
	view linuxdisk.Sys

	mu       sync.RWMutex
	info     usbdev.Info
	fd       int // -1 when closed, or after a reset whose re-open failed
	closed   bool
	claimed  bool
	caps     uint32
	deadline time.Time
	// kernelHad: a kernel driver had the interface at Open; Close
	// hands it back, even after resets re-opened the device.
	kernelHad bool
	// urbs are the URB structures, allocated once; the kernel writes
	// their status at reap time, so they must not move (heap).
	urbs []*urb
	io   urbIO // the URB ioctls and poll: usbfsIO but in tests
	// noMemoryWait is the first wait for usbfs memory (waitForMemory);
	// 0 is 10 ms, tests make it short.
	noMemoryWait time.Duration
	pfd          [1]unix.PollFd
	piece        int // bytes per URB
	// uas is the UAS side, when the interface is opened in UAS mode.
	uas uasIO
	// regions is the memory AllocBuffers handed out and not yet freed.
	regions       []region
	smallZeroCopy bool
	// counts are the system calls the transfers made, plain integers
	// of the goroutine that holds the read lock for a transfer (BOT and
	// UAS serialise them above), read under the write lock (IOCounts).
	counts usbms.IOCounts
}

var (
	_ usbms.Endpoint        = (*Device)(nil)
	_ usbms.BufferAllocator = (*Device)(nil)
	_ usbms.DeadlineSetter  = (*Device)(nil)
	_ usbms.IOCounter       = (*Device)(nil)
)

// IOCounts implements usbms.IOCounter: the URB ioctls, the waits for
// a URB and the other ioctls of the transfers since Open (Commands is the
// transport's to count). It waits for a transfer in flight.
func (d *Device) IOCounts() usbms.IOCounts {
	d.mu.Lock()
	defer d.mu.Unlock()
	return d.counts
}

// List enumerates the mass-storage interfaces of the USB devices from
// sysfs, without opening any device: the strings are sysfs's.
func List(ctx context.Context) ([]usbdev.Info, error) {
	if err := ctx.Err(); err != nil {
		return nil, &usbdev.Error{Op: "listing USB devices", Kind: err}
	}
	infos, err := listFrom(sysfsUSB)
	if err != nil {
		if errors.Is(err, os.ErrNotExist) {
			return nil, &usbdev.Error{Op: "listing USB devices", Kind: usbdev.ErrNoUSBAccess, Err: errNoSysfs}
		}
		return nil, &usbdev.Error{Op: "listing USB devices", Kind: usbdev.ErrListFailed, Err: err}
	}
	return infos, nil
}

// KernelDisks is libusb's: the kernel's disks of the interface (sysfs).
func KernelDisks(info usbdev.Info) ([]usbdev.KernelDisk, error) { return usbdev.KernelDisks(info) }

// Open claims the mass-storage interface info describes (from List). It
// refuses, unless opts.Force, when the kernel's disk for that interface is
// mounted, swapped on or held by dm/md; then it detaches the kernel driver
// from that interface only and claims it in one ioctl
// (USBDEVFS_DISCONNECT_CLAIM). Close gives it back (USBDEVFS_CONNECT).
func Open(ctx context.Context, info usbdev.Info, opts usbdev.OpenOptions) (*Device, error) {
	if !info.Supported {
		reason := info.Reason
		if reason == "" {
			reason = "not a SCSI Bulk-Only interface"
		}
		return nil, usbdev.NewError("opening", info, nil, errors.New(reason))
	}
	d := &Device{opts: opts.WithDefaults(), root: sysfsUSB, view: linuxdisk.Host(), info: info, fd: -1}
	d.io = usbfsIO{pfd: &d.pfd}
	d.urbs = make([]*urb, max(d.opts.OutStreamDepth, 1))
	for i := range d.urbs {
		d.urbs[i] = new(urb)
	}
	err := d.openSession(ctx, false)
	if errors.Is(err, usbdev.ErrNotFound) {
		// Re-plugged since it was listed: same port, new address.
		err = d.openSession(ctx, true)
	}
	if err != nil {
		return nil, err
	}
	return d, nil
}

// Info describes the device as it is now.
func (d *Device) Info() usbdev.Info {
	d.mu.RLock()
	defer d.mu.RUnlock()
	return d.info
}

// SetDeadline implements usbms.DeadlineSetter.
func (d *Device) SetDeadline(t time.Time) {
	d.mu.Lock()
	defer d.mu.Unlock()
	d.deadline = t
}

// findDevice checks that the device at info's port is still the one
// listed (VID:PID, serial, the interface and its endpoints) and returns
// info with its current address. Without byPort the address must match.
func (d *Device) findDevice(info usbdev.Info, byPort bool) (usbdev.Info, error) {
	dir := filepath.Join(d.root, info.PortPath)
	base, err := deviceBase(dir, info.PortPath)
	if err != nil || base.VID != info.VID || base.PID != info.PID || (!byPort && base.Address != info.Address) {
		return info, usbdev.NewError("looking for the device", info, usbdev.ErrNotFound, nil)
	}
	info.Bus, info.Address = base.Bus, base.Address
	if info.Serial != "" && base.Serial != info.Serial {
		return info, usbdev.NewError("looking for the device", info, usbdev.ErrDeviceChanged,
			fmt.Errorf("the device at port %s has serial %q", info.PortPath, base.Serial))
	}
	infos, err := deviceInfos(d.root, info.PortPath)
	if err != nil {
		return info, usbdev.NewError("looking for the device", info, usbdev.ErrNotFound, err)
	}
	for _, x := range infos {
		if x.Config == info.Config && x.Interface == info.Interface && x.AltSetting == info.AltSetting &&
			x.BulkIn == info.BulkIn && x.BulkOut == info.BulkOut {
			if base.Config != info.Config {
				return info, usbdev.NewError("checking the device's configuration", info, usbdev.ErrDescriptorsChanged,
					fmt.Errorf("configuration %d is active, not %d", base.Config, info.Config))
			}
			return info, nil
		}
	}
	return info, usbdev.NewError("checking the device's descriptors", info, usbdev.ErrDescriptorsChanged,
		fmt.Errorf("no interface %d alt %d with bulk endpoints 0x%02x and 0x%02x in configuration %d",
			info.Interface, info.AltSetting, info.BulkIn, info.BulkOut, info.Config))
}

// openSession finds the device, checks its disk is not in use (unless
// Force), opens its node and claims the interface.
func (d *Device) openSession(ctx context.Context, byPort bool) error {
	if err := ctx.Err(); err != nil {
		return usbdev.NewError("opening", d.info, err, nil)
	}
	info, err := d.findDevice(d.info, byPort)
	if err != nil {
		return err
	}
	if err := usbdev.CheckKernelDisks(d.view, info, d.opts); err != nil {
		return err
	}
	fd, err := unix.Open(info.DevNode(), unix.O_RDWR|unix.O_CLOEXEC, 0)
	if err != nil {
		return mapError(ctx, "opening "+info.DevNode(), info, err)
	}
	var caps uint32
	if _, err := ioctl(fd, ioctlGetCapabilities, unsafe.Pointer(&caps)); err != nil {
		caps = 0
	}
	d.info, d.fd, d.caps = info, fd, caps
	d.pfd[0] = unix.PollFd{Fd: int32(fd), Events: unix.POLLOUT}
	d.piece = d.opts.OutStreamChunk
	if caps&capNoPacketSizeLim == 0 {
		d.piece = min(d.piece, smallPiece)
	}
	if err := d.claim(); err != nil {
		d.closeNode()
		return mapError(ctx, "claiming the mass-storage interface", info, err)
	}
	d.io = usbfsIO{w: newWaiter(fd), pfd: &d.pfd}
	d.smallZeroCopy = d.probeMmap()
	return nil
}

// driverOf names the driver bound to the interface ("" when none).
func (d *Device) driverOf() (string, error) {
	gd := getDriver{Interface: uint32(d.info.Interface)}
	if _, err := ioctl(d.fd, ioctlGetDriver, unsafe.Pointer(&gd)); err != nil {
		if err == unix.ENODATA {
			return "", nil
		}
		return "", err
	}
	name, _, _ := bytes.Cut(gd.Driver[:], []byte{0})
	return string(name), nil
}

// claim detaches the kernel driver from the interface (that interface
// only) and claims it, refusing when another program holds it through
// usbfs, then selects the alternate setting when it is not the first.
func (d *Device) claim() error {
	drv, err := d.driverOf()
	if err != nil {
		return err
	}
	if drv == "usbfs" {
		return unix.EBUSY
	}
	if drv != "" {
		d.kernelHad = true
	}
	dc := disconnectClaim{Interface: uint32(d.info.Interface), Flags: disconnectClaimExceptDriver}
	copy(dc.Driver[:], "usbfs")
	if _, err := ioctl(d.fd, ioctlDisconnectClaim, unsafe.Pointer(&dc)); err != nil {
		return err
	}
	d.claimed = true
	if d.opts.UAS || d.info.Protocol == usbdev.ProtocolUAS {
		return d.setupUAS()
	}
	if d.info.AltSetting != 0 {
		si := setInterface{Interface: uint32(d.info.Interface), AltSetting: uint32(d.info.AltSetting)}
		if _, err := ioctl(d.fd, ioctlSetInterface, unsafe.Pointer(&si)); err != nil {
			return err
		}
	}
	return nil
}

// release gives the interface up and, when reattach, hands it back to
// the kernel driver (usb-storage binds again and /dev/sdX comes back).
func (d *Device) release(reattach bool) error {
	if !d.claimed {
		return nil
	}
	d.freeStreams()
	iface := uint32(d.info.Interface)
	_, _ = ioctl(d.fd, ioctlReleaseIntf, unsafe.Pointer(&iface))
	d.claimed = false
	if !reattach {
		return nil
	}
	arg := ioctlArg{Ifno: int32(d.info.Interface), IoctlCode: int32(ioctlConnect)}
	if _, err := ioctl(d.fd, ioctlIoctl, unsafe.Pointer(&arg)); err != nil {
		return usbdev.NewError("giving the interface back to the kernel driver", d.info, usbdev.ErrReattachFailed, err)
	}
	return nil
}

func (d *Device) closedErr(op string) error {
	if d.closed {
		return usbdev.NewError(op, d.info, usbdev.ErrClosed, nil)
	}
	return usbdev.NewError(op, d.info, usbdev.ErrReenumerationLost, nil)
}

// ClassRequest sends a class-specific request to the interface
// (bmRequestType 0xA1 in, 0x21 out; wIndex = interface number) with
// USBDEVFS_CONTROL, bounded by the sooner of ctx's deadline and
// OpenOptions.ControlTimeout (the ioctl cannot be cancelled).
func (d *Device) ClassRequest(ctx context.Context, in bool, request uint8, value uint16, data []byte) (int, error) {
	d.mu.Lock()
	defer d.mu.Unlock()
	op := fmt.Sprintf("class request 0x%02x", request)
	if d.fd < 0 {
		return 0, d.closedErr(op)
	}
	timeout, fromCtx, err := usbdev.ControlTimeout(ctx, d.opts.ControlTimeout, time.Now())
	if err != nil {
		return 0, usbdev.NewError(op, d.info, err, nil)
	}
	ct := ctrlTransfer{RequestType: 0x21, Request: request, Value: value,
		Index: uint16(d.info.Interface), Length: uint16(len(data)),
		Timeout: uint32(timeout / time.Millisecond)}
	if in {
		ct.RequestType = 0xA1
	}
	if len(data) > 0 {
		ct.Data = unsafe.Pointer(&data[0])
	}
	d.counts.Other++
	n, err := ioctl(d.fd, ioctlControl, unsafe.Pointer(&ct))
	if err != nil {
		e := usbdev.NewError(op, d.info, nil, err)
		if err == unix.ETIMEDOUT && fromCtx {
			e.Kind = context.DeadlineExceeded
		} else if errno, ok := err.(unix.Errno); ok {
			e.Kind = ioctlKind(errno)
		}
		return 0, e
	}
	return n, nil
}

// ClearHalt clears ENDPOINT_HALT with USBDEVFS_CLEAR_HALT, which also
// resets the host's data toggle (usb_clear_halt -> usb_reset_endpoint),
// unlike a CLEAR_FEATURE sent as a control transfer.
func (d *Device) ClearHalt(ctx context.Context, in bool) error {
	d.mu.Lock()
	defer d.mu.Unlock()
	ep := d.info.BulkOut
	if in {
		ep = d.info.BulkIn
	}
	op := fmt.Sprintf("clearing the halt on endpoint 0x%02x", ep)
	if d.fd < 0 {
		return d.closedErr(op)
	}
	if err := ctx.Err(); err != nil {
		return usbdev.NewError(op, d.info, err, nil)
	}
	e := uint32(ep)
	d.counts.Other++
	_, err := ioctl(d.fd, ioctlClearHalt, unsafe.Pointer(&e))
	return mapError(ctx, op, d.info, err)
}

// ResetPort resets the device (USBDEVFS_RESET) and leaves it claimed, as
// libusb does: the interface is released first, so the kernel neither
// unbinds nor rebinds a driver around the reset, and claimed again after.
// When the device re-enumerates instead (the node is dead), it is found
// again at the same port path with the same VID:PID and serial, waiting up
// to OpenOptions.ReenumerateTimeout, and claimed again, the in-use check
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
	if d.fd >= 0 {
		_ = d.release(false)
		_, err := ioctl(d.fd, ioctlReset, nil)
		if err == nil {
			if cerr := d.claim(); cerr == nil {
				return nil
			} else if cerr != unix.ENODEV {
				return mapError(ctx, "claiming the interface after a port reset", d.info, cerr)
			}
		} else if err != unix.ENODEV && err != unix.ENOENT {
			if cerr := d.claim(); cerr != nil {
				return mapError(ctx, op, d.info, cerr)
			}
			return mapError(ctx, op, d.info, err)
		}
		// The node is dead: the device re-enumerated.
		d.closeNode()
	}
	return d.reopen(ctx)
}

// reopen finds the device again at its port after it re-enumerated.
func (d *Device) reopen(ctx context.Context) error {
	had := d.kernelHad
	err := usbdev.AwaitReenumeration(ctx, d.info, d.opts.ReenumerateTimeout, func() error { return d.openSession(ctx, true) })
	if err == nil {
		d.kernelHad = d.kernelHad || had
	}
	return err
}

// Close releases the interface, hands it back to the kernel driver if one
// had it, frees the buffers and closes the node. Calling it again does
// nothing.
func (d *Device) Close() error {
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.closed {
		return nil
	}
	d.closed = true
	for _, r := range d.regions {
		r.free()
	}
	d.regions = nil
	if d.fd < 0 {
		return nil
	}
	err := d.release(d.kernelHad)
	d.closeNode()
	if err != nil {
		return err
	}
	return nil
}

// closeNode closes the usbfs node and its waiter's duplicate.
func (d *Device) closeNode() {
	if io, ok := d.io.(usbfsIO); ok {
		io.w.close()
		d.io = usbfsIO{pfd: &d.pfd}
	}
	unix.Close(d.fd)
	d.fd = -1
}
