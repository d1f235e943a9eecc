//go:build linux

package usbfs

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"

	"github.com/usbflash/usbflash/usbms/usbdev"
)

// sysfsUSB is where the kernel lists USB devices and interfaces.
const sysfsUSB = "/sys/bus/usb/devices"

// attr reads one sysfs attribute, trimmed; ok is false when it is absent.
func attr(dir, name string) (string, bool) {
	b, err := os.ReadFile(filepath.Join(dir, name))
	if err != nil {
		return "", false
	}
	return strings.TrimRight(string(b), "\n"), true
}

func attrHex(dir, name string) (uint64, error) {
	s, ok := attr(dir, name)
	if !ok {
		return 0, fmt.Errorf("%s: no %s", dir, name)
	}
	v, err := strconv.ParseUint(strings.TrimSpace(s), 16, 32)
	if err != nil {
		return 0, fmt.Errorf("%s/%s: %q is not hexadecimal", dir, name, s)
	}
	return v, nil
}

func attrDec(dir, name string) (int, error) {
	s, ok := attr(dir, name)
	if !ok {
		return 0, fmt.Errorf("%s: no %s", dir, name)
	}
	v, err := strconv.Atoi(strings.TrimSpace(s))
	if err != nil {
		return 0, fmt.Errorf("%s/%s: %q is not a number", dir, name, s)
	}
	return v, nil
}

// speedOf maps sysfs's speed (Mbit/s) to libusb's Speed.
func speedOf(s string) usbdev.Speed {
	switch strings.TrimSpace(s) {
	case "1.5":
		return usbdev.SpeedLow
	case "12":
		return usbdev.SpeedFull
	case "480":
		return usbdev.SpeedHigh
	case "5000":
		return usbdev.SpeedSuper
	case "10000", "20000":
		return usbdev.SpeedSuperPlus
	}
	return usbdev.SpeedUnknown
}

// isDeviceDir tells a device's directory name (2-1.4) from an interface's
// (2-1.4:1.0) and a root hub's (usb2).
func isDeviceDir(name string) bool {
	return !strings.Contains(name, ":") && !strings.HasPrefix(name, "usb")
}

// listFrom enumerates the mass-storage interfaces of the devices under
// root (a /sys/bus/usb/devices tree), sorted like libusb.List's.
func listFrom(root string) ([]usbdev.Info, error) {
	ents, err := os.ReadDir(root)
	if err != nil {
		return nil, err
	}
	out := []usbdev.Info{}
	for _, e := range ents {
		if !isDeviceDir(e.Name()) {
			continue
		}
		infos, err := deviceInfos(root, e.Name())
		if err != nil {
			// A device that vanished while we looked, or one
			// with unreadable attributes, is not a reader we can
			// use: skip it as libusb skips what it cannot read.
			continue
		}
		out = append(out, infos...)
	}
	usbdev.SortInfos(out)
	return out, nil
}

// deviceInfos reads one device (port path name) and returns one Info per
// mass-storage interface of its active configuration: from the raw
// descriptors, where an interface with a Bulk-Only alternate setting
// (UAS readers have one besides UAS) gives that one only, as libusb's List
// does; from the interface directories (the current alternate setting)
// when the descriptors cannot be read.
func deviceInfos(root, name string) ([]usbdev.Info, error) {
	dir := filepath.Join(root, name)
	base, err := deviceBase(dir, name)
	if err != nil {
		return nil, err
	}
	if raw, err := os.ReadFile(filepath.Join(dir, "descriptors")); err == nil {
		if alts, err := usbdev.ParseDescriptors(raw, base.Config); err == nil {
			return usbdev.InterfaceInfos(base, alts), nil
		}
	}
	ents, err := os.ReadDir(dir)
	if err != nil {
		return nil, err
	}
	var out []usbdev.Info
	for _, e := range ents {
		if !strings.HasPrefix(e.Name(), name+":") {
			continue
		}
		info, ok, err := interfaceInfo(filepath.Join(dir, e.Name()), base)
		if err != nil || !ok {
			continue
		}
		out = append(out, info)
	}
	return out, nil
}

