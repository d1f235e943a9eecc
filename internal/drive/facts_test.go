package drive

import (
	"context"
	"os"
	"path/filepath"
	"testing"

	"github.com/usbflash/usbflash/pipeline/blockdev"
	"github.com/usbflash/usbflash/usbms"
	"github.com/usbflash/usbflash/usbms/sim"
	"github.com/usbflash/usbflash/usbms/usbdev"
)

// TestFacts: an opened target's facts are optional interfaces of its Dev,
// implemented by the targets that have them and by no other, and a slot
// of a reader hands the engine every capability of its LUN beside them.
func TestFacts(t *testing.T) {
	dir := t.TempDir()
	file := filepath.Join(dir, "disk.img")
	if err := os.WriteFile(file, make([]byte, 1<<20), 0o644); err != nil {
		t.Fatal(err)
	}
	type facts struct{ usb, reader, scsi, disks, sim, empty, direct, engine bool }
	for _, tc := range []struct {
		name, target string
		opts         Options
		want         facts
		id           ReaderID
	}{
		{"sim: card", "sim:" + filepath.Join(dir, "c.img") + "?size=1MiB&vid=0bda&pid=0158&bcd=5888&serial=XYZ", Options{},
			facts{reader: true, scsi: true, sim: true, engine: true}, ReaderID{VID: 0x0bda, PID: 0x0158, BCDDevice: 0x5888, Serial: "XYZ"}},
		{"sim: empty slot", "sim:" + filepath.Join(dir, "e.img") + "?size=1MiB&nomedium=1&vid=1234&pid=5678&bcd=0100&serial=S1", Options{ReadOnly: true, AllowNoMedium: true},
			facts{reader: true, sim: true, empty: true}, ReaderID{VID: 0x1234, PID: 0x5678, BCDDevice: 0x0100, Serial: "S1"}},
		{"file:", "file:" + file, Options{}, facts{direct: true}, ReaderID{}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			spec, err := Parse(tc.target)
			if err != nil {
				t.Fatal(err)
			}
			d, err := Open(context.Background(), spec, tc.opts)
			if err != nil {
				t.Fatal(err)
			}
			defer d.Close()
			var got facts
			_, got.usb = d.Dev.(USBReader)
			r, isReader := d.Dev.(ReaderSlot)
			got.reader = isReader
			_, got.scsi = d.Dev.(SCSI)
			_, got.disks = d.Dev.(KernelDisks)
			s, isSim := d.Dev.(Simulated)
			got.sim = isSim && s.Sim() != nil
			_, got.empty = d.Dev.(EmptySlot)
			_, got.direct = d.Dev.(DirectIO)
			_, allocates := d.Dev.(blockdev.BufferAllocator)
			_, limits := d.Dev.(blockdev.TransferLimiter)
			_, protects := d.Dev.(blockdev.WriteProtector)
			_, ejects := d.Dev.(blockdev.Ejector)
			got.engine = allocates && limits && protects && ejects
			if got != tc.want {
				t.Errorf("facts %+v, want %+v", got, tc.want)
			}
			if isReader && r.ReaderID() != tc.id {
				t.Errorf("reader %#v, want %#v", r.ReaderID(), tc.id)
			}
			if sc, ok := d.Dev.(SCSI); ok && (sc.SCSI().BlockCount() != d.Dev.BlockCount() || d.Capacity() != 1<<20) {
				t.Errorf("the LUN has %d blocks, the device %d", sc.SCSI().BlockCount(), d.Dev.BlockCount())
			}
		})
	}
}

// kernelSlot is a slot of a USB reader: its LUN, and the disks the kernel
// had made from the reader before the claim.
type kernelSlot struct {
	*usbms.LUN
	disks []usbdev.KernelDisk
}

func (s kernelSlot) SCSI() *usbms.LUN                 { return s.LUN }
func (s kernelSlot) KernelDisks() []usbdev.KernelDisk { return s.disks }

// TestNode: where a program other than usbflash reaches a target's blocks
// (what a restore command writes to): a file: target's file, a simulated
// card's, a disk's node; of a usb: slot the kernel's disk of its LUN
// among the reader's, claimed, and nothing when that is not known.
func TestNode(t *testing.T) {
	t.Parallel()
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
		name    string
		dev     *Device
		want    string
		claimed bool
	}{
		{"slot 1 of a usb: reader", &Device{Dev: kernelSlot{lun1, disks}}, "/dev/sdc", true},
		{"its disks not read", &Device{Dev: kernelSlot{lun1, nil}}, "", false},
		{"no disk of its LUN", &Device{Dev: kernelSlot{lun1, disks[:1]}}, "", false},
		{"no usb: slot", &Device{Dev: lun1}, "", false},
	} {
		if got, claimed := tc.dev.Node(); got != tc.want || claimed != tc.claimed {
			t.Errorf("%s: %q (claimed %v), want %q (%v)", tc.name, got, claimed, tc.want, tc.claimed)
		}
	}
	dir := t.TempDir()
	for _, target := range []string{"file:" + filepath.Join(dir, "c.img") + "?size=1MiB", "sim:" + filepath.Join(dir, "s.img") + "?size=1MiB"} {
		spec, err := Parse(target)
		if err != nil {
			t.Fatal(err)
		}
		d, err := Open(context.Background(), spec, Options{})
		if err != nil {
			t.Fatal(err)
		}
		if got, claimed := d.Node(); got != spec.Path || claimed {
			t.Errorf("%s: %q (claimed %v), want %s", target, got, claimed, spec.Path)
		}
		d.Close()
	}
}
