package cardbench

import (
	"context"
	"testing"

	"github.com/usbflash/usbflash/internal/drive"
	"github.com/usbflash/usbflash/pipeline/blockdev"
	"github.com/usbflash/usbflash/usbms"
	"github.com/usbflash/usbflash/usbms/sim"
	"github.com/usbflash/usbflash/usbms/usbdev"
)

// usbSlot is a slot of a USB reader as drive gives it: its LUN, and the
// disks the kernel had made from the reader before the claim.
type usbSlot struct {
	*usbms.LUN
	disks []usbdev.KernelDisk
}

func (s usbSlot) SCSI() *usbms.LUN                 { return s.LUN }
func (s usbSlot) KernelDisks() []usbdev.KernelDisk { return s.disks }

// TestKernelDisk: a preserved region's restore command names the kernel's
// disk of the slot benched, the one of its LUN among the reader's, and
// nothing when that is not known.
func TestKernelDisk(t *testing.T) {
	dev, err := sim.New(sim.Config{LUNs: []sim.LUN{{Blocks: 2048}, {Blocks: 2048}}})
	if err != nil {
		t.Fatal(err)
	}
	defer dev.Close()
	tr := usbms.NewTransport(dev, usbms.TransportOptions{Name: "sim"})
	lun1, err := usbms.OpenLUN(context.Background(), tr, 1, usbms.LUNOptions{})
	if err != nil {
		t.Fatal(err)
	}
	disks := []usbdev.KernelDisk{{Node: "/dev/sdb", LUN: 0}, {Node: "/dev/sdc", LUN: 1}}
	for _, tc := range []struct {
		name string
		dev  blockdev.Device
		want string
	}{
		{"slot 1 of a usb: reader", usbSlot{lun1, disks}, "/dev/sdc"},
		{"its disks not read", usbSlot{lun1, nil}, ""},
		{"no disk of its LUN", usbSlot{lun1, disks[:1]}, ""},
		{"no usb: slot", lun1, ""},
	} {
		if got := kernelDisk(&drive.Device{Name: "usb:1-2/1", Dev: tc.dev}); got != tc.want {
			t.Errorf("%s: %q, want %q", tc.name, got, tc.want)
		}
	}
}