// deviceBase reads what a device's interfaces share.
func deviceBase(dir, name string) (usbdev.Info, error) {
	var info usbdev.Info
	bus, port, err := usbdev.ParsePortPath(name)
	if err != nil {
		return info, err
	}
	info.Port, info.PortPath = port, name
	if info.Bus, err = attrDec(dir, "busnum"); err != nil {
		return info, err
	}
	if info.Bus != bus {
		return info, fmt.Errorf("%s: busnum %d", dir, info.Bus)
	}
	if info.Address, err = attrDec(dir, "devnum"); err != nil {
		return info, err
	}
	vid, err := attrHex(dir, "idVendor")
	if err != nil {
		return info, err
	}
	pid, err := attrHex(dir, "idProduct")
	if err != nil {
		return info, err
	}
	info.VID, info.PID = uint16(vid), uint16(pid)
	// The quirk table names readers by a range of bcdDevice; a kernel too
	// old to show it leaves it 0, which the ranges starting at 0000 match.
	if bcd, err := attrHex(dir, "bcdDevice"); err == nil {
		info.BCDDevice = uint16(bcd)
	}
	if s, ok := attr(dir, "speed"); ok {
		info.Speed = speedOf(s)
	}
	if s, ok := attr(dir, "bConfigurationValue"); ok && s != "" {
		info.Config, _ = strconv.Atoi(strings.TrimSpace(s))
	}
	info.Manufacturer, _ = attr(dir, "manufacturer")
	info.Product, _ = attr(dir, "product")
	info.Serial, _ = attr(dir, "serial")
	return info, nil
}

// interfaceInfo reads one interface directory (2-1.4:1.0); ok is false
// when it is not mass storage.
func interfaceInfo(dir string, base usbdev.Info) (usbdev.Info, bool, error) {
	class, err := attrHex(dir, "bInterfaceClass")
	if err != nil {
		return base, false, err
	}
	if class != usbdev.ClassMassStorage {
		return base, false, nil
	}
	info := base
	info.Port = append([]int(nil), base.Port...)
	num, err := attrHex(dir, "bInterfaceNumber")
	if err != nil {
		return info, false, err
	}
	alt, err := attrHex(dir, "bAlternateSetting")
	if err != nil {
		return info, false, err
	}
	sub, err := attrHex(dir, "bInterfaceSubClass")
	if err != nil {
		return info, false, err
	}
	proto, err := attrHex(dir, "bInterfaceProtocol")
	if err != nil {
		return info, false, err
	}
	info.Interface, info.AltSetting = int(num), int(alt)
	info.SubClass, info.Protocol = uint8(sub), uint8(proto)
	// The directory name carries the configuration: 2-1.4:1.0.
	if _, cfgIntf, ok := strings.Cut(filepath.Base(dir), ":"); ok {
		if c, _, ok := strings.Cut(cfgIntf, "."); ok {
			if n, err := strconv.Atoi(c); err == nil {
				info.Config = n
			}
		}
	}
	info.Supported, info.Reason = usbdev.Classify(info.SubClass, info.Protocol)
	if info.Protocol == usbdev.ProtocolUAS {
		// Its pipes are named in the descriptors, which were not read.
		info.Supported = false
		info.Reason = "UAS interface whose Pipe Usage descriptors could not be read"
	}
	if err := readEndpoints(dir, &info); err != nil {
		return info, false, err
	}
	if info.Supported && (info.BulkIn == 0 || info.BulkOut == 0) {
		info.Supported = false
		info.Reason = "Bulk-Only interface without a bulk IN and a bulk OUT endpoint (broken descriptors)"
	}
	return info, true, nil
}

// readEndpoints fills the bulk endpoints from the interface's ep_XX
// directories (the lowest address of each direction, as libusb's List).
func readEndpoints(dir string, info *usbdev.Info) error {
	ents, err := os.ReadDir(dir)
	if err != nil {
		return err
	}
	for _, e := range ents {
		if !strings.HasPrefix(e.Name(), "ep_") {
			continue
		}
		ed := filepath.Join(dir, e.Name())
		typ, _ := attr(ed, "type")
		if strings.TrimSpace(typ) != "Bulk" {
			continue
		}
		addr, err := attrHex(ed, "bEndpointAddress")
		if err != nil {
			return err
		}
		mps, err := attrHex(ed, "wMaxPacketSize")
		if err != nil {
			return err
		}
		// Bits 12:11 of wMaxPacketSize are high-bandwidth extras, not
		// bulk's: the size is the low 11 bits.
		size := int(mps & 0x7ff)
		a := uint8(addr)
		if a&0x80 != 0 {
			if info.BulkIn == 0 || a < info.BulkIn {
				info.BulkIn, info.BulkInMaxPacket = a, size
			}
		} else if info.BulkOut == 0 || a < info.BulkOut {
			info.BulkOut, info.BulkOutMaxPacket = a, size
		}
	}
	return nil
}

// errNoSysfs is the cause of ErrNoUSBAccess when sysfs lists no USB.
var errNoSysfs = errors.New(sysfsUSB + " is missing (no USB, or sysfs not mounted)")
