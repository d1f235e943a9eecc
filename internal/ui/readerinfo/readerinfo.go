// Package readerinfo says what is known about card readers and targets,
// as list and info show it: the JSON shapes scripts read (their names are
// part of the interface) and the tables a person reads.
package readerinfo

import (
	"fmt"
	"io"
	"strings"
	"text/tabwriter"

	"github.com/usbflash/usbflash/internal/drive"
	"github.com/usbflash/usbflash/internal/lib/shown"
	"github.com/usbflash/usbflash/internal/lib/units"
)

// Words are the program's words for what the facts do not say
// themselves.
type Words struct {
	// Error is an error as a person reads it, with its advice.
	Error func(error) string
	// Setting is the name of the source of the quirk flags the program
	// was given itself (drive.QuirkFlag.Setting).
	Setting string
}

// LUN is what list and info say about one LUN. The JSON names are
// part of the interface for scripts.
type LUN struct {
	LUN             int    `json:"lun"`
	Vendor          string `json:"vendor"`
	Product         string `json:"product"`
	Revision        string `json:"revision"`
	Serial          string `json:"serial,omitempty"`
	BlockSize       int    `json:"block_size"`
	Blocks          int64  `json:"blocks"`
	Bytes           int64  `json:"bytes"`
	WriteProtected  bool   `json:"write_protected"`
	Removable       bool   `json:"removable"`
	Medium          bool   `json:"medium"`
	MaxTransfer     int64  `json:"max_transfer_bytes,omitempty"`
	OptimalTransfer int64  `json:"optimal_transfer_bytes,omitempty"`
	Memory          string `json:"memory,omitempty"` // what write's buffers are: usbfs zero-copy or page-aligned
	// Transport is how the reader is driven: BOT or UAS, with UAS's
	// streams (0: none, high speed) and queue depth.
	Transport  string `json:"transport,omitempty"`
	UASStreams int    `json:"uas_streams,omitempty"`
	QueueDepth int    `json:"queue_depth,omitempty"`
	// TransportWhy says why Bulk-Only is driven where UAS is offered too.
	TransportWhy string   `json:"transport_why,omitempty"`
	KernelDisk   string   `json:"kernel_disk,omitempty"`
	Mounted      []string `json:"mounted,omitempty"`
	Error        string   `json:"error,omitempty"`
}

// Reader is one mass-storage interface of `usbflash list`.
type Reader struct {
	Index        int    `json:"index"`
	Bus          int    `json:"bus"`
	Address      int    `json:"address"`
	Path         string `json:"path"`
	VID          string `json:"vid"`
	PID          string `json:"pid"`
	Manufacturer string `json:"manufacturer"`
	Product      string `json:"product"`
	Serial       string `json:"serial"`
	Speed        string `json:"speed"`
	Interface    int    `json:"interface"`
	Supported    bool   `json:"supported"`
	Reason       string `json:"reason,omitempty"`
	Target       string `json:"target"`
	// NoPermission: this user may not open the reader (list's note says
	// what would give access).
	NoPermission bool  `json:"no_permission,omitempty"`
	LUNs         []LUN `json:"luns,omitempty"` // info reports its one LUN apart
	// BCDDevice is the reader's release number (hex), which quirk
	// tables go by.
	BCDDevice string  `json:"bcd_device"`
	Quirks    *Quirks `json:"quirks,omitempty"`
}

// Quirks is what usbflash does differently for a reader: the quirk
// flags in force and where each came from, and what it found out about
// the reader while driving it.
type Quirks struct {
	// Flags are the flags as the kernel writes them ("mr", letters, then
	// "+" and the names of flags without one); "-" for none.
	Flags string      `json:"flags"`
	From  []QuirkFlag `json:"from,omitempty"`
	// Learned are facts found out while driving the reader.
	Learned []string `json:"learned,omitempty"`
	// TransferCap is the largest READ or WRITE sent, in bytes, when the
	// quirks or the reader's failures cap it.
	TransferCap int64 `json:"transfer_cap_bytes,omitempty"`
}

