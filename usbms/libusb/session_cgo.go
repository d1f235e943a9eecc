//go:build cgo && !nousb

package libusb

import (
	"context"
	"errors"
	"fmt"

	"github.com/google/gousb"
)

// session is one open of the device: everything a reset with re-enumeration
// throws away and builds again.
type session struct {
	uc   *gousb.Context
	dev  *gousb.Device
	cfg  *gousb.Config
	intf *gousb.Interface

	// h is libusb's handle behind dev, for the calls gousb lacks.
	h usbHandle
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
func openSession(ctx context.Context, info Info, opts OpenOptions, view sysView, byPort bool) (*session, Info, error) {
	if err := ctx.Err(); err != nil {
		return nil, info, &Error{Op: "opening", Device: info.String(), Kind: err}
	}
	s := &session{}
	var err error
	if s.uc, err = newContext(); err != nil {
		return nil, info, err
	}
	s.dev, info, err = findDevice(s.uc, view, info, byPort)
	if err != nil {
		s.close(info)
		return nil, info, err
	}
	// The in-use check runs on the device we actually found, right before
	// the claim that detaches the kernel driver.
	if !opts.Force {
		if err := checkNotInUse(view, info); err != nil {
			s.close(info)
			return nil, info, err
		}
	}
	if err := s.claim(info, opts); err != nil {
		s.close(info)
		return nil, info, mapError(ctx, "claiming the mass-storage interface", info, err)
	}
	s.dev.ControlTimeout = opts.ControlTimeout
	return s, info, nil
}

// findDevice opens the device at info's bus and address, or with byPort at
// info's port path whatever its address. VID:PID must match, and the serial
// too when info has one, so a different reader plugged into the same port is
// not mistaken for this one.
func findDevice(uc *gousb.Context, view sysView, info Info, byPort bool) (*gousb.Device, Info, error) {
	found := false
	devs, err := uc.OpenDevices(func(d *gousb.DeviceDesc) bool {
		if found || uint16(d.Vendor) != info.VID || uint16(d.Product) != info.PID ||
			FormatPortPath(d.Bus, d.Path) != info.PortPath {
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
			return nil, info, mapError(context.Background(), "opening "+info.DevNode(), info, err)
		}
		return nil, info, &Error{Op: "looking for the device", Device: info.String(), Kind: ErrNotFound, Hint: hintNotFound}
	}
	dev := devs[0]
	info.Bus, info.Address = dev.Desc.Bus, dev.Desc.Address
	if info.Serial != "" {
		serial, ok := view.USBString(info.PortPath, "serial")
		if !ok {
			serial, _ = dev.SerialNumber()
		}
		if serial != info.Serial {
			dev.Close()
			return nil, info, &Error{Op: "looking for the device", Device: info.String(), Kind: ErrNotFound,
				Hint: fmt.Sprintf("the device at port %s now has serial %q: a different device was plugged in", info.PortPath, serial)}
		}
	}
	if err := checkLayout(dev.Desc, info); err != nil {
		dev.Close()
		return nil, info, &Error{Op: "checking the device's descriptors", Device: info.String(), Err: err,
			Hint: "its descriptors changed since it was listed; run `usbflash list` again"}
	}
	return dev, info, nil
}

// checkLayout verifies that the configuration, interface, alternate setting
// and endpoints in info exist in the device's descriptors, and that gousb
// can claim the interface: Config.Interface (config.go) indexes
// Desc.Interfaces by interface number, which is only right when interfaces
// are numbered like their positions, and would panic past the end.
func checkLayout(d *gousb.DeviceDesc, info Info) error {
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

// claim selects the configuration and claims the interface, detaching the
// kernel driver from this interface only, and allocates the transfers. It
// fails when libusb's handle cannot be reached (a gousb whose layout is not
// the pinned one): without libusb_clear_halt and per-interface detach the
// device cannot be driven safely, so there is no second path.
func (s *session) claim(info Info, opts OpenOptions) error {
	h, err := rawHandle(s.dev)
	if err != nil {
		return err
	}
	s.h = h
	active, err := s.h.kernelDriverActive(info.Interface)
	if err != nil {
		return err
	}
	s.reattach = active
	if err := s.h.setAutoDetach(true); err != nil {
		return err
	}
	if s.cfg, err = s.dev.Config(info.Config); err != nil {
		return err
	}
	if s.intf, err = s.cfg.Interface(info.Interface, info.AltSetting); err != nil {
		return err
	}
	s.bulk, err = newBulkPath(s.h, info, opts)
	return err
}

// release gives up the interface and, when a kernel driver had it, hands
// it back. With auto-detach left on, libusb would re-attach silently and
// ignore failures (op_release_interface); doing it here reports them.
func (s *session) release(info Info) error {
	if s.bulk != nil {
		s.bulk.close()
		s.bulk = nil
	}
	if s.intf == nil {
		return nil
	}
	_ = s.h.setAutoDetach(false)
	s.intf.Close()
	s.intf = nil
	if !s.reattach {
		return nil
	}
	if err := s.h.attachKernelDriver(info.Interface); err != nil {
		return &Error{Op: "giving the interface back to the kernel driver", Device: info.String(), Err: err,
			Hint: "unplug and replug the device to get its /dev/sdX node back"}
	}
	return nil
}

// close tears the session down in the order gousb requires (interface,
// configuration, device, context); it is safe on a half-built session and
// after the device vanished.
func (s *session) close(info Info) error {
	var errs []error
	if err := s.release(info); err != nil {
		errs = append(errs, err)
	}
	if s.cfg != nil {
		if err := s.cfg.Close(); err != nil {
			errs = append(errs, err)
		}
		s.cfg = nil
	}
	if s.dev != nil {
		if err := s.dev.Close(); err != nil {
			errs = append(errs, err)
		}
		s.dev, s.h = nil, nil
	}
	if s.uc != nil {
		if err := s.uc.Close(); err != nil {
			errs = append(errs, err)
		}
		s.uc = nil
	}
	return errors.Join(errs...)
}
