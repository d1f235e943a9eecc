package drive

import (
	"fmt"

	"github.com/usbflash/usbflash/usbms"
	"github.com/usbflash/usbflash/usbms/usbdev"
)

// What list and info say of a reader or a target is read here, once, from
// the transport's and the USB backend's own types into drive's: a
// presenter (internal/ui/readerinfo, a web page) shows these facts and
// needs neither vocabulary.

// USBIdentity is what USB itself says of a reader, without asking it
// anything over SCSI.
type USBIdentity struct {
	Bus, Address          int
	PortPath              string // "1-2.3"
	VID, PID, BCDDevice   uint16
	Manufacturer, Product string
	Serial                string // "" when it has none
	Speed                 string // as USB names it ("high", "super")
	Interface             int    // the mass-storage interface's number
	Supported             bool   // it speaks a protocol usbflash drives
	Reason                string // why not, when it does not
	Target                string // the usb: target that selects it
}

func usbIdentity(info usbdev.Info) USBIdentity {
	return USBIdentity{Bus: info.Bus, Address: info.Address, PortPath: info.PortPath,
		VID: info.VID, PID: info.PID, BCDDevice: info.BCDDevice,
		Manufacturer: info.Manufacturer, Product: info.Product, Serial: info.Serial,
		Speed: info.Speed.String(), Interface: info.Interface, Supported: info.Supported, Reason: info.Reason,
		Target: USBName(info)}
}

// Transport is how a reader is driven: Bulk-Only or UAS, with UAS's
// streams and queue depth, and why Bulk-Only where UAS is offered too.
type Transport struct {
	Protocol   string // "BOT" or "UAS"; "" for a target that is no reader
	Streams    int
	QueueDepth int
	Why        string
}

// String says it as usbms says a transport: "UAS (16 streams, queue
// depth 32)".
func (t Transport) String() string {
	return usbms.TransportInfo{Protocol: t.Protocol, Streams: t.Streams, QueueDepth: t.QueueDepth, Why: t.Why}.String()
}

func transportOf(i usbms.TransportInfo) Transport {
	return Transport{Protocol: i.Protocol, Streams: i.Streams, QueueDepth: i.QueueDepth, Why: i.Why}
}

// Slot is what a reader's slot said of itself over SCSI: its card's
// identity, size and limits when it holds one (Medium), else what INQUIRY
// told and why it could not be opened (Err).
type Slot struct {
	LUN                       int
	Vendor, Product, Revision string
	Removable                 bool
	Serial                    string // the card's (VPD page 0x80); "" when it says none
	Medium                    bool   // a card is in and was opened: the sizes below are its
	BlockSize                 int
	Blocks                    int64
	WriteProtected            bool
	// MaxTransfer and OptimalTransfer are the card's limits in bytes; 0:
	// not reported.
	MaxTransfer, OptimalTransfer int64
	Memory                       string // what a write's buffers are (usbfs zero-copy, page-aligned)
	Transport                    Transport
	NoMedium                     bool  // the slot is empty
	Err                          error // why it could not be opened; nil with a Medium
}

// slotOf is an opened LUN's slot.
func slotOf(l *usbms.LUN) Slot {
	inq := l.Inquiry()
	bs := int64(l.BlockSize())
	return Slot{LUN: l.Number(), Vendor: inq.Vendor, Product: inq.Product, Revision: inq.Revision, Removable: inq.Removable,
		Serial: l.Serial(), Medium: true, BlockSize: l.BlockSize(), Blocks: l.BlockCount(), WriteProtected: l.WriteProtected(),
		MaxTransfer: l.MaxTransfer() * bs, OptimalTransfer: l.OptimalTransfer() * bs, Memory: l.MemoryKind(),
		Transport: transportOf(l.Transport())}
}

// summarySlot is a probed slot: its LUN's when it opened.
func summarySlot(s usbms.LUNSummary) Slot {
	if s.LUN != nil {
		return slotOf(s.LUN)
	}
	out := Slot{LUN: s.Number, NoMedium: s.NoMedium, Err: s.Err}
	if s.HasInquiry {
		out.Vendor, out.Product, out.Revision, out.Removable = s.Inquiry.Vendor, s.Inquiry.Product, s.Inquiry.Revision, s.Inquiry.Removable
	}
	return out
}

// Quirks is what usbflash does differently for a reader: the quirk flags
// in force and where each came from, and what it found out while driving
// it.
type Quirks struct {
	// Flags are the flags as the kernel writes them ("mr": letters, then
	// "+" and the names of flags without one).
	Flags string
	From  []QuirkFlag
	// Learned are facts found out while driving the reader that set no
	// flag.
	Learned []string
	// TransferCap is the largest READ or WRITE sent, in bytes, when the
	// quirks or the reader's failures cap it; 0: none.
	TransferCap int64
}