// QuirkFlag is one flag in force and its source: table, vendor,
// /sys/module/usb_storage/parameters/quirks, $USBFLASH_QUIRKS,
// "sim quirks=", --quirks or learned.
type QuirkFlag struct {
	Flag   string `json:"flag"`
	Letter string `json:"letter,omitempty"`
	Source string `json:"source"`
	Detail string `json:"detail,omitempty"`
}

// quirksOf is what list and info say of a reader's quirks (drive's
// facts), the caller's own overrides named as w.Setting; nil for none.
func quirksOf(q *drive.Quirks, w Words) *Quirks {
	if q == nil {
		return nil
	}
	out := &Quirks{Flags: q.Flags, Learned: q.Learned, TransferCap: q.TransferCap}
	for _, f := range q.From {
		source := f.Source
		if f.Setting {
			source = w.Setting
		}
		out.From = append(out.From, QuirkFlag{Flag: f.Flag, Letter: f.Letter, Source: source, Detail: f.Detail})
	}
	return out
}

// identity is what USB itself says of a reader, without asking it
// anything over SCSI.
func identity(u drive.USBIdentity) Reader {
	return Reader{
		Bus: u.Bus, Address: u.Address, Path: u.PortPath,
		VID: fmt.Sprintf("%04x", u.VID), PID: fmt.Sprintf("%04x", u.PID),
		Manufacturer: u.Manufacturer, Product: u.Product, Serial: u.Serial,
		Speed: u.Speed, Interface: u.Interface, BCDDevice: fmt.Sprintf("%04x", u.BCDDevice),
		Supported: u.Supported, Reason: u.Reason, Target: u.Target,
		LUNs: []LUN{},
	}
}

// DescribeReader is list's row of a reader: from sysfs when the kernel
// holds it, else from its probed slots.
func DescribeReader(r drive.Reader, w Words) Reader {
	facts := r.Facts()
	rep := identity(facts.USB)
	rep.Index = r.Index
	rep.Quirks = quirksOf(facts.Quirks, w)
	for _, d := range facts.KernelDisks {
		rep.LUNs = append(rep.LUNs, LUN{
			LUN: d.LUN, Vendor: d.Vendor, Product: d.Model, BlockSize: 512,
			Bytes: d.Size, Blocks: d.Size / 512, Medium: d.Size > 0, KernelDisk: d.Node, Mounted: d.InUse,
		})
	}
	switch {
	case r.Access != nil:
		rep.NoPermission = true
		if len(rep.LUNs) == 0 {
			rep.Reason = noPermission
		}
	case r.Err != nil && r.Slots == nil:
		rep.Reason = w.Error(r.Err)
	case r.Err != nil:
		rep.LUNs = []LUN{{Error: w.Error(r.Err)}}
	}
	for _, s := range facts.Slots {
		rep.LUNs = append(rep.LUNs, slotOf(s))
	}
	return rep
}

// slotOf describes one slot: its card when it opened, else what INQUIRY
// said and why it could not be opened.
func slotOf(s drive.Slot) LUN {
	if !s.Medium {
		l := LUN{LUN: s.LUN, Vendor: s.Vendor, Product: s.Product, Revision: s.Revision, Removable: s.Removable}
		if s.Err != nil {
			l.Error = s.Err.Error()
		}
		if s.NoMedium {
			l.Error = "no medium"
		}
		return l
	}
	return LUN{
		LUN: s.LUN, Vendor: s.Vendor, Product: s.Product, Revision: s.Revision,
		Serial: s.Serial, BlockSize: s.BlockSize, Blocks: s.Blocks,
		Bytes: s.Blocks * int64(s.BlockSize), WriteProtected: s.WriteProtected, Removable: s.Removable,
		Medium: true, MaxTransfer: s.MaxTransfer, OptimalTransfer: s.OptimalTransfer,
		Memory: s.Memory, Transport: s.Transport.Protocol, UASStreams: s.Transport.Streams, QueueDepth: s.Transport.QueueDepth,
		TransportWhy: s.Transport.Why,
	}
}

// noPermission marks a reader this user may not open.
const noPermission = "no permission"

