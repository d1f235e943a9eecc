package drive

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/usbflash/usbflash/internal/failure"
)

func TestParseTarget(t *testing.T) {
	tests := []struct {
		in   string
		want Spec
	}{
		{"usb:46f4:0001", Spec{Scheme: USB, vid: 0x46f4, pid: 1, hasVIDPID: true, index: -1, LUN: -1}},
		{"usb:46F4:0001:SER0/1", Spec{Scheme: USB, vid: 0x46f4, pid: 1, hasVIDPID: true, serial: "SER0", index: -1, LUN: 1}},
		{"usb:46f4:0001:a:b:c", Spec{Scheme: USB, vid: 0x46f4, pid: 1, hasVIDPID: true, serial: "a:b:c", index: -1, LUN: -1}},
		{"usb:3.12", Spec{Scheme: USB, bus: 3, addr: 12, hasBus: true, index: -1, LUN: -1}},
		{"usb:3.12/0", Spec{Scheme: USB, bus: 3, addr: 12, hasBus: true, index: -1, LUN: 0}},
		{"0", Spec{Scheme: USB, index: 0, LUN: -1}},
		{"2/3", Spec{Scheme: USB, index: 2, LUN: 3}},
		{"file:/dev/sdb", Spec{Scheme: File, Path: "/dev/sdb", index: -1, LUN: -1}},
		{"file:out.img?size=8MiB", Spec{Scheme: File, Path: "out.img", fileSize: 8 << 20, index: -1, LUN: -1}},
		{"disk:/dev/sdb", Spec{Scheme: Disk, Path: "/dev/sdb", index: -1, LUN: -1}},
		{"disk:/dev/rdisk4", Spec{Scheme: Disk, Path: "/dev/rdisk4", index: -1, LUN: -1}},
		{`disk:\\.\PhysicalDrive2`, Spec{Scheme: Disk, Path: `\\.\PhysicalDrive2`, index: -1, LUN: -1}},
		{"sim:card.img", Spec{Scheme: Sim, Path: "card.img", spec: "card.img", index: -1, LUN: -1}},
		{"sim:/tmp/c.img?size=64MiB&speed=30MB/s", Spec{Scheme: Sim, Path: "/tmp/c.img", spec: "/tmp/c.img?size=64MiB&speed=30MB/s", index: -1, LUN: -1}},
		{"sim:c.img?luns=2&lun=1&wp=1", Spec{Scheme: Sim, Path: "c.img", spec: "c.img?luns=2&wp=1", index: -1, LUN: 1}},
		{"sim:c.img?lun=0", Spec{Scheme: Sim, Path: "c.img", spec: "c.img", index: -1, LUN: 0}},
	}
	for _, tt := range tests {
		got, err := Parse(tt.in)
		if err != nil {
			t.Errorf("Parse(%q): %v", tt.in, err)
			continue
		}
		tt.want.Raw = tt.in
		if got != tt.want {
			t.Errorf("Parse(%q) = %+v, want %+v", tt.in, got, tt.want)
		}
	}
}

// TestParseSimSlot: sim:PATH/N, the name usbflash prints for slot N of a
// simulated reader, can be typed back in.
func TestParseSimSlot(t *testing.T) {
	dir := t.TempDir()
	card := filepath.Join(dir, "ml.img")
	os.WriteFile(card, make([]byte, 1<<20), 0o644)
	os.Mkdir(filepath.Join(dir, "cards"), 0o755)
	slotFile := filepath.Join(dir, "cards", "1")
	os.WriteFile(slotFile, make([]byte, 1<<20), 0o644)
	tests := []struct {
		in   string
		path string
		lun  int
		spec string
	}{
		{"sim:" + card + "/1", card, 1, card + "?luns=2"},
		{"sim:" + card + "/0?speed=30MB/s", card, 0, card + "?speed=30MB/s&luns=1"},
		{"sim:" + card + "/1?luns=4", card, 1, card + "?luns=4"},
		{"sim:" + card + "/1?lun=1", card, 1, card + "?luns=2"},
		{"sim:" + slotFile, slotFile, -1, slotFile},                                       // a file named 1 is a file
		{"sim:" + dir + "/new/1?size=1MiB", dir + "/new/1", -1, dir + "/new/1?size=1MiB"}, // no card at new either
		{"sim:" + card + "/16", card + "/16", -1, card + "/16"},                           // not a slot number
	}
	for _, tt := range tests {
		got, err := Parse(tt.in)
		if err != nil || got.Path != tt.path || got.LUN != tt.lun || got.spec != tt.spec {
			t.Errorf("Parse(%q) = path %q, LUN %d, spec %q, %v; want %q, %d, %q", tt.in, got.Path, got.LUN, got.spec, err, tt.path, tt.lun, tt.spec)
		}
	}
	if _, err := Parse("sim:" + card + "/1?lun=2"); failure.Of(err) != failure.Usage {
		t.Errorf("two slots: %v, want a usage error", err)
	}
}

func TestParseTargetErrors(t *testing.T) {
	for _, in := range []string{
		"", "/dev/sdb", "sdb", "file:", "file:x?size=1000", "file:x?speed=1", "sim:", "sim:?size=1MiB", "sim:c.img?lun=16", "sim:c.img?lun=x", "usb:", "usb:46f4",
		"usb:zzzz:0001", "usb:46f4:0001:", "usb:1.0", "usb:1.x", "0/16", "0/x", "usb:46f4:0001/99",
		"disk:", "disk:/dev/sdb?size=1GiB", `\\.\PhysicalDrive2`,
	} {
		_, err := Parse(in)
		if failure.Of(err) != failure.Usage {
			t.Errorf("Parse(%q) = %v, want a usage error", in, err)
		}
	}
}

// TestPathTarget: a path typed alone is refused, and the refusal names
// the target it likely means: the whole disk for a disk's node, the file
// otherwise.
func TestPathTarget(t *testing.T) {
	for in, want := range map[string]string{
		"/dev/sdb": "disk:/dev/sdb", "/dev/rdisk4": "disk:/dev/rdisk4", `\\.\PhysicalDrive2`: `disk:\\.\PhysicalDrive2`,
		"./out.img": "file:./out.img", "/home/pi/out.img": "file:/home/pi/out.img",
	} {
		_, err := Parse(in)
		if !errors.Is(err, ErrPath) || !strings.Contains(err.Error(), "which a target names as "+want) {
			t.Errorf("Parse(%q) = %v, want it to name %s", in, err, want)
		}
	}
}
