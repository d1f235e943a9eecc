//go:build cgo && !nousb && (libusb || !(linux || darwin || windows))

package libusb

import (
	"context"
	"errors"
	"fmt"
	"sort"
	"time"

	"github.com/google/gousb"

	"github.com/usbflash/usbflash/internal/lib/linuxdisk"
	"github.com/usbflash/usbflash/usbms/usbdev"
)

// stringsTimeout bounds each string-descriptor read during List, so one
// wedged reader cannot stall the listing of the others.
const stringsTimeout = time.Second

// List enumerates every mass-storage interface of every attached device:
// SCSI over Bulk-Only Transport (Supported) and, for the user's benefit,
// mass-storage interfaces usbflash cannot drive (UAS-only readers, other
// subclasses) with the reason. It claims nothing; devices are opened only
// to read string descriptors when sysfs does not have them. No devices is an
// empty list and a nil error; no USB access at all is ErrNoUSBAccess.
func List(ctx context.Context) ([]usbdev.Info, error) {
	if err := ctx.Err(); err != nil {
		return nil, &usbdev.Error{Op: "listing USB devices", Kind: err}
	}
	uc, err := newContext()
	if err != nil {
		return nil, err
	}
	defer uc.Close()

	var descs []*gousb.DeviceDesc
	// An opener that returns false reads descriptors without opening.
	_, err = uc.OpenDevices(func(d *gousb.DeviceDesc) bool {
		descs = append(descs, d)
		return false
	})
	if err != nil && len(descs) == 0 {
		return nil, &usbdev.Error{Op: "listing USB devices", Kind: usbdev.ErrListFailed, Err: err}
	}
	// Otherwise err is about one device whose descriptors could not be
	// read: it cannot be used, and the others are still listed.

	view := linuxdisk.Host()
	out := []usbdev.Info{}
	for _, d := range descs {
		if err := ctx.Err(); err != nil {
			return nil, &usbdev.Error{Op: "listing USB devices", Kind: err}
		}
		infos := interfacesOf(d)
		if len(infos) == 0 {
			continue
		}
		m, p, s, note := deviceStrings(uc, view, d)
		for i := range infos {
			infos[i].Manufacturer, infos[i].Product, infos[i].Serial, infos[i].StringsNote = m, p, s, note
		}
		out = append(out, infos...)
	}
	usbdev.SortInfos(out)
	return out, nil
}

// interfacesOf picks the mass-storage interfaces out of a device's
// descriptors. For each interface number of each configuration: if any
// alternate setting speaks BOT, those settings are listed (a UAS alternate
// next to them is what USB3 readers usually offer, and is skipped); if none
// does, every mass-storage setting is listed as unsupported, with why.
func interfacesOf(d *gousb.DeviceDesc) []usbdev.Info {
	var out []usbdev.Info
	cfgNums := make([]int, 0, len(d.Configs))
	for n := range d.Configs {
		cfgNums = append(cfgNums, n)
	}
	sort.Ints(cfgNums)
	for _, cn := range cfgNums {
		for _, intf := range d.Configs[cn].Interfaces {
			var ms []gousb.InterfaceSetting
			hasBOT := false
			for _, alt := range intf.AltSettings {
				if alt.Class != gousb.ClassMassStorage {
					continue
				}
				ms = append(ms, alt)
				if usbdev.BOTSubclass(uint8(alt.SubClass)) && uint8(alt.Protocol) == usbdev.ProtocolBOT {
					hasBOT = true
				}
			}
			for _, alt := range ms {
				isBOT := usbdev.BOTSubclass(uint8(alt.SubClass)) && uint8(alt.Protocol) == usbdev.ProtocolBOT
				if hasBOT && !isBOT {
					continue
				}
				out = append(out, infoOf(d, cn, alt))
			}
		}
	}
	return out
}

