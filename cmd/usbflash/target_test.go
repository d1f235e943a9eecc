package main

import (
	"errors"
	"testing"
)

func TestParseTarget(t *testing.T) {
	tests := []struct {
		in   string
		want target
	}{
		{"usb:46f4:0001", target{kind: targetUSB, vid: 0x46f4, pid: 1, hasVIDPID: true, index: -1, lun: -1}},
		{"usb:46F4:0001:SER0/1", target{kind: targetUSB, vid: 0x46f4, pid: 1, hasVIDPID: true, serial: "SER0", index: -1, lun: 1}},
		{"usb:46f4:0001:a:b:c", target{kind: targetUSB, vid: 0x46f4, pid: 1, hasVIDPID: true, serial: "a:b:c", index: -1, lun: -1}},
		{"usb:3.12", target{kind: targetUSB, bus: 3, addr: 12, hasBus: true, index: -1, lun: -1}},
		{"usb:3.12/0", target{kind: targetUSB, bus: 3, addr: 12, hasBus: true, index: -1, lun: 0}},
		{"0", target{kind: targetUSB, index: 0, lun: -1}},
		{"2/3", target{kind: targetUSB, index: 2, lun: 3}},
		{"file:/dev/sdb", target{kind: targetFile, path: "/dev/sdb", spec: "/dev/sdb", index: -1, lun: -1}},
		{"file:out.img?size=8MiB", target{kind: targetFile, path: "out.img", spec: "out.img?size=8MiB", fileSize: 8 << 20, index: -1, lun: -1}},
		{"sim:card.img", target{kind: targetSim, path: "card.img", spec: "card.img", index: -1, lun: -1}},
		{"sim:/tmp/c.img?size=64MiB&speed=30MB/s", target{kind: targetSim, path: "/tmp/c.img", spec: "/tmp/c.img?size=64MiB&speed=30MB/s", index: -1, lun: -1}},
		{"sim:c.img?luns=2&lun=1&wp=1", target{kind: targetSim, path: "c.img", spec: "c.img?luns=2&wp=1", index: -1, lun: 1}},
		{"sim:c.img?lun=0", target{kind: targetSim, path: "c.img", spec: "c.img", index: -1, lun: 0}},
	}
	for _, tt := range tests {
		got, err := parseTarget(tt.in)
		if err != nil {
			t.Errorf("parseTarget(%q): %v", tt.in, err)
			continue
		}
		tt.want.raw = tt.in
		if got != tt.want {
			t.Errorf("parseTarget(%q) = %+v, want %+v", tt.in, got, tt.want)
		}
	}
}

func TestParseTargetErrors(t *testing.T) {
	for _, in := range []string{
		"", "/dev/sdb", "sdb", "file:", "file:x?size=1000", "file:x?speed=1", "sim:", "sim:?size=1MiB", "sim:c.img?lun=16", "sim:c.img?lun=x", "usb:", "usb:46f4",
		"usb:zzzz:0001", "usb:46f4:0001:", "usb:1.0", "usb:1.x", "0/16", "0/x", "usb:46f4:0001/99",
	} {
		_, err := parseTarget(in)
		var ue *usageError
		if !errors.As(err, &ue) {
			t.Errorf("parseTarget(%q) = %v, want a usage error", in, err)
		}
	}
}