// PrintReaders is list's table: a line per LUN of each reader.
func PrintReaders(w io.Writer, readers []Reader) {
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	// A device\'s strings are the device\'s to choose: escaped.
	out := shown.Writer(tw)
	fmt.Fprintln(out, "#\tTARGET\tBUS-PORT\tID\tPRODUCT\tSPEED\tLUN\tMEDIUM\tSIZE\tNOTES")
	for _, r := range readers {
		product := strings.TrimSpace(r.Manufacturer + " " + r.Product)
		head := fmt.Sprintf("%d\t%s\t%s\t%s:%s\t%s\t%s", r.Index, r.Target, r.Path, r.VID, r.PID, product, r.Speed)
		if !r.Supported || len(r.LUNs) == 0 {
			fmt.Fprintf(out, "%s\t-\t-\t-\t%s\n", head, r.Reason)
			continue
		}
		for _, l := range r.LUNs {
			medium, size := strings.TrimSpace(l.Vendor+" "+l.Product), "-"
			if l.Medium {
				size = units.FormatBytes(l.Bytes)
			}
			var notes []string
			if l.WriteProtected {
				notes = append(notes, "write-protected")
			}
			if l.KernelDisk != "" {
				notes = append(notes, "kernel: "+l.KernelDisk)
			}
			notes = append(notes, l.Mounted...)
			if l.Error != "" {
				notes = append(notes, l.Error)
			}
			if r.NoPermission {
				notes = append(notes, noPermission)
			}
			if q := r.Quirks; q != nil {
				notes = append(notes, "quirks "+q.Flags)
			}
			switch {
			case l.Transport == "UAS":
				notes = append(notes, fmt.Sprintf("UAS, queue depth %d", l.QueueDepth))
			case l.TransportWhy != "":
				notes = append(notes, "BOT (UAS offered too)")
			}
			fmt.Fprintf(out, "%s\t%d\t%s\t%s\t%s\n", head, l.LUN, medium, size, strings.Join(notes, "; "))
		}
	}
	tw.Flush()
}

// Target is `usbflash info --json`: the target, the USB identity when
// there is one, and the LUN or file.
type Target struct {
	Target string  `json:"target"`
	USB    *Reader `json:"usb,omitempty"`
	// SimReader is a sim: reader's USB identity.
	SimReader *SimReader `json:"sim_reader,omitempty"`
	LUN       *LUN       `json:"lun,omitempty"`
	File      *File      `json:"file,omitempty"`
	// Disk is a disk: target's disk, as the system described it.
	Disk *Disk `json:"disk,omitempty"`
	// Quirks are the reader's quirk flags, where each came from, and what
	// was learned while opening it (usb: and sim:).
	Quirks *Quirks `json:"quirks,omitempty"`
}

// SimReader is the identity a sim: reader gives itself (vid=, pid=,
// bcd=, serial=), which --quirks names it by.
type SimReader struct {
	VID       string `json:"vid"`
	PID       string `json:"pid"`
	BCDDevice string `json:"bcd_device"`
	Serial    string `json:"serial,omitempty"`
}

type File struct {
	Path      string `json:"path"`
	BlockSize int    `json:"block_size"`
	Blocks    int64  `json:"blocks"`
	Bytes     int64  `json:"bytes"`
	Direct    bool   `json:"direct_io"`
}

// DescribeTarget is what info says of an opened target: each fact it
// has (drive's optional interfaces of its Dev).
func DescribeTarget(d *drive.Device, w Words) Target {
	facts := drive.Describe(d)
	rep := Target{Target: d.Name, Quirks: quirksOf(facts.Quirks, w)}
	if facts.Slot != nil {
		l := slotOf(*facts.Slot)
		rep.LUN = &l
	}
	if u := facts.USB; u != nil {
		id := identity(*u)
		id.LUNs = nil
		rep.USB = &id
	}
	if id := facts.Sim; id != nil {
		rep.SimReader = &SimReader{VID: fmt.Sprintf("%04x", id.VID), PID: fmt.Sprintf("%04x", id.PID),
			BCDDevice: fmt.Sprintf("%04x", id.BCDDevice), Serial: id.Serial}
	}
	switch {
	case facts.Disk != nil:
		disk := DescribeDisk(*facts.Disk)
		disk.BlockSize, disk.Bytes, disk.Direct = d.Dev.BlockSize(), d.Capacity(), true
		rep.Disk = &disk
	case facts.Direct != nil:
		rep.File = &File{
			Path: strings.TrimPrefix(d.Name, "file:"), BlockSize: d.Dev.BlockSize(),
			Blocks: d.Dev.BlockCount(), Bytes: d.Capacity(), Direct: *facts.Direct,
		}
	}
	return rep
}

