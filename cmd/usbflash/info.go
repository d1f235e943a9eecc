package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"strings"
	"text/tabwriter"

	"github.com/spf13/cobra"

	"github.com/usbflash/usbflash/drive"
	"github.com/usbflash/usbflash/internal/units"
	"github.com/usbflash/usbflash/usbms"
)

// infoReport is `usbflash info --json`: the target, the USB identity when
// there is one, and the LUN or file.
type infoReport struct {
	Target string        `json:"target"`
	USB    *readerReport `json:"usb,omitempty"`
	// SimReader is a sim: reader's USB identity.
	SimReader *simReaderReport `json:"sim_reader,omitempty"`
	LUN       *lunReport       `json:"lun,omitempty"`
	File      *fileReport      `json:"file,omitempty"`
	// Quirks are the reader's quirk flags, where each came from, and what
	// was learned while opening it (usb: and sim:).
	Quirks *quirksReport `json:"quirks,omitempty"`
}

// simReaderReport is the identity a sim: reader gives itself (vid=, pid=,
// bcd=, serial=), which --quirks names it by.
type simReaderReport struct {
	VID       string `json:"vid"`
	PID       string `json:"pid"`
	BCDDevice string `json:"bcd_device"`
	Serial    string `json:"serial,omitempty"`
}

type fileReport struct {
	Path      string `json:"path"`
	BlockSize int    `json:"block_size"`
	Blocks    int64  `json:"blocks"`
	Bytes     int64  `json:"bytes"`
	Direct    bool   `json:"direct_io"`
}

func newInfoCommand(a *app) *cobra.Command {
	var asJSON bool
	c := &cobra.Command{
		Use:   "info TARGET",
		Short: "Show everything known about one target",
		Long: `Show one target's identity (INQUIRY, serial), capacity, block size, write
protection and transfer limits. Nothing is written. For a usb: target the
reader is claimed, which detaches the kernel driver (refused while mounted,
unless --force).`,
		Args: exactArgs(1, "a TARGET"),
		RunE: func(c *cobra.Command, args []string) error {
			t, err := drive.Parse(args[0])
			if err != nil {
				return err
			}
			return a.info(c.Context(), t, asJSON)
		},
	}
	c.Flags().BoolVar(&asJSON, "json", false, "print one JSON object")
	return c
}

func (a *app) info(ctx context.Context, t drive.Spec, asJSON bool) error {
	readers, err := a.newReaders()
	if err != nil {
		return err
	}
	d, err := drive.Open(ctx, t, drive.Options{ReadOnly: true, AllowNoMedium: true, Readers: readers})
	if err != nil {
		return err
	}
	defer d.Close()
	rep := describeDevice(d)
	if asJSON {
		return json.NewEncoder(a.stdout).Encode(rep)
	}
	printInfo(a.stdout, rep)
	return nil
}

// describeDevice is what info says of an opened target: each fact it
// has (drive's optional interfaces of its Dev).
func describeDevice(d *drive.Device) infoReport {
	rep := infoReport{Target: d.Name}
	var lun *usbms.LUN
	if s, ok := d.Dev.(drive.SCSI); ok {
		lun = s.SCSI()
		l := reportLUN(lun)
		rep.LUN = &l
	}
	if s, ok := d.Dev.(drive.EmptySlot); ok {
		l := reportSlot(s.Slot())
		rep.LUN = &l
	}
	if r, ok := d.Dev.(drive.ReaderSlot); ok {
		if u, ok := d.Dev.(drive.USBReader); ok {
			id := describeIdentity(u.USBInfo())
			id.LUNs = nil
			rep.USB = &id
		} else {
			id := r.ReaderID()
			rep.SimReader = &simReaderReport{VID: fmt.Sprintf("%04x", id.VID), PID: fmt.Sprintf("%04x", id.PID),
				BCDDevice: fmt.Sprintf("%04x", id.BCDDevice), Serial: id.Serial}
		}
		q := r.ReaderQuirks()
		rep.Quirks = reportQuirks(&q, lun)
	}
	if f, ok := d.Dev.(drive.DirectIO); ok {
		rep.File = &fileReport{
			Path: strings.TrimPrefix(d.Name, "file:"), BlockSize: d.Dev.BlockSize(),
			Blocks: d.Dev.BlockCount(), Bytes: d.Capacity(), Direct: f.Direct(),
		}
	}
	return rep
}

func printInfo(w io.Writer, rep infoReport) {
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	defer tw.Flush()
	fmt.Fprintf(tw, "target\t%s\n", rep.Target)
	if u := rep.USB; u != nil {
		fmt.Fprintf(tw, "usb id\t%s:%s\n", u.VID, u.PID)
		fmt.Fprintf(tw, "usb device\t%s\n", strings.TrimSpace(u.Manufacturer+" "+u.Product))
		fmt.Fprintf(tw, "usb serial\t%s\n", u.Serial)
		fmt.Fprintf(tw, "bus / address / port\t%d / %d / %s\n", u.Bus, u.Address, u.Path)
		fmt.Fprintf(tw, "speed\t%s\n", u.Speed)
		fmt.Fprintf(tw, "bcdDevice\t%s\n", u.BCDDevice)
	}
	if s := rep.SimReader; s != nil {
		fmt.Fprintf(tw, "usb id (simulated)\t%s:%s, bcdDevice %s\n", s.VID, s.PID, s.BCDDevice)
		fmt.Fprintf(tw, "usb serial\t%s\n", orDash(s.Serial))
	}
	printQuirks(tw, rep.Quirks)
	if l := rep.LUN; l != nil {
		fmt.Fprintf(tw, "lun\t%d\n", l.LUN)
		fmt.Fprintf(tw, "vendor\t%s\n", l.Vendor)
		fmt.Fprintf(tw, "product\t%s\n", l.Product)
		fmt.Fprintf(tw, "revision\t%s\n", l.Revision)
		fmt.Fprintf(tw, "serial (VPD)\t%s\n", orDash(l.Serial))
		fmt.Fprintf(tw, "removable\t%v\n", l.Removable)
		if !l.Medium {
			fmt.Fprintf(tw, "medium\t%s\n", orDash(l.Error))
			return
		}
		fmt.Fprintf(tw, "capacity\t%s (%d bytes, %d blocks of %d)\n", units.FormatBytes(l.Bytes), l.Bytes, l.Blocks, l.BlockSize)
		fmt.Fprintf(tw, "write protected\t%v\n", l.WriteProtected)
		fmt.Fprintf(tw, "max transfer\t%s\n", sizeOrUnknown(l.MaxTransfer))
		fmt.Fprintf(tw, "optimal transfer\t%s\n", sizeOrUnknown(l.OptimalTransfer))
		fmt.Fprintf(tw, "buffer memory\t%s\n", orDash(l.Memory))
		fmt.Fprintf(tw, "transport\t%s\n", usbms.TransportInfo{Protocol: l.Transport, Streams: l.UASStreams, QueueDepth: l.QueueDepth})
	}
	if f := rep.File; f != nil {
		fmt.Fprintf(tw, "capacity\t%s (%d bytes, %d blocks of %d)\n", units.FormatBytes(f.Bytes), f.Bytes, f.Blocks, f.BlockSize)
		fmt.Fprintf(tw, "direct I/O\t%v\n", f.Direct)
	}
}

// printQuirks is info's lines about a reader's quirks: the flags, one
// line per flag with its source, what was learned, the transfer cap.
func printQuirks(w io.Writer, q *quirksReport) {
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
