//go:build linux || darwin || windows

package libusbdl

import (
	"context"
	"errors"
	"fmt"
	"runtime"
	"unsafe"

	"github.com/usbflash/usbflash/internal/lib/linuxdisk"
	"github.com/usbflash/usbflash/usbms/usbdev"
)

// List enumerates the mass-storage interfaces of the attached USB
// devices, by the rules every backend lists by (usbdev.InterfaceInfos).
// It claims nothing; on Linux the strings come from sysfs, elsewhere a
// device is opened (not claimed) to read them, and when it cannot be,
// StringsNote says why. No devices is an empty list and a nil error; no
// libusb at all is usbdev.ErrNoLibusb (which matches ErrNoUSBAccess).
func List(ctx context.Context) ([]usbdev.Info, error) {
	if err := ctx.Err(); err != nil {
		return nil, &usbdev.Error{Op: "listing USB devices", Kind: err}
	}
	l, err := System()
	if err != nil {
		return nil, err
	}
	return l.List(ctx)
}

// List is the package's List with this library.
func (l *Library) List(ctx context.Context) ([]usbdev.Info, error) {
	const op = "listing USB devices"
	c, err := l.newContext()
	if err != nil {
		return nil, &usbdev.Error{Op: op, Kind: usbdev.ErrNoUSBAccess, Err: fmt.Errorf("libusb_init: %w", err)}
	}
	defer l.exitContext(c)
	devs, free, err := l.deviceList(c)
	if err != nil {
		return nil, &usbdev.Error{Op: op, Kind: usbdev.ErrListFailed, Err: err}
	}
	defer free()
	view := linuxdisk.Host()
	out := []usbdev.Info{}
	for _, dev := range devs {
		if err := ctx.Err(); err != nil {
			return nil, &usbdev.Error{Op: op, Kind: err}
		}
		base, desc, err := l.describe(dev)
		if err != nil {
			// A device whose descriptors cannot be read is not a
			// reader this program can use; the others are listed.
			continue
		}
		infos := usbdev.InterfaceInfos(base, desc)
		if len(infos) == 0 {
			continue
		}
		m, p, s, note := l.deviceStrings(view, dev, base)
		for i := range infos {
			infos[i].Manufacturer, infos[i].Product, infos[i].Serial, infos[i].StringsNote = m, p, s, note
		}
		out = append(out, infos...)
	}
	usbdev.SortInfos(out)
	return out, nil
}

// deviceList is libusb_get_device_list on context c; free unreferences
// the devices (those opened stay referenced by their handles).
func (l *Library) deviceList(c uintptr) ([]uintptr, func(), error) {
	var list uintptr
	n := int(int64(call(l.fn.getDeviceList, c, uintptr(unsafe.Pointer(&list)))))
	if n < 0 {
		return nil, nil, Code(int32(n))
	}
	devs := append([]uintptr(nil), unsafe.Slice(cptr[uintptr](list), n)...)
	return devs, func() { call(l.fn.freeDeviceList, list, 1) }, nil
}

// describe reads what every interface of dev shares (bus, address, port,
// IDs, speed) and the mass-storage settings of its active configuration,
// from the descriptors libusb keeps: no device is opened.
func (l *Library) describe(dev uintptr) (usbdev.Info, []usbdev.AltSetting, error) {
	var info usbdev.Info
	info.Bus = int(uint8(call(l.fn.getBusNumber, dev)))
	info.Address = int(uint8(call(l.fn.getDeviceAddress, dev)))
	var ports [8]uint8
	n := int32(call(l.fn.getPortNumbers, dev, uintptr(unsafe.Pointer(&ports[0])), uintptr(len(ports))))
	if n < 0 {
		return info, nil, Code(n)
	}
	if n == 0 {
		return info, nil, errors.New("a root hub")
	}
	for _, p := range ports[:n] {
		info.Port = append(info.Port, int(p))
	}
	info.PortPath = usbdev.FormatPortPath(info.Bus, info.Port)
	info.Speed = usbdev.Speed(int32(call(l.fn.getDeviceSpeed, dev)))
	var dd deviceDescriptor
	if err := rc(call(l.fn.getDeviceDescriptor, dev, uintptr(unsafe.Pointer(&dd)))); err != nil {
		return info, nil, err
	}
	info.VID, info.PID, info.BCDDevice = dd.idVendor, dd.idProduct, dd.bcdDevice
	var cfg *configDescriptor
	if err := rc(call(l.fn.getActiveConfigDescriptor, dev, uintptr(unsafe.Pointer(&cfg)))); err != nil {
		return info, nil, err
	}
	defer call(l.fn.freeConfigDescriptor, uintptr(unsafe.Pointer(cfg)))
	info.Config = int(cfg.bConfigurationValue)
	raw := append(deviceBytes(dd), rawConfig(cfg)...)
	alts, err := usbdev.ParseDescriptors(raw, info.Config)
	return info, alts, err
}

