//go:build cgo && !nousb && (libusb || !(linux || darwin || windows))

package libusb

import (
	"context"
	"fmt"

	"github.com/google/gousb"

	"github.com/usbflash/usbflash/internal/lib/linuxdisk"
	"github.com/usbflash/usbflash/usbms/usbdev"
)

// session is one open of the device: everything a reset with re-enumeration
// throws away and builds again.
type session struct {
	c cHandle // the open device; zero in tests
	// h is c, or a fake in tests: every call a Device method makes.
	h usbHandle
	// claimed: the interface is claimed (release gives it up).
	claimed bool
	// bulk moves the bulk data through transfers allocated once.
	bulk *bulkPath
	// reattach: a kernel driver had the interface before we claimed it,
	// so Close gives it back.
	reattach bool
}

// openSession finds the device described by info, checks that its kernel
// disk is not in use (unless opts.Force), and claims the interface. byPort
// lets the device have a new address (it re-enumerated); the port path,
// VID:PID and serial must still match. It returns info updated with the
// device's current address.
func openSession(ctx context.Context, info usbdev.Info, opts usbdev.OpenOptions, view linuxdisk.Sys, byPort bool) (*session, usbdev.Info, error) {
	if err := ctx.Err(); err != nil {
		return nil, info, usbdev.NewError("opening", info, err, nil)
	}
	s := &session{}
	uc, err := newContext()
	if err != nil {
		return nil, info, err
	}
	var alts int
	info, alts, err = findDevice(uc, view, info, byPort)
	// gousb only finds and checks the device; it is driven on a context
	// of its own (libusb_cgo.go).
	uc.Close()
	if err != nil {
		return nil, info, err
	}
	// The disks' checks (in use? the image on them?) run on the device we
	// actually found, right before the claim that detaches the kernel driver.
	if err := usbdev.CheckKernelDisks(view, info, opts); err != nil {
		return nil, info, err
	}
	if s.c, err = openHandle(info.Bus, info.Address); err != nil {
		return nil, info, mapError(ctx, "opening "+info.DevNode(), info, err)
	}
	s.h = s.c
	if err := s.claim(info, alts, opts); err != nil {
		s.close(info)
		return nil, info, mapError(ctx, "claiming the mass-storage interface", info, err)
	}
	return s, info, nil
}

// findDevice finds the device at info's bus and address, or with byPort at
// info's port path whatever its address, and returns info with its current
// address and the number of alternate settings of its interface. VID:PID
// must match, and the serial too when info has one, so a different reader
// plugged into the same port is not mistaken for this one.
func findDevice(uc *gousb.Context, view linuxdisk.Sys, info usbdev.Info, byPort bool) (usbdev.Info, int, error) {
	found := false
	devs, err := uc.OpenDevices(func(d *gousb.DeviceDesc) bool {
		if found || uint16(d.Vendor) != info.VID || uint16(d.Product) != info.PID ||
			usbdev.FormatPortPath(d.Bus, d.Path) != info.PortPath {
			return false
		}
		if !byPort && d.Address != info.Address {
			return false
		}
		found = true
		return true
	})
	if len(devs) == 0 {
		if found && err != nil {
			return info, 0, mapError(context.Background(), "opening "+info.DevNode(), info, err)
		}
		return info, 0, usbdev.NewError("looking for the device", info, usbdev.ErrNotFound, nil)
	}
	dev := devs[0]
	defer dev.Close()
	for _, d := range devs[1:] {
		d.Close()
	}
	info.Bus, info.Address = dev.Desc.Bus, dev.Desc.Address
	if info.Serial != "" {
		serial, ok := view.USBString(info.PortPath, "serial")
		if !ok {
			serial, _ = dev.SerialNumber()
		}
		if serial != info.Serial {
			return info, 0, usbdev.NewError("looking for the device", info, usbdev.ErrDeviceChanged,
				fmt.Errorf("the device at port %s has serial %q", info.PortPath, serial))
		}
	}
	if err := checkLayout(dev.Desc, info); err != nil {
		return info, 0, usbdev.NewError("checking the device's descriptors", info, usbdev.ErrDescriptorsChanged, err)
	}
	return info, len(dev.Desc.Configs[info.Config].Interfaces[info.Interface].AltSettings), nil
}

// checkLayout verifies that the configuration, interface, alternate setting
// and endpoints in info exist in the device's descriptors, and that gousb
// can claim the interface: Config.Interface (config.go) indexes
// Desc.Interfaces by interface number, which is only right when interfaces
// are numbered like their positions, and would panic past the end.
func checkLayout(d *gousb.DeviceDesc, info usbdev.Info) error {
	cfg, ok := d.Configs[info.Config]
	if !ok {
		return fmt.Errorf("no configuration %d", info.Config)
	}
	if info.Interface >= len(cfg.Interfaces) || cfg.Interfaces[info.Interface].Number != info.Interface {
		return fmt.Errorf("interface %d is not at position %d of configuration %d (non-contiguous interface numbers are not supported)", info.Interface, info.Interface, info.Config)
	}
	for _, alt := range cfg.Interfaces[info.Interface].AltSettings {
		if alt.Alternate != info.AltSetting {
			continue
		}
		in, okIn := alt.Endpoints[gousb.EndpointAddress(info.BulkIn)]
		out, okOut := alt.Endpoints[gousb.EndpointAddress(info.BulkOut)]
		if !okIn || !okOut || in.TransferType != gousb.TransferTypeBulk || out.TransferType != gousb.TransferTypeBulk {
			return fmt.Errorf("interface %d alt %d has no bulk endpoints 0x%02x and 0x%02x", info.Interface, info.AltSetting, info.BulkIn, info.BulkOut)
		}
		return nil
	}
	return fmt.Errorf("interface %d has no alternate setting %d", info.Interface, info.AltSetting)
}

// claim claims the interface, detaching the kernel driver from this
// interface only (libusb's auto-detach for this handle: gousb's would detach
// every interface of the configuration), and allocates the transfers.
func (s *session) claim(info usbdev.Info, alts int, opts usbdev.OpenOptions) error {
	active, err := s.c.kernelDriverActive(info.Interface)
	if err != nil {
		return err
	}
	s.reattach = active
	if err := s.c.setAutoDetach(true); err != nil {
		return err
	}
	if err := s.c.claim(info.Config, info.Interface, info.AltSetting, alts); err != nil {
		return err
	}
	s.claimed = true
	s.bulk, err = newBulkPath(s.c, info, opts)
	return err
}

// release gives up the interface and, when a kernel driver had it, hands
// it back. With auto-detach left on, libusb would re-attach silently and
// ignore failures (op_release_interface); doing it here reports them.
func (s *session) release(info usbdev.Info) error {
	if s.bulk != nil {
		s.bulk.close()
		s.bulk = nil
	}
	if !s.claimed {
		return nil
	}
	_ = s.c.setAutoDetach(false)
	_ = s.c.release(info.Interface)
	s.claimed = false
	if !s.reattach {
		return nil
	}
	if err := s.c.attachKernelDriver(info.Interface); err != nil {
		return usbdev.NewError("giving the interface back to the kernel driver", info, usbdev.ErrReattachFailed, err)
	}
	return nil
}

// close releases the interface and closes the device and its context; it
// is safe on a half-built session and after the device vanished.
func (s *session) close(info usbdev.Info) error {
	if s.c.h == nil {
		return nil
	}
	err := s.release(info)
	s.c.close()
	s.c, s.h = cHandle{}, nil
	return err
}
