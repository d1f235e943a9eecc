package readerinfo

import (
	"bytes"
	"encoding/json"
	"reflect"
	"strings"
	"testing"

	"github.com/usbflash/usbflash/internal/drive"
	"github.com/usbflash/usbflash/usbms"
	"github.com/usbflash/usbflash/usbms/usbdev"
)

// TestListShowsQuirks: list's row of a reader names its quirk flags, in
// the table and in JSON, with their sources (the program's own setting by
// the name it is given) and its bcdDevice.
func TestListShowsQuirks(t *testing.T) {
	t.Parallel()
	info := usbdev.Info{VID: 0x07c4, PID: 0xa4a5, BCDDevice: 0x0100, Bus: 1, Address: 4, PortPath: "1-2", Supported: true}
	r := drive.Reader{Info: info, Name: "usb:1.4", Quirks: usbms.ResolveQuirks(0x07c4, 0xa4a5, 0x0100, usbms.QuirkOverrides{Setting: "07c4:a4a5:w"}, ""),
		KernelDisks: []usbdev.KernelDisk{{LUN: 0, Node: "/dev/sdz", Size: 1 << 30}}}
	rep := DescribeReader(r, Words{Setting: "--quirks"})
	if rep.BCDDevice != "0100" || rep.Quirks == nil || rep.Quirks.Flags != "w" || rep.Quirks.From[0].Source != "--quirks" || rep.Quirks.From[0].Letter != "w" {
		t.Errorf("list row %+v, quirks %+v", rep, rep.Quirks)
	}
	var out bytes.Buffer
	PrintReaders(&out, []Reader{rep})
	if !strings.Contains(out.String(), "quirks w") {
		t.Errorf("list table:\n%s", out.String())
	}
	b, _ := json.Marshal(rep)
	if !strings.Contains(string(b), `"quirks":{"flags":"w","from":[{"flag":"NO_WP_DETECT","letter":"w","source":"--quirks","detail":"07c4:a4a5:w"}]}`) {
		t.Errorf("list JSON %s", b)
	}
}

// TestPrintEscapesDeviceStrings: a reader's USB strings and a LUN's SCSI
// inquiry strings are the device's to choose; list and info show their
// control characters escaped, and the columns stay aligned.
func TestPrintEscapesDeviceStrings(t *testing.T) {
	t.Parallel()
	hostile := "ACME\x1b[2J\x1b]0;owned\x07"
	tests := []struct {
		name  string
		print func(*bytes.Buffer)
	}{
		{"list", func(b *bytes.Buffer) {
			PrintReaders(b, []Reader{{Manufacturer: hostile, Product: "Reader\r", Serial: hostile, Supported: true, Target: "usb:1.4",
				LUNs: []LUN{{Vendor: hostile, Product: "SD\u009b31m", Medium: true, Bytes: 1 << 30}}}})
		}},
		{"info", func(b *bytes.Buffer) {
			PrintTarget(b, Target{Target: "usb:1.4", USB: &Reader{Manufacturer: hostile, Product: "Reader\r", Serial: hostile},
				SimReader: &SimReader{Serial: hostile}, LUN: &LUN{Vendor: hostile, Product: "SD\u009b31m", Revision: "\x1bc", Serial: hostile}})
		}},
		{"list's disks", func(b *bytes.Buffer) {
			PrintDisks(b, []Disk{{Target: "disk:/dev/rdisk4", Name: hostile + "\r", Bus: "USB\u009b", Mounted: []string{"/dev/disk4s1 on /Volumes/" + hostile}}})
		}},
		{"info of a disk", func(b *bytes.Buffer) {
			PrintTarget(b, Target{Target: "disk:/dev/rdisk4", Disk: &Disk{Name: hostile + "\r", Bus: "USB\u009b"}})
		}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			var b bytes.Buffer
			tc.print(&b)
			if strings.ContainsAny(b.String(), "\x1b\x07\r\u009b") {
				t.Errorf("a control character reached the terminal:\n%q", b.String())
			}
			if !strings.Contains(b.String(), `ACME\x1b[2J\x1b]0;owned\x07`) {
				t.Errorf("the device's string is not shown escaped:\n%s", b.String())
			}
		})
	}
}

func TestDisks(t *testing.T) {
	disks := []Disk{
		DescribeDisk(drive.WholeDisk{Target: "disk:/dev/rdisk4", Node: "/dev/rdisk4", Name: "Generic- SD/MMC", Bus: "USB", Size: 31914983424, BlockSize: 512,
			Whole: true, Removable: true, Volumes: []drive.Volume{{Node: "/dev/disk4s1", MountPoint: "/Volumes/bootfs"}}}),
		DescribeDisk(drive.WholeDisk{Target: "disk:/dev/rdisk5", Node: "/dev/rdisk5", Name: "SDXC Reader", Bus: "Secure Digital", Whole: true, Internal: true, Removable: true}),
	}
	want := Disk{Target: "disk:/dev/rdisk4", Node: "/dev/rdisk4", Name: "Generic- SD/MMC", Bus: "USB", Bytes: 31914983424, BlockSize: 512,
		Removable: true, Mounted: []string{"/dev/disk4s1 on /Volumes/bootfs"}}
	if !reflect.DeepEqual(disks[0], want) {
		t.Errorf("DescribeDisk = %+v, want %+v", disks[0], want)
	}
	var out bytes.Buffer
	PrintDisks(&out, disks)
	wantText := "TARGET            BUS             NAME             SIZE     NOTES\n" +
		"disk:/dev/rdisk4  USB             Generic- SD/MMC  31.9 GB  mounted: /dev/disk4s1 on /Volumes/bootfs\n" +
		"disk:/dev/rdisk5  Secure Digital  SDXC Reader      -        internal slot\n"
	if out.String() != wantText {
		t.Errorf("PrintDisks:\n%s\nwant\n%s", out.String(), wantText)
	}
}