// PrintTarget is info's table of one target.
func PrintTarget(w io.Writer, rep Target) {
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	// A device\'s strings are the device\'s to choose: escaped.
	out := shown.Writer(tw)
	defer tw.Flush()
	fmt.Fprintf(out, "target\t%s\n", rep.Target)
	if u := rep.USB; u != nil {
		fmt.Fprintf(out, "usb id\t%s:%s\n", u.VID, u.PID)
		fmt.Fprintf(out, "usb device\t%s\n", strings.TrimSpace(u.Manufacturer+" "+u.Product))
		fmt.Fprintf(out, "usb serial\t%s\n", u.Serial)
		fmt.Fprintf(out, "bus / address / port\t%d / %d / %s\n", u.Bus, u.Address, u.Path)
		fmt.Fprintf(out, "speed\t%s\n", u.Speed)
		fmt.Fprintf(out, "bcdDevice\t%s\n", u.BCDDevice)
	}
	if s := rep.SimReader; s != nil {
		fmt.Fprintf(out, "usb id (simulated)\t%s:%s, bcdDevice %s\n", s.VID, s.PID, s.BCDDevice)
		fmt.Fprintf(out, "usb serial\t%s\n", orDash(s.Serial))
	}
	printQuirks(tw, rep.Quirks)
	if l := rep.LUN; l != nil {
		fmt.Fprintf(out, "lun\t%d\n", l.LUN)
		fmt.Fprintf(out, "vendor\t%s\n", l.Vendor)
		fmt.Fprintf(out, "product\t%s\n", l.Product)
		fmt.Fprintf(out, "revision\t%s\n", l.Revision)
		fmt.Fprintf(out, "serial (VPD)\t%s\n", orDash(l.Serial))
		fmt.Fprintf(out, "removable\t%v\n", l.Removable)
		if !l.Medium {
			fmt.Fprintf(out, "medium\t%s\n", orDash(l.Error))
			return
		}
		fmt.Fprintf(out, "capacity\t%s (%d bytes, %d blocks of %d)\n", units.FormatBytes(l.Bytes), l.Bytes, l.Blocks, l.BlockSize)
		fmt.Fprintf(out, "write protected\t%v\n", l.WriteProtected)
		fmt.Fprintf(out, "max transfer\t%s\n", sizeOrUnknown(l.MaxTransfer))
		fmt.Fprintf(out, "optimal transfer\t%s\n", sizeOrUnknown(l.OptimalTransfer))
		fmt.Fprintf(out, "buffer memory\t%s\n", orDash(l.Memory))
		fmt.Fprintf(out, "transport\t%s\n", drive.Transport{Protocol: l.Transport, Streams: l.UASStreams, QueueDepth: l.QueueDepth, Why: l.TransportWhy})
	}
	if f := rep.File; f != nil {
		fmt.Fprintf(out, "capacity\t%s (%d bytes, %d blocks of %d)\n", units.FormatBytes(f.Bytes), f.Bytes, f.Blocks, f.BlockSize)
		fmt.Fprintf(out, "direct I/O\t%v\n", f.Direct)
	}
	if d := rep.Disk; d != nil {
		fmt.Fprintf(out, "disk\t%s\n", orDash(d.Name))
		fmt.Fprintf(out, "bus\t%s\n", orDash(d.Bus))
		fmt.Fprintf(out, "capacity\t%s (%d bytes, blocks of %d)\n", units.FormatBytes(d.Bytes), d.Bytes, d.BlockSize)
		fmt.Fprintf(out, "removable\t%v\n", d.Removable)
		fmt.Fprintf(out, "mounted\t%s\n", orDash(strings.Join(d.Mounted, ", ")))
		fmt.Fprintf(out, "direct I/O\t%v\n", d.Direct)
	}
}

