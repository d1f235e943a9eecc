package usbfs

import "fmt"

// altSetting is one interface alternate setting from the raw descriptors.
type altSetting struct {
	Config, Interface, Alt    int
	Class, SubClass, Protocol uint8
	Endpoints                 []endpointDesc
}

type endpointDesc struct {
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

// parseDescriptors reads sysfs's `descriptors` file: the device descriptor
// followed by the configuration descriptors with their interfaces and
// endpoints, as the device sent them. It returns every alternate setting
// of configuration cfg (every configuration when cfg is 0).
func parseDescriptors(b []byte, cfg int) ([]altSetting, error) {
	if len(b) < 18 || b[1] != 1 {
		return nil, fmt.Errorf("descriptors: no device descriptor")
	}
	var out []altSetting
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
				out = append(out, altSetting{Config: curCfg, Interface: int(d[2]), Alt: int(d[3]),
					Class: d[5], SubClass: d[6], Protocol: d[7]})
				cur = len(out) - 1
			}
		case 5: // endpoint
			if l < 7 {
				return nil, fmt.Errorf("descriptors: short endpoint descriptor at offset %d", i)
			}
			if cur >= 0 {
				out[cur].Endpoints = append(out[cur].Endpoints, endpointDesc{Address: d[2], Attrs: d[3],
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