// QuirkFlag is one flag in force and where it came from.
type QuirkFlag struct {
	Flag   string // its name
	Letter string // its letter in usb-storage.quirks=, "" for none
	// Source is where it came from: "table", "vendor",
	// /sys/module/usb_storage/parameters/quirks, $USBFLASH_QUIRKS, "sim
	// quirks=", "learned", or with Setting the caller's own overrides.
	Source  string
	Setting bool
	Detail  string
}

// sourceLearned is the source of a flag usbflash switched on itself.
const sourceLearned = "learned"

// quirksOf describes a reader's quirks (rq; nil: none known) and, when a
// LUN of it is open, what was learned; nil when there is nothing to say.
func quirksOf(rq *usbms.ReaderQuirks, l *usbms.LUN) *Quirks {
	var flags usbms.Quirks
	out := &Quirks{}
	if rq != nil {
		flags = rq.Flags
		for _, f := range rq.From {
			out.From = append(out.From, QuirkFlag{Flag: f.Flag.Name(), Letter: letter(f.Flag), Source: string(f.Source),
				Setting: f.Source == usbms.QuirkSourceSetting, Detail: f.Detail})
		}
	}
	if l != nil {
		for _, x := range l.Learned() {
			if x.Flag != 0 && flags&x.Flag == 0 {
				flags |= x.Flag
				out.From = append(out.From, QuirkFlag{Flag: x.Flag.Name(), Letter: letter(x.Flag), Source: sourceLearned, Detail: x.What})
				continue
			}
			out.Learned = append(out.Learned, x.What)
		}
		out.TransferCap = l.TransferCap()
	}
	if flags == 0 && len(out.Learned) == 0 && out.TransferCap == 0 {
		return nil
	}
	out.Flags = flags.String()
	return out
}

func letter(f usbms.Quirks) string {
	if l := f.Letter(); l != 0 {
		return string(l)
	}
	return ""
}

// KernelDisk is a disk the kernel made of a reader's slot, as list shows
// it: its slot, identity, size, node and how the system uses it.
type KernelDisk struct {
	LUN           int
	Vendor, Model string
	Size          int64
	Node          string   // "/dev/sdb"
	InUse         []string // each use, as a person reads it ("/dev/sdb1 mounted on /media/boot")
}

// ReaderFacts is what list says of a reader: its USB identity, its quirks,
// and its slots: the kernel's disks when the kernel holds it, else every
// LUN probed.
type ReaderFacts struct {
	USB         USBIdentity
	Quirks      *Quirks
	KernelDisks []KernelDisk
	Slots       []Slot
}

// Facts are r's, in drive's words.
func (r Reader) Facts() ReaderFacts {
	out := ReaderFacts{USB: usbIdentity(r.Info)}
	var open *usbms.LUN
	for _, s := range r.Slots {
		if s.LUN != nil && open == nil {
			open = s.LUN
		}
		out.Slots = append(out.Slots, summarySlot(s))
	}
	out.Quirks = quirksOf(&r.Quirks, open)
	for _, d := range r.KernelDisks {
		k := KernelDisk{LUN: d.LUN, Vendor: d.Vendor, Model: d.Model, Size: d.Size, Node: d.Node}
		for _, u := range d.InUse {
			k.InUse = append(k.InUse, u.String())
		}
		out.KernelDisks = append(out.KernelDisks, k)
	}
	return out
}

// Facts is what info says of an opened target, each fact it has (the
// optional interfaces of its Dev, facts.go): nil for one it lacks.
type Facts struct {
	// USB is a usb: reader's identity.
	USB *USBIdentity
	// Sim is the identity a sim: reader gives itself.
	Sim *ReaderID
	// Quirks are a reader's (usb: or sim:), nil when it has none to say.
	Quirks *Quirks
	// Slot is a reader's slot, with its card or empty.
	Slot *Slot
	// Disk is a disk: target's disk.
	Disk *WholeDisk
	// Direct, of a file: target, says it bypasses the page cache.
	Direct *bool
}

// Describe is what d is besides its blocks, in drive's words.
func Describe(d *Device) Facts {
	var out Facts
	var lun *usbms.LUN
	if s, ok := d.Dev.(SCSI); ok {
		lun = s.SCSI()
		slot := slotOf(lun)
		out.Slot = &slot
	}
	if s, ok := d.Dev.(EmptySlot); ok {
		slot := summarySlot(s.Slot())
		out.Slot = &slot
	}
	if r, ok := d.Dev.(ReaderSlot); ok {
		if u, ok := d.Dev.(USBReader); ok {
			id := usbIdentity(u.USBInfo())
			out.USB = &id
		} else {
			id := r.ReaderID()
			out.Sim = &id
		}
		q := r.ReaderQuirks()
		out.Quirks = quirksOf(&q, lun)
	}
	if r, ok := d.Dev.(RawDisk); ok {
		disk := r.RawDisk()
		out.Disk = &disk
	} else if f, ok := d.Dev.(DirectIO); ok {
		direct := f.Direct()
		out.Direct = &direct
	}
	return out
}

// String is the reader's VID:PID, as a quirk override names it.
func (u USBIdentity) String() string { return fmt.Sprintf("%04x:%04x", u.VID, u.PID) }
