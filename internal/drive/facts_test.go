package drive

import (
	"context"
	"os"
	"path/filepath"
	"testing"

	"github.com/usbflash/usbflash/pipeline/blockdev"
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
