//go:build linux || darwin || windows

package libusbdl

import (
	"errors"
	"os"
	"testing"

	"github.com/usbflash/usbflash/usbms/usbdev"
)

// A locationID names the port path libusb's macOS backend gives: the bus
// in its top byte, a port per nibble.
func TestPortPathOf(t *testing.T) {
	for loc, want := range map[int64]string{0x02110000: "2-1.1", 0x14100000: "20-1", 0x14a23000: "20-10.2.3", 0x01000000: "usb1"} {
		if got := portPathOf(loc); got != want {
			t.Errorf("%#x: %s, want %s", loc, got, want)
		}
	}
}

// macOS's view of a reader's disks, from an ioreg -a output (the card
// reader at 2-1.1 with its card disk4, a keyboard): the reader's whole
// disk with the volumes of it that are mounted, and a refusal by the
// check every backend makes; a reader without a card has no disk.
func TestDarwinDisks(t *testing.T) {
	out, err := os.ReadFile("testdata/ioreg-usb.plist")
	if err != nil {
		t.Fatal(err)
	}
	v := darwinDisks{
		ioreg: func() ([]byte, error) { return out, nil },
		mounts: func() ([]mount, error) {
			return []mount{{"/dev/disk1s1", "/", "apfs"}, {"/dev/disk4s1", "/Volumes/boot", "msdos"},
				{"/dev/disk40s1", "/Volumes/Other", "msdos"}, {"map auto_home", "/System/Volumes/Data/home", "autofs"}}, nil
		},
	}
	disks, err := v.InterfaceDisks("2-1.1:1.0")
	if err != nil {
		t.Fatal(err)
	}
	if len(disks) != 1 || disks[0].Node != "/dev/disk4" || len(disks[0].InUse) != 1 ||
		disks[0].InUse[0].MountPoint != "/Volumes/boot" || disks[0].InUse[0].Node != "/dev/disk4s1" {
		t.Fatalf("disks %+v", disks)
	}
	info := usbdev.Info{PortPath: "2-1.1", Config: 1, VID: 0x0bda, PID: 0x8168}
	if err := usbdev.CheckKernelDisks(v, info, usbdev.OpenOptions{}); !errors.Is(err, usbdev.ErrInUse) {
		t.Errorf("a mounted volume: %v, want ErrInUse", err)
	}
	if err := usbdev.CheckKernelDisks(v, info, usbdev.OpenOptions{Force: true}); err != nil {
		t.Errorf("forced: %v", err)
	}
	if disks, err := v.InterfaceDisks("20-1:1.0"); err != nil || len(disks) != 0 {
		t.Errorf("the keyboard: %v %v", disks, err)
	}
	bad := darwinDisks{ioreg: func() ([]byte, error) { return []byte("<plist><dict><key>a</key></dict></plist>"), nil }}
	if _, err := bad.InterfaceDisks("2-1.1:1.0"); err == nil {
		t.Error("a broken plist was read")
	}
}

// The plist reader's values.
func TestParsePlist(t *testing.T) {
	v, err := parsePlist([]byte(`<?xml version="1.0"?><plist version="1.0"><dict><key>n</key><integer>-3</integer>` +
		`<key>u</key><integer>18446744073709551615</integer><key>r</key><real>1.5</real><key>t</key><true/>` +
		`<key>a</key><array><string>x</string><false/></array><key>d</key><data>AAE=</data></dict></plist>`))
	if err != nil {
		t.Fatal(err)
	}
	m := v.(map[string]any)
	a := m["a"].([]any)
	if m["n"] != int64(-3) || m["u"] != int64(-1) || m["r"] != 1.5 || m["t"] != true || a[0] != "x" || a[1] != false || m["d"] != "AAE=" {
		t.Errorf("%#v", m)
	}
}
