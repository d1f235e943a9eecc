package usbdev

import "fmt"

// AltSetting is one interface alternate setting from the raw descriptors
// (ParseDescriptors).
type AltSetting struct {
	Config, Interface, Alt    int
	Class, SubClass, Protocol uint8
	Endpoints                 []EndpointDesc
}

// EndpointDesc is one endpoint of an AltSetting.
type EndpointDesc struct {
	Address   uint8
	Attrs     uint8 // bits 1:0: 2 = bulk
	MaxPacket int
	// PipeID is the UAS Pipe Usage descriptor's (0x24) after the
	// endpoint: 1 command, 2 status, 3 data-in, 4 data-out; 0 when none.
	PipeID uint8
	// MaxStreams is what the SuperSpeed endpoint companion (0x30) allows
	// a bulk endpoint: 2^MaxStreams streams; 0 when none.
	MaxStreams int
}

// ParseDescriptors reads a device's raw descriptors (Linux sysfs's
// `descriptors` file; the libusb backends rebuild the same bytes): the
// device descriptor followed by the configuration descriptors with their
// interfaces and endpoints, as the device sent them. It returns every
// alternate setting of configuration cfg (every configuration when cfg is
// 0).
func ParseDescriptors(b []byte, cfg int) ([]AltSetting, error) {
	if len(b) < 18 || b[1] != 1 {
		return nil, fmt.Errorf("descriptors: no device descriptor")
	}
	var out []AltSetting
	curCfg := 0
	cur := -1 // index in out of the setting being read
	for i := int(b[0]); i < len(b); {
		l := int(b[i])
		if l < 2 || i+l > len(b) {
			return nil, fmt.Errorf("descriptors: bad length %d at offset %d", l, i)
		}
		d := b[i : i+l]
		switch d[1] {
		case 2: // configuration
			if l < 9 {
				return nil, fmt.Errorf("descriptors: short configuration descriptor at offset %d", i)
			}
			curCfg = int(d[5])
			cur = -1
		case 4: // interface
			if l < 9 {
				return nil, fmt.Errorf("descriptors: short interface descriptor at offset %d", i)
			}
			cur = -1
			if cfg == 0 || curCfg == cfg {
				out = append(out, AltSetting{Config: curCfg, Interface: int(d[2]), Alt: int(d[3]),
					Class: d[5], SubClass: d[6], Protocol: d[7]})
				cur = len(out) - 1
			}
		case 5: // endpoint
			if l < 7 {
				return nil, fmt.Errorf("descriptors: short endpoint descriptor at offset %d", i)
			}
			if cur >= 0 {
				out[cur].Endpoints = append(out[cur].Endpoints, EndpointDesc{Address: d[2], Attrs: d[3],
					MaxPacket: int(uint16(d[4])|uint16(d[5])<<8) & 0x7ff})
			}
		case 0x24: // UAS Pipe Usage, after its endpoint
			if cur >= 0 && l >= 3 && len(out[cur].Endpoints) > 0 {
				out[cur].Endpoints[len(out[cur].Endpoints)-1].PipeID = d[2]
			}
		case 0x30: // SuperSpeed endpoint companion
			if cur >= 0 && l >= 4 && len(out[cur].Endpoints) > 0 {
				ep := &out[cur].Endpoints[len(out[cur].Endpoints)-1]
				if ep.Attrs&3 == 2 && d[3]&0x1F != 0 {
					ep.MaxStreams = 1 << (d[3] & 0x1F)
				}
			}
		}
		i += l
	}
	return out, nil
}

// InterfaceInfos turns a device's mass-storage alternate settings into
// Infos, base giving what they share (bus, address, port, IDs, speed,
// strings): an interface with a Bulk-Only alternate setting gives that
// one only, with the UAS setting beside it (Info.UAS); one without gives
// each of its mass-storage settings, supported or not (Reason says why).
// Every backend lists readers by it.
func InterfaceInfos(base Info, alts []AltSetting) []Info {
	hasBOT := map[int]bool{}
	uas := map[int]UASSetting{}
	for _, a := range alts {
		if a.Class != ClassMassStorage {
			continue
		}
		if BOTSubclass(a.SubClass) && a.Protocol == ProtocolBOT {
			hasBOT[a.Interface] = true
		}
		if _, seen := uas[a.Interface]; !seen && a.SubClass == SubclassSCSI && a.Protocol == ProtocolUAS {
			uas[a.Interface] = uasSetting(a)
		}
	}
	var out []Info
	for _, a := range alts {
		if a.Class != ClassMassStorage {
			continue
		}
		isBOT := BOTSubclass(a.SubClass) && a.Protocol == ProtocolBOT
		if hasBOT[a.Interface] && !isBOT {
			continue
		}
		info := base
		info.Port = append([]int(nil), base.Port...)
		info.Config, info.Interface, info.AltSetting = a.Config, a.Interface, a.Alt
		info.SubClass, info.Protocol = a.SubClass, a.Protocol
		info.Supported, info.Reason = Classify(a.SubClass, a.Protocol)
		for _, ep := range a.Endpoints {
			if ep.Attrs&3 != 2 {
				continue
			}
			if ep.Address&0x80 != 0 {
				if info.BulkIn == 0 || ep.Address < info.BulkIn {
					info.BulkIn, info.BulkInMaxPacket = ep.Address, ep.MaxPacket
				}
			} else if info.BulkOut == 0 || ep.Address < info.BulkOut {
				info.BulkOut, info.BulkOutMaxPacket = ep.Address, ep.MaxPacket
			}
		}
		if info.Supported && (info.BulkIn == 0 || info.BulkOut == 0) {
			info.Supported = false
			info.Reason = "Bulk-Only interface without a bulk IN and a bulk OUT endpoint (broken descriptors)"
		}
		info.UAS = uas[a.Interface]
		if info.Supported && a.Protocol == ProtocolUAS && !info.UAS.Present() {
			info.Supported = false
			info.Reason = "UAS interface without its four pipes (command, status, data-in, data-out Pipe Usage descriptors)"
		}
		out = append(out, info)
	}
	return out
}

// uasSetting finds the four pipes of a UAS alternate setting by their
// Pipe Usage descriptors, and the streams its status and data pipes
// allow (the fewest of them).
func uasSetting(a AltSetting) UASSetting {
	u := UASSetting{Alt: a.Alt}
	streams := -1
	for _, ep := range a.Endpoints {
		if ep.Attrs&3 != 2 {
			continue
		}
		in := ep.Address&0x80 != 0
		switch {
		case ep.PipeID == 1 && !in:
			u.Command = ep.Address
			continue
		case ep.PipeID == 2 && in:
			u.Status = ep.Address
		case ep.PipeID == 3 && in:
			u.DataIn = ep.Address
		case ep.PipeID == 4 && !in:
			u.DataOut = ep.Address
		default:
			continue
		}
		if streams < 0 || ep.MaxStreams < streams {
			streams = ep.MaxStreams
		}
	}
	u.MaxStreams = max(streams, 0)
	return u
}