// deviceBytes is the device descriptor as the device sent it.
func deviceBytes(d deviceDescriptor) []byte {
	return []byte{18, 1, byte(d.bcdUSB), byte(d.bcdUSB >> 8), d.bDeviceClass, d.bDeviceSubClass, d.bDeviceProtocol,
		d.bMaxPacketSize0, byte(d.idVendor), byte(d.idVendor >> 8), byte(d.idProduct), byte(d.idProduct >> 8),
		byte(d.bcdDevice), byte(d.bcdDevice >> 8), d.iManufacturer, d.iProduct, d.iSerialNumber, d.bNumConfigurations}
}

// rawConfig puts a configuration back into the bytes the device sent:
// libusb parses the standard descriptors into structures and keeps what
// follows each (class-specific descriptors, UAS Pipe Usage, SuperSpeed
// endpoint companions) as its "extra" bytes, in order.
func rawConfig(c *configDescriptor) []byte {
	b := []byte{9, 2, 0, 0, c.bNumInterfaces, c.bConfigurationValue, c.iConfiguration, c.bmAttributes, c.maxPower}
	b = append(b, cbytes(c.extra, c.extraLength)...)
	for _, ifc := range cslice(c.iface, int(c.bNumInterfaces)) {
		for _, a := range cslice(ifc.altsetting, int(ifc.numAltsetting)) {
			b = append(b, 9, 4, a.bInterfaceNumber, a.bAlternateSetting, a.bNumEndpoints,
				a.bInterfaceClass, a.bInterfaceSubClass, a.bInterfaceProtocol, a.iInterface)
			b = append(b, cbytes(a.extra, a.extraLength)...)
			for _, ep := range cslice(a.endpoint, int(a.bNumEndpoints)) {
				b = append(b, 7, 5, ep.bEndpointAddress, ep.bmAttributes, byte(ep.wMaxPacketSize), byte(ep.wMaxPacketSize>>8), ep.bInterval)
				b = append(b, cbytes(ep.extra, ep.extraLength)...)
			}
		}
	}
	b[2], b[3] = byte(len(b)), byte(len(b)>>8)
	return b
}

// cslice is the n elements of a C array at p; nil for none.
func cslice[T any](p *T, n int) []T {
	if p == nil || n <= 0 {
		return nil
	}
	return unsafe.Slice(p, n)
}

// deviceStrings reads manufacturer, product and serial: from sysfs on
// Linux (no permission needed), else by opening the device, which claims
// nothing. A failure leaves them empty and note says why.
func (l *Library) deviceStrings(view linuxdisk.Sys, dev uintptr, base usbdev.Info) (m, p, s, note string) {
	if runtime.GOOS == "linux" {
		var okM, okP, okS bool
		m, okM = view.USBString(base.PortPath, "manufacturer")
		p, okP = view.USBString(base.PortPath, "product")
		s, okS = view.USBString(base.PortPath, "serial")
		if okM || okP || okS {
			return m, p, s, ""
		}
	}
	var h uintptr
	if err := rc(call(l.fn.open, dev, uintptr(unsafe.Pointer(&h)))); err != nil {
		return "", "", "", "strings unavailable: " + openFailure(err)
	}
	defer call(l.fn.close, h)
	var dd deviceDescriptor
	if err := rc(call(l.fn.getDeviceDescriptor, dev, uintptr(unsafe.Pointer(&dd)))); err != nil {
		return "", "", "", fmt.Sprintf("strings unavailable: %v", err)
	}
	var errs []error
	read := func(idx uint8) string {
		v, err := l.stringDescriptor(h, idx)
		if err != nil {
			errs = append(errs, err)
		}
		return v
	}
	m, p, s = read(dd.iManufacturer), read(dd.iProduct), read(dd.iSerialNumber)
	if len(errs) > 0 {
		note = fmt.Sprintf("some strings unavailable: %v", errors.Join(errs...))
	}
	return m, p, s, note
}

// stringDescriptor reads string idx in US English (libusb's first
// language); 0 is no string.
func (l *Library) stringDescriptor(h uintptr, idx uint8) (string, error) {
	if idx == 0 {
		return "", nil
	}
	var buf [256]byte
	n := int32(call(l.fn.getStringDescriptorASCII, h, uintptr(idx), uintptr(unsafe.Pointer(&buf[0])), uintptr(len(buf))))
	if n < 0 {
		return "", Code(n)
	}
	return string(buf[:n]), nil
}
