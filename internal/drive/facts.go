package drive

import (
	"context"
	"fmt"

	"github.com/usbflash/usbflash/pipeline/blockdev"
	"github.com/usbflash/usbflash/usbms"
	"github.com/usbflash/usbflash/usbms/sim"
	"github.com/usbflash/usbflash/usbms/usbdev"
)

// What a target is beyond its blocks is optional, as a blockdev.Device's
// extra capabilities are: a caller asks Device.Dev for a fact with a type
// assertion on one of the small interfaces below, as a net/http handler
// asks its ResponseWriter for an http.Flusher. Only the devices that have
// the fact implement its interface. A LUN of a reader is handed over as
// itself (the *usbms.LUN is embedded, not wrapped in an interface value),
// so every capability the engine looks for stays visible beside its facts.
// A file: target's Dev is its *filedev.Device, whose DirectIO fact is its
// own.

// USBReader is a slot of a real reader (usb:): the reader's descriptors as
// USB enumerated it.
type USBReader interface {
	USBInfo() usbdev.Info
}

// ReaderSlot is a slot of a reader, real or simulated (usb:, sim:): who
// the reader says it is on USB, and the quirk flags in force for it, each
// with where it came from.
type ReaderSlot interface {
	ReaderID() ReaderID
	ReaderQuirks() usbms.ReaderQuirks
}

// ReaderID is how a reader names itself on USB.
type ReaderID struct {
	VID, PID, BCDDevice uint16
	Serial              string // "" when it has none
}

// String is the reader's VID:PID, as a quirk override names it.
func (r ReaderID) String() string { return fmt.Sprintf("%04x:%04x", r.VID, r.PID) }

// SCSI is a slot with a card spoken to over SCSI: the LUN, for what
// INQUIRY, the VPD pages and READ CAPACITY said of it and what was learned
// while opening it.
type SCSI interface {
	SCSI() *usbms.LUN
}

// KernelDisks is a slot of a usb: reader: the disks the kernel had made
// from the reader before usbflash claimed it (they are gone while it is
// claimed, and come back when it is let go), as the in-use check read
// them; none when they could not be read.
type KernelDisks interface {
	KernelDisks() []usbdev.KernelDisk
}

// Simulated is a slot of the simulated reader (sim:): its statistics and
// its modelled clock.
type Simulated interface {
	Sim() *sim.Device
}

// EmptySlot is a slot without a card, opened with Options.AllowNoMedium
// for its identity: a device of no blocks, whose slot says what INQUIRY
// told and why it holds no medium.
type EmptySlot interface {
	Slot() usbms.LUNSummary
}

// DirectIO is a file: target: whether it bypasses the page cache.
type DirectIO interface {
	Direct() bool
}

// reader is what every slot of a reader knows of it.
type reader struct {
	id     ReaderID
	quirks usbms.ReaderQuirks
}

func (r *reader) ReaderID() ReaderID               { return r.id }
func (r *reader) ReaderQuirks() usbms.ReaderQuirks { return r.quirks }

// slotMaker makes the devices of a reader's slots, with its facts.
type slotMaker interface {
	lun(*usbms.LUN) blockdev.Device
	empty(usbms.LUNSummary) blockdev.Device
}

// usbReader is a real reader.
type usbReader struct {
	reader
	info  usbdev.Info
	disks []usbdev.KernelDisk
}

func (r *usbReader) USBInfo() usbdev.Info             { return r.info }
func (r *usbReader) KernelDisks() []usbdev.KernelDisk { return r.disks }

func (r *usbReader) lun(l *usbms.LUN) blockdev.Device {
	return &usbLUN{LUN: l, usbReader: r}
}
func (r *usbReader) empty(s usbms.LUNSummary) blockdev.Device {
	return &usbEmpty{emptySlot: emptySlot{s}, usbReader: r}
}

// simReader is the simulated reader.
type simReader struct {
	reader
	dev *sim.Device
}

func (r *simReader) Sim() *sim.Device { return r.dev }

func (r *simReader) lun(l *usbms.LUN) blockdev.Device {
	return &simLUN{LUN: l, simReader: r}
}
func (r *simReader) empty(s usbms.LUNSummary) blockdev.Device {
	return &simEmpty{emptySlot: emptySlot{s}, simReader: r}
}

// readerOf describes the reader ep is: a real one by its descriptors
// (info, and the kernel's disks the open read), the simulator (info nil)
// by what it says of itself.
func readerOf(ep usbms.Endpoint, info *usbdev.Info, disks []usbdev.KernelDisk, rq usbms.ReaderQuirks) slotMaker {
	if info != nil {
		return &usbReader{reader: reader{id: ReaderID{VID: info.VID, PID: info.PID, BCDDevice: info.BCDDevice, Serial: info.Serial}, quirks: rq},
			info: *info, disks: disks}
	}
	r := &simReader{reader: reader{quirks: rq}}
	if id, ok := ep.(usbms.Identified); ok {
		r.id.VID, r.id.PID, r.id.BCDDevice = id.USBID()
		_, _, r.id.Serial = id.Identity()
	}
	r.dev, _ = ep.(*sim.Device)
	return r
}

// usbLUN and simLUN are a slot with a card: the LUN itself, with every
// method (and so every optional interface) it has, and its reader's
// facts.
type usbLUN struct {
	*usbms.LUN
	*usbReader
}

type simLUN struct {
	*usbms.LUN
	*simReader
}

func (l *usbLUN) SCSI() *usbms.LUN { return l.LUN }
func (l *simLUN) SCSI() *usbms.LUN { return l.LUN }

// emptySlot is a slot without a card: no blocks to read or write.
type emptySlot struct{ slot usbms.LUNSummary }

func (s emptySlot) Slot() usbms.LUNSummary { return s.slot }
func (emptySlot) BlockSize() int           { return 512 }
func (emptySlot) BlockCount() int64        { return 0 }
func (emptySlot) Sync(context.Context) error {
	return nil
}
func (emptySlot) ReadBlocks(context.Context, int64, []byte) error  { return ErrNoMedium }
func (emptySlot) WriteBlocks(context.Context, int64, []byte) error { return ErrNoMedium }

type usbEmpty struct {
	emptySlot
	*usbReader
}

type simEmpty struct {
	emptySlot
	*simReader
}
