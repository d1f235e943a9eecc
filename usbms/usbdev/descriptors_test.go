package usbdev

import "testing"

// descBOTAndUAS is a UAS reader's configuration: interface 0 alt 0 BOT
// (endpoints 0x81, 0x02, 512), alt 1 UAS.
var descBOTAndUAS = []byte{
	18, 1, 0x00, 0x02, 0, 0, 0, 64, 0xf4, 0x46, 0x01, 0, 0, 0, 1, 2, 3, 1,
	9, 2, 55, 0, 1, 1, 0, 0x80, 50,
	9, 4, 0, 0, 2, 8, 6, 0x50, 0,
	7, 5, 0x81, 2, 0x00, 0x02, 0,
	7, 5, 0x02, 2, 0x00, 0x02, 0,
	9, 4, 0, 1, 2, 8, 6, 0x62, 0,
	7, 5, 0x83, 2, 0x00, 0x02, 0,
	7, 5, 0x04, 2, 0x00, 0x02, 0,
}

func TestParseDescriptorsBad(t *testing.T) {
	bad := append([]byte(nil), descBOTAndUAS...)
	bad[18+9] = 0 // a zero-length descriptor
	if _, err := ParseDescriptors(bad, 1); err == nil {
		t.Error("zero-length descriptor accepted")
	}
	if _, err := ParseDescriptors(descBOTAndUAS[:10], 1); err == nil {
		t.Error("short device descriptor accepted")
	}
	alts, err := ParseDescriptors(descBOTAndUAS, 2)
	if err != nil || len(alts) != 0 {
		t.Errorf("configuration 2: %v %v", alts, err)
	}
}

// uasEP is a SuperSpeed bulk endpoint with its companion (streams as
// 2^bits) and UAS Pipe Usage descriptor.
func uasEP(addr, pipe, streamBits byte) []byte {
	return []byte{7, 5, addr, 2, 0x00, 0x04, 0, 6, 0x30, 15, streamBits, 0, 0, 4, 0x24, pipe, 0}
}

func TestInfosUAS(t *testing.T) {
	dev := []byte{18, 1, 0x00, 0x03, 0, 0, 0, 9, 0xf4, 0x46, 0x03, 0x00, 0, 0, 1, 2, 3, 1}
	conf := func(ifaces ...[]byte) []byte {
		b := []byte{9, 2, 0, 0, 1, 1, 0, 0xC0, 0}
		for _, i := range ifaces {
			b = append(b, i...)
		}
		b[2], b[3] = byte(len(b)), byte(len(b)>>8)
		return append(append([]byte(nil), dev...), b...)
	}
	uasAlt := func(alt byte, streamBits byte) []byte {
		b := []byte{9, 4, 0, alt, 4, 8, 6, 0x62, 0}
		// The pipes out of address order: usage, not address, names them.
		for _, ep := range [][]byte{uasEP(0x04, 4, streamBits), uasEP(0x83, 3, streamBits), uasEP(0x01, 1, 0), uasEP(0x82, 2, streamBits)} {
			b = append(b, ep...)
		}
		return b
	}
	bot := []byte{9, 4, 0, 0, 2, 8, 6, 0x50, 0, 7, 5, 0x81, 2, 0, 4, 0, 7, 5, 0x02, 2, 0, 4, 0}
	noPipes := []byte{9, 4, 0, 0, 2, 8, 6, 0x62, 0, 7, 5, 0x81, 2, 0, 4, 0, 7, 5, 0x02, 2, 0, 4, 0}
	full := UASSetting{Command: 0x01, Status: 0x82, DataIn: 0x83, DataOut: 0x04, MaxStreams: 16}
	cases := []struct {
		name      string
		desc      []byte
		protocol  uint8
		supported bool
		uas       UASSetting
	}{
		{"QEMU usb-uas at SuperSpeed", conf(uasAlt(0, 4)), ProtocolUAS, true, full},
		{"UAS at high speed: no streams", conf(uasAlt(0, 0)), ProtocolUAS, true, UASSetting{Command: 0x01, Status: 0x82, DataIn: 0x83, DataOut: 0x04}},
		{"BOT alt 0, UAS alt 1", conf(bot, uasAlt(1, 5)), ProtocolBOT, true, UASSetting{Alt: 1, Command: 0x01, Status: 0x82, DataIn: 0x83, DataOut: 0x04, MaxStreams: 32}},
		{"UAS without Pipe Usage descriptors", conf(noPipes), ProtocolUAS, false, UASSetting{}},
	}
	for _, c := range cases {
		alts, err := ParseDescriptors(c.desc, 1)
		if err != nil {
			t.Fatalf("%s: %v", c.name, err)
		}
		infos := InterfaceInfos(Info{}, alts)
		if len(infos) != 1 {
			t.Fatalf("%s: %d infos, want 1", c.name, len(infos))
		}
		i := infos[0]
		if i.Protocol != c.protocol || i.Supported != c.supported || i.UAS != c.uas || i.UAS.Present() != (c.uas.Command != 0) {
			t.Errorf("%s: protocol %#x supported %v (%s) UAS %+v; want %#x %v %+v", c.name, i.Protocol, i.Supported, i.Reason, i.UAS, c.protocol, c.supported, c.uas)
		}
	}
}