// printQuirks is info's lines about a reader's quirks: the flags, one
// line per flag with its source, what was learned, the transfer cap.
func printQuirks(w io.Writer, q *Quirks) {
	if q == nil {
		fmt.Fprintf(w, "quirks\t-\n")
		return
	}
	fmt.Fprintf(w, "quirks\t%s\n", q.Flags)
	for _, f := range q.From {
		name := f.Flag
		if f.Letter != "" {
			name = f.Letter + " " + name
		}
		from := f.Source
		if f.Detail != "" {
			from += ": " + f.Detail
		}
		fmt.Fprintf(w, "  %s\tfrom %s\n", name, from)
	}
	for _, l := range q.Learned {
		fmt.Fprintf(w, "learned\t%s\n", l)
	}
	if q.TransferCap > 0 {
		fmt.Fprintf(w, "largest command\t%s\n", units.FormatSize(q.TransferCap))
	}
}

func orDash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}

func sizeOrUnknown(n int64) string {
	if n <= 0 {
		return "not reported"
	}
	return units.FormatBytes(n)
}

// IdentityLine is the one line that lets a person recognise a card: the
// reader, its serial, the medium, the card's serial and its size.
func IdentityLine(d *drive.Device) string {
	facts := drive.Describe(d)
	var parts []string
	switch {
	case facts.USB != nil:
		parts = append(parts, strings.TrimSpace(facts.USB.Manufacturer+" "+facts.USB.Product), "serial "+orDash(facts.USB.Serial))
	case facts.Sim != nil && facts.Sim.Serial != "":
		parts = append(parts, "serial "+facts.Sim.Serial)
	}
	if s := facts.Slot; s != nil && s.Medium {
		parts = append(parts, strings.TrimSpace(s.Vendor+" "+s.Product+" "+s.Revision))
		if s.Serial != "" {
			parts = append(parts, "card serial "+s.Serial)
		}
	}
	if disk := facts.Disk; disk != nil {
		parts = append(parts, strings.TrimSpace(disk.Name+" ("+disk.Bus+")"))
	}
	parts = append(parts, units.FormatBytes(d.Capacity()))
	return "  " + strings.Join(parts, ", ")
}

// Disk is a whole disk a disk: target names, as list and info show it.
// The JSON names are part of the interface for scripts.
type Disk struct {
	Target    string   `json:"target"` // disk:/dev/rdisk4
	Node      string   `json:"node"`
	Name      string   `json:"name"`
	Bus       string   `json:"bus"`
	Bytes     int64    `json:"bytes"`
	BlockSize int      `json:"block_size,omitempty"`
	Removable bool     `json:"removable"`
	Internal  bool     `json:"internal"`
	Mounted   []string `json:"mounted,omitempty"` // "/dev/disk4s1 on /Volumes/bootfs"
	// Direct: transfers bypass the system's cache (info, once open).
	Direct bool `json:"direct_io,omitempty"`
}

// DescribeDisk is list's row of a disk.
func DescribeDisk(d drive.WholeDisk) Disk {
	out := Disk{Target: d.Target, Node: d.Node, Name: d.Name, Bus: d.Bus, Bytes: d.Size, BlockSize: d.BlockSize,
		Removable: d.Removable, Internal: d.Internal}
	for _, v := range d.Volumes {
		m := v.Node
		if v.MountPoint != "" {
			m += " on " + v.MountPoint
		}
		out.Mounted = append(out.Mounted, m)
	}
	return out
}

// PrintDisks is list's table of disk: targets: a line per disk.
func PrintDisks(w io.Writer, disks []Disk) {
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	// A disk's name is the device's to choose: escaped.
	out := shown.Writer(tw)
	fmt.Fprintln(out, "TARGET\tBUS\tNAME\tSIZE\tNOTES")
	for _, d := range disks {
		var notes []string
		if d.Internal {
			notes = append(notes, "internal slot")
		}
		if len(d.Mounted) > 0 {
			notes = append(notes, "mounted: "+strings.Join(d.Mounted, ", "))
		}
		size := "-"
		if d.Bytes > 0 {
			size = units.FormatBytes(d.Bytes)
		}
		fmt.Fprintf(out, "%s\t%s\t%s\t%s\t%s\n", d.Target, orDash(d.Bus), orDash(d.Name), size, strings.Join(notes, "; "))
	}
	tw.Flush()
}
