//go:build cgo && !nousb && (libusb || !(linux || darwin || windows))

package libusb

import (
	"reflect"
	"strings"
	"testing"

	"github.com/google/gousb"

	"github.com/usbflash/usbflash/usbms/usbdev"
)

func setting(num, alt int, sub, proto uint8, eps ...gousb.EndpointDesc) gousb.InterfaceSetting {
	m := map[gousb.EndpointAddress]gousb.EndpointDesc{}
	for _, e := range eps {
		m[e.Address] = e
	}
	return gousb.InterfaceSetting{Number: num, Alternate: alt, Class: gousb.ClassMassStorage,
		SubClass: gousb.Class(sub), Protocol: gousb.Protocol(proto), Endpoints: m}
}

func bulk(addr uint8, mps int) gousb.EndpointDesc {
	dir := gousb.EndpointDirectionOut
	if addr&0x80 != 0 {
		dir = gousb.EndpointDirectionIn
	}
	return gousb.EndpointDesc{Address: gousb.EndpointAddress(addr), Number: int(addr & 0x0f),
		Direction: dir, TransferType: gousb.TransferTypeBulk, MaxPacketSize: mps}
}

func device(ifaces ...gousb.InterfaceDesc) *gousb.DeviceDesc {
	return &gousb.DeviceDesc{Bus: 2, Address: 9, Path: []int{1, 4}, Speed: gousb.SpeedSuper,
		Vendor: 0x0bda, Product: 0x9210, Device: 0x1234,
		Configs: map[int]gousb.ConfigDesc{1: {Number: 1, Interfaces: ifaces}}}
}

type listed struct {
	Iface, Alt int
	Supported  bool
	In, Out    uint8
}

func TestInterfacesOf(t *testing.T) {
	uasEPs := []gousb.EndpointDesc{bulk(0x81, 1024), bulk(0x02, 1024), bulk(0x83, 1024), bulk(0x04, 1024)}
	tests := []struct {
		name   string
		dev    *gousb.DeviceDesc
		want   []listed
		reason string // of the first entry, when unsupported
	}{
		{
			name: "plain BOT reader",
			dev: device(gousb.InterfaceDesc{Number: 0, AltSettings: []gousb.InterfaceSetting{
				setting(0, 0, 0x06, 0x50, bulk(0x81, 512), bulk(0x02, 512))}}),
			want: []listed{{0, 0, true, 0x81, 0x02}},
		},
		{
			name: "USB3 reader: BOT alt 0, UAS alt 1 (UAS skipped)",
			dev: device(gousb.InterfaceDesc{Number: 0, AltSettings: []gousb.InterfaceSetting{
				setting(0, 0, 0x06, 0x50, bulk(0x81, 1024), bulk(0x02, 1024)),
				setting(0, 1, 0x06, 0x62, uasEPs...)}}),
			want: []listed{{0, 0, true, 0x81, 0x02}},
		},
		{
			name: "UAS only (QEMU usb-uas)",
			dev: device(gousb.InterfaceDesc{Number: 0, AltSettings: []gousb.InterfaceSetting{
				setting(0, 0, 0x06, 0x62, uasEPs...)}}),
			want:   []listed{{0, 0, false, 0x81, 0x02}},
			reason: "only UAS",
		},
		{
			name: "composite: HID interface ignored, storage on interface 1",
			dev: device(
				gousb.InterfaceDesc{Number: 0, AltSettings: []gousb.InterfaceSetting{{Number: 0, Class: gousb.ClassHID}}},
				gousb.InterfaceDesc{Number: 1, AltSettings: []gousb.InterfaceSetting{
					setting(1, 0, 0x06, 0x50, bulk(0x83, 512), bulk(0x04, 512))}}),
			want: []listed{{1, 0, true, 0x83, 0x04}},
		},
		{
			name: "BOT without endpoints",
			dev: device(gousb.InterfaceDesc{Number: 0, AltSettings: []gousb.InterfaceSetting{
				setting(0, 0, 0x06, 0x50, bulk(0x81, 512))}}),
			want:   []listed{{0, 0, false, 0x81, 0}},
			reason: "without a bulk IN and a bulk OUT",
		},
		{
			name: "floppy (UFI/CBI) listed as unsupported",
			dev: device(gousb.InterfaceDesc{Number: 0, AltSettings: []gousb.InterfaceSetting{
				setting(0, 0, 0x04, 0x00, bulk(0x81, 64), bulk(0x02, 64))}}),
			want:   []listed{{0, 0, false, 0x81, 0x02}},
			reason: "subclass 0x04",
		},
		{
			name: "8070i over Bulk-Only (an old CF reader): driven as Linux does",
			dev: device(gousb.InterfaceDesc{Number: 0, AltSettings: []gousb.InterfaceSetting{
				setting(0, 0, 0x05, 0x50, bulk(0x81, 64), bulk(0x02, 64))}}),
			want: []listed{{0, 0, true, 0x81, 0x02}},
		},
		{
			name: "RBC over Bulk-Only",
			dev: device(gousb.InterfaceDesc{Number: 0, AltSettings: []gousb.InterfaceSetting{
				setting(0, 0, 0x01, 0x50, bulk(0x81, 512), bulk(0x02, 512))}}),
			want: []listed{{0, 0, true, 0x81, 0x02}},
		},
		{
			name: "not mass storage at all",
			dev:  device(gousb.InterfaceDesc{Number: 0, AltSettings: []gousb.InterfaceSetting{{Number: 0, Class: gousb.ClassVendorSpec}}}),
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			infos := interfacesOf(tc.dev)
			var got []listed
			for _, i := range infos {
				got = append(got, listed{i.Interface, i.AltSetting, i.Supported, i.BulkIn, i.BulkOut})
				if i.PortPath != "2-1.4" || i.VID != 0x0bda || i.PID != 0x9210 || i.BCDDevice != 0x1234 || i.Speed != usbdev.SpeedSuper || i.Config != 1 {
					t.Errorf("identity wrong: %+v", i)
				}
			}
			if !reflect.DeepEqual(got, tc.want) {
				t.Errorf("interfacesOf = %+v, want %+v", got, tc.want)
			}
			if tc.reason != "" && (len(infos) == 0 || !strings.Contains(infos[0].Reason, tc.reason)) {
				t.Errorf("reason = %q, want it to contain %q", infos[0].Reason, tc.reason)
			}
		})
	}
}

