package web

import (
	"testing"

	"github.com/usbflash/usbflash/internal/ui/readerinfo"
)

// TestSlots: list's readers and info's targets as the page's slots: one
// per LUN, a reader of several named with its LUN, an empty slot without
// a size, a disk in use, a reader that could not be asked.
func TestSlots(t *testing.T) {
	readers := []readerinfo.Reader{
		{Target: "usb:0bda:0158:X", Manufacturer: "Realtek", Product: "USB3 Reader", Supported: true, LUNs: []readerinfo.LUN{
			{LUN: 0, Medium: true, Bytes: 32e9, Vendor: "SD", Product: "Card", WriteProtected: true},
			{LUN: 1, Error: "no medium"},
		}},
		{Target: "usb:1.4", VID: "058f", PID: "6387", Supported: true, LUNs: []readerinfo.LUN{{Medium: true, Bytes: 8e9, Mounted: []string{"/media/stick"}}}},
		{Target: "usb:1.5", Product: "Odd", Supported: false, Reason: "not a mass-storage interface"},
	}
	want := []Slot{
		{Target: "usb:0bda:0158:X/0", Reader: "Realtek USB3 Reader", Medium: true, Bytes: 32e9, WriteProtected: true, Card: "SD Card"},
		{Target: "usb:0bda:0158:X/1", Reader: "Realtek USB3 Reader"},
		{Target: "usb:1.4", Reader: "058f:6387", Medium: true, Bytes: 8e9, InUse: "/media/stick"},
		{Target: "usb:1.5", Reader: "Odd", Error: "not a mass-storage interface"},
	}
	got := SlotsOfReaders(readers)
	if len(got) != len(want) {
		t.Fatalf("%d slots, want %d: %+v", len(got), len(want), got)
	}
	for i := range want {
		if got[i] != want[i] {
			t.Errorf("slot %d: %+v, want %+v", i, got[i], want[i])
		}
	}
	disks := SlotsOfDisks([]readerinfo.Disk{{Target: "disk:/dev/sdb", Node: "/dev/sdb", Name: "Generic SD", Bus: "USB", Bytes: 16e9, Mounted: []string{"/dev/sdb1 on /media/boot"}}})
	if len(disks) != 1 || disks[0] != (Slot{Target: "disk:/dev/sdb", Reader: "USB disk /dev/sdb", Medium: true, Bytes: 16e9, Card: "Generic SD", InUse: "/dev/sdb1 on /media/boot"}) {
		t.Errorf("disk slots %+v", disks)
	}
	sim := SlotOfTarget(readerinfo.Target{Target: "sim:a.img", SimReader: &readerinfo.SimReader{VID: "0bda", PID: "0158", Serial: "S1"},
		LUN: &readerinfo.LUN{Medium: true, Bytes: 1 << 20}})
	if sim != (Slot{Target: "sim:a.img", Reader: "simulated reader 0bda:0158, serial S1", Medium: true, Bytes: 1 << 20}) {
		t.Errorf("sim slot %+v", sim)
	}
}