// infoOf fills an Info for one alternate setting.
func infoOf(d *gousb.DeviceDesc, cfg int, alt gousb.InterfaceSetting) usbdev.Info {
	info := usbdev.Info{
		Bus:        d.Bus,
		Address:    d.Address,
		Port:       append([]int(nil), d.Path...),
		PortPath:   usbdev.FormatPortPath(d.Bus, d.Path),
		VID:        uint16(d.Vendor),
		PID:        uint16(d.Product),
		BCDDevice:  uint16(d.Device),
		Speed:      usbdev.Speed(d.Speed),
		Config:     cfg,
		Interface:  alt.Number,
		AltSetting: alt.Alternate,
		SubClass:   uint8(alt.SubClass),
		Protocol:   uint8(alt.Protocol),
	}
	info.Supported, info.Reason = usbdev.Classify(info.SubClass, info.Protocol)
	if info.Protocol == usbdev.ProtocolUAS {
		// This backend drives Bulk-Only alone: gousb has no bulk
		// streams, which UAS needs at SuperSpeed.
		info.Supported = false
		info.Reason = usbdev.ReasonUASOnLibusb
	}
	// Lowest-numbered bulk endpoint of each direction: BOT has exactly
	// one of each; map order must not decide.
	for _, ep := range alt.Endpoints {
		if ep.TransferType != gousb.TransferTypeBulk {
			continue
		}
		if ep.Direction == gousb.EndpointDirectionIn {
			if info.BulkIn == 0 || uint8(ep.Address) < info.BulkIn {
				info.BulkIn, info.BulkInMaxPacket = uint8(ep.Address), ep.MaxPacketSize
			}
		} else if info.BulkOut == 0 || uint8(ep.Address) < info.BulkOut {
			info.BulkOut, info.BulkOutMaxPacket = uint8(ep.Address), ep.MaxPacketSize
		}
	}
	if info.Supported && (info.BulkIn == 0 || info.BulkOut == 0) {
		info.Supported = false
		info.Reason = "Bulk-Only interface without a bulk IN and a bulk OUT endpoint (broken descriptors)"
	}
	return info
}

// deviceStrings reads manufacturer, product and serial: from sysfs when the
// kernel has them (no permission needed), else by opening the device, which
// claims nothing. Failure is not fatal: the strings stay empty and note says
// why.
func deviceStrings(uc *gousb.Context, view linuxdisk.Sys, d *gousb.DeviceDesc) (m, p, s, note string) {
	port := usbdev.FormatPortPath(d.Bus, d.Path)
	var okM, okP, okS bool
	m, okM = view.USBString(port, "manufacturer")
	p, okP = view.USBString(port, "product")
	s, okS = view.USBString(port, "serial")
	if okM && okP && okS {
		return m, p, s, ""
	}
	devs, err := uc.OpenDevices(func(x *gousb.DeviceDesc) bool {
		return x.Bus == d.Bus && x.Address == d.Address
	})
	for _, dev := range devs {
		defer dev.Close()
	}
	if len(devs) == 0 {
		info := usbdev.Info{Bus: d.Bus, Address: d.Address, VID: uint16(d.Vendor)}
		if ge, _, ok := libusbCode(orNotFound(err)); ok && ge == gousb.ErrorAccess {
			return "", "", "", fmt.Sprintf("strings unavailable: no permission to open %s", info.DevNode())
		}
		return "", "", "", fmt.Sprintf("strings unavailable: could not open %s: %v", info.DevNode(), orNotFound(err))
	}
	dev := devs[0]
	dev.ControlTimeout = stringsTimeout
	var errs []error
	read := func(f func() (string, error)) string {
		v, err := f()
		if err != nil {
			errs = append(errs, err)
		}
		return v
	}
	m, p, s = read(dev.Manufacturer), read(dev.Product), read(dev.SerialNumber)
	if len(errs) > 0 {
		note = fmt.Sprintf("some strings unavailable: %v", errors.Join(errs...))
	}
	return m, p, s, note
}

// orNotFound turns "nothing opened and no error" into an error to report.
func orNotFound(err error) error {
	if err == nil {
		return usbdev.ErrNotFound
	}
	return err
}