func TestCheckLayout(t *testing.T) {
	good := device(gousb.InterfaceDesc{Number: 0, AltSettings: []gousb.InterfaceSetting{
		setting(0, 0, 0x06, 0x50, bulk(0x81, 512), bulk(0x02, 512))}})
	// Interface numbered 2 at position 0: gousb's Config.Interface would
	// index past the end of Interfaces and panic.
	gap := device(gousb.InterfaceDesc{Number: 2, AltSettings: []gousb.InterfaceSetting{
		setting(2, 0, 0x06, 0x50, bulk(0x81, 512), bulk(0x02, 512))}})
	base := usbdev.Info{Config: 1, Interface: 0, AltSetting: 0, BulkIn: 0x81, BulkOut: 0x02}
	tests := []struct {
		name    string
		dev     *gousb.DeviceDesc
		mod     func(*usbdev.Info)
		wantErr string
	}{
		{"matches", good, func(*usbdev.Info) {}, ""},
		{"other config", good, func(i *usbdev.Info) { i.Config = 2 }, "no configuration 2"},
		{"other alt", good, func(i *usbdev.Info) { i.AltSetting = 1 }, "no alternate setting 1"},
		{"endpoint gone", good, func(i *usbdev.Info) { i.BulkIn = 0x83 }, "no bulk endpoints"},
		{"non-contiguous numbering", gap, func(i *usbdev.Info) { i.Interface = 2 }, "non-contiguous"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			info := base
			tc.mod(&info)
			err := checkLayout(tc.dev, info)
			if tc.wantErr == "" && err != nil || tc.wantErr != "" && (err == nil || !strings.Contains(err.Error(), tc.wantErr)) {
				t.Errorf("checkLayout = %v, want %q", err, tc.wantErr)
			}
		})
	}
}

func TestSortInfos(t *testing.T) {
	infos := []usbdev.Info{
		{Bus: 2, Port: []int{1}},
		{Bus: 1, Port: []int{10}},
		{Bus: 1, Port: []int{2, 1}, Interface: 1},
		{Bus: 1, Port: []int{2, 1}, Interface: 0},
		{Bus: 1, Port: []int{2}},
	}
	usbdev.SortInfos(infos)
	var got []string
	for _, i := range infos {
		got = append(got, usbdev.FormatPortPath(i.Bus, i.Port)+":"+string(rune('0'+i.Interface)))
	}
	want := []string{"1-2:0", "1-2.1:0", "1-2.1:1", "1-10:0", "2-1:0"}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("order = %q, want %q", got, want)
	}
}
