package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strings"
	"text/tabwriter"

	"github.com/spf13/cobra"

	"github.com/usbflash/usbflash/drive"
	"github.com/usbflash/usbflash/failure"
	"github.com/usbflash/usbflash/internal/units"
	"github.com/usbflash/usbflash/usbms"
	"github.com/usbflash/usbflash/usbms/usbdev"
)

// lunReport is what list and info say about one LUN. The JSON names are
// part of the interface for scripts.
type lunReport struct {
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
	Transport  string   `json:"transport,omitempty"`
	UASStreams int      `json:"uas_streams,omitempty"`
	QueueDepth int      `json:"queue_depth,omitempty"`
	KernelDisk string   `json:"kernel_disk,omitempty"`
	Mounted    []string `json:"mounted,omitempty"`
	Error      string   `json:"error,omitempty"`
}

// readerReport is one mass-storage interface of `usbflash list`.
type readerReport struct {
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
	NoPermission bool        `json:"no_permission,omitempty"`
	LUNs         []lunReport `json:"luns,omitempty"` // info reports its one LUN apart
	// BCDDevice is the reader's release number (hex), which quirk
	// tables go by.
	BCDDevice string        `json:"bcd_device"`
	Quirks    *quirksReport `json:"quirks,omitempty"`
}

// quirksReport is what usbflash does differently for a reader: the quirk
// flags in force and where each came from, and what it found out about
// the reader while driving it.
type quirksReport struct {
	// Flags are the flags as the kernel writes them ("mr", letters, then
	// "+" and the names of flags without one); "-" for none.
	Flags string            `json:"flags"`
	From  []quirkFlagReport `json:"from,omitempty"`
	// Learned are facts found out while driving the reader.
	Learned []string `json:"learned,omitempty"`
	// TransferCap is the largest READ or WRITE sent, in bytes, when the
	// quirks or the reader's failures cap it.
	TransferCap int64 `json:"transfer_cap_bytes,omitempty"`
}

// quirkFlagReport is one flag in force and its source: table, vendor,
// /sys/module/usb_storage/parameters/quirks, $USBFLASH_QUIRKS,
// "sim quirks=", --quirks or learned.
type quirkFlagReport struct {
	Flag   string `json:"flag"`
	Letter string `json:"letter,omitempty"`
	Source string `json:"source"`
	Detail string `json:"detail,omitempty"`
}

// sourceLearned is the source of a flag usbflash switched on itself.
const sourceLearned = "learned"

// reportQuirks describes the quirks of a reader (nil: none known) and,
// when a LUN of it is open, what was learned; nil when there is nothing
// to say.
func reportQuirks(rq *usbms.ReaderQuirks, l *usbms.LUN) *quirksReport {
	var flags usbms.Quirks
	rep := &quirksReport{}
	if rq != nil {
		flags = rq.Flags
		for _, f := range rq.From {
			rep.From = append(rep.From, quirkFlagReport{Flag: f.Flag.Name(), Letter: letter(f.Flag), Source: quirkSource(f.Source), Detail: f.Detail})
		}
	}
	if l != nil {
		for _, x := range l.Learned() {
			if x.Flag != 0 && flags&x.Flag == 0 {
				flags |= x.Flag
				rep.From = append(rep.From, quirkFlagReport{Flag: x.Flag.Name(), Letter: letter(x.Flag), Source: sourceLearned, Detail: x.What})
				continue
			}
			rep.Learned = append(rep.Learned, x.What)
		}
		rep.TransferCap = l.TransferCap()
	}
	if flags == 0 && len(rep.Learned) == 0 && rep.TransferCap == 0 {
		return nil
	}
	rep.Flags = flags.String()
	return rep
}

// quirkSource names where a flag came from; the caller's own list is
// this command's --quirks.
func quirkSource(s usbms.QuirkSource) string {
	if s == usbms.QuirkSourceSetting {
		return "--quirks"
	}
	return string(s)
}

func letter(f usbms.Quirks) string {
	if l := f.Letter(); l != 0 {
		return string(l)
	}
	return ""
}

func newListCommand(a *app) *cobra.Command {
	var asJSON bool
	c := &cobra.Command{
		Use:   "list",
		Short: "List USB card readers, their LUNs and media",
		Long: `List every USB mass-storage interface: identity, speed, and for each LUN
the medium's vendor, product, capacity and write protection.

Readers the kernel's usb-storage driver holds are described from sysfs and
left alone; others are asked over SCSI. list never detaches a driver.`,
		Args: exactArgs(0, "no arguments"),
		RunE: func(c *cobra.Command, _ []string) error {
			return a.list(c.Context(), asJSON)
		},
	}
	c.Flags().BoolVar(&asJSON, "json", false, "print one JSON object: {\"devices\": [...]}")
	return c
}

func (a *app) list(ctx context.Context, asJSON bool) error {
	usb, err := a.newReaders()
	if err != nil {
		return err
	}
	found, err := usb.ListReaders(ctx)
	if errors.Is(err, usbdev.ErrNoUSBAccess) || errors.Is(err, usbdev.ErrNoUSBSupport) {
		// Not a failure: there is simply nothing to list here.
		if asJSON {
			return json.NewEncoder(a.stdout).Encode(map[string]any{"devices": []any{}, "note": factsAndAdvice(err)})
		}
		fmt.Fprintf(a.stdout, "No USB readers: %s\n", factsAndAdvice(err)) // the advice says what still works
		return nil
	}
	if err != nil {
		return failure.Wrap(failure.Device, fmt.Errorf("listing USB devices: %w", err))
	}
	readers := make([]readerReport, 0, len(found))
	for _, r := range found {
		readers = append(readers, describeReader(r))
	}
	note := accessNote(found)
	if asJSON {
		out := map[string]any{"devices": readers}
		if note != "" {
			out["note"] = note
		}
		return json.NewEncoder(a.stdout).Encode(out)
	}
	if len(readers) == 0 {
		fmt.Fprintln(a.stdout, "No USB mass-storage readers attached.")
		return nil
	}
	printReaders(a.stdout, readers)
	if note != "" {
		fmt.Fprintln(a.stderr, note)
	}
	return nil
}

// accessNote says once, however many readers this user may not open,
// what would give access; "" when it may open them all.
func accessNote(found []drive.Reader) string {
	var denied []error
	for _, r := range found {
		if r.Access != nil {
			denied = append(denied, r.Access)
		}
	}
	if len(denied) == 0 {
		return ""
	}
	return fmt.Sprintf("No permission to open %s: %s.", plural(len(denied), "reader"), hint(denied[0]))
}

// describeIdentity is what USB itself says of a reader, without asking it
// anything over SCSI.
func describeIdentity(info usbdev.Info) readerReport {
	return readerReport{
		Bus: info.Bus, Address: info.Address, Path: info.PortPath,
		VID: fmt.Sprintf("%04x", info.VID), PID: fmt.Sprintf("%04x", info.PID),
		Manufacturer: info.Manufacturer, Product: info.Product, Serial: info.Serial,
		Speed: info.Speed.String(), Interface: info.Interface, BCDDevice: fmt.Sprintf("%04x", info.BCDDevice),
		Supported: info.Supported, Reason: info.Reason, Target: drive.USBName(info),
		LUNs: []lunReport{},
	}
}

// describeReader is list's row of a reader: from sysfs when the kernel
// holds it, else from its probed slots.
func describeReader(r drive.Reader) readerReport {
	rep := describeIdentity(r.Info)
	rep.Index = r.Index
	var open *usbms.LUN
	for _, s := range r.Slots {
		if s.LUN != nil && open == nil {
			open = s.LUN
		}
	}
	rep.Quirks = reportQuirks(&r.Quirks, open)
	for _, d := range r.KernelDisks {
		l := lunReport{
			LUN: d.LUN, Vendor: d.Vendor, Product: d.Model, BlockSize: 512,
			Bytes: d.Size, Blocks: d.Size / 512, Medium: d.Size > 0, KernelDisk: d.Node,
		}
		for _, u := range d.InUse {
			l.Mounted = append(l.Mounted, u.String())
		}
		rep.LUNs = append(rep.LUNs, l)
	}
	switch {
	case r.Access != nil:
		rep.NoPermission = true
		if len(rep.LUNs) == 0 {
			rep.Reason = noPermission
		}
	case r.Err != nil && r.Slots == nil:
		rep.Reason = factsAndAdvice(r.Err)
	case r.Err != nil:
		rep.LUNs = []lunReport{{Error: factsAndAdvice(r.Err)}}
	}
	for _, s := range r.Slots {
		rep.LUNs = append(rep.LUNs, reportSlot(s))
	}
	return rep
}

// reportSlot describes one probed slot: the LUN when it opened, else what
// INQUIRY said and why it could not be opened.
func reportSlot(s usbms.LUNSummary) lunReport {
	if s.LUN != nil {
		return reportLUN(s.LUN)
	}
	l := lunReport{LUN: s.Number, Error: s.Err.Error()}
	if s.HasInquiry {
		l.Vendor, l.Product, l.Revision, l.Removable = s.Inquiry.Vendor, s.Inquiry.Product, s.Inquiry.Revision, s.Inquiry.Removable
	}
	if s.NoMedium {
		l.Error = "no medium"
	}
	return l
}

func reportLUN(l *usbms.LUN) lunReport {
	inq := l.Inquiry()
	bs := int64(l.BlockSize())
	return lunReport{
		LUN: l.Number(), Vendor: inq.Vendor, Product: inq.Product, Revision: inq.Revision,
		Serial: l.Serial(), BlockSize: l.BlockSize(), Blocks: l.BlockCount(),
		Bytes: l.BlockCount() * bs, WriteProtected: l.WriteProtected(), Removable: inq.Removable,
		Medium: true, MaxTransfer: l.MaxTransfer() * bs, OptimalTransfer: l.OptimalTransfer() * bs,
		Memory: l.MemoryKind(), Transport: l.Transport().Protocol, UASStreams: l.Transport().Streams, QueueDepth: l.Transport().QueueDepth,
	}
}

// noPermission marks a reader this user may not open.
const noPermission = "no permission"

func printReaders(w io.Writer, readers []readerReport) {
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "#\tTARGET\tBUS-PORT\tID\tPRODUCT\tSPEED\tLUN\tMEDIUM\tSIZE\tNOTES")
	for _, r := range readers {
		product := strings.TrimSpace(r.Manufacturer + " " + r.Product)
		head := fmt.Sprintf("%d\t%s\t%s\t%s:%s\t%s\t%s", r.Index, r.Target, r.Path, r.VID, r.PID, product, r.Speed)
		if !r.Supported || len(r.LUNs) == 0 {
			fmt.Fprintf(tw, "%s\t-\t-\t-\t%s\n", head, r.Reason)
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
			if l.Transport == "UAS" {
				notes = append(notes, "UAS")
			}
			fmt.Fprintf(tw, "%s\t%d\t%s\t%s\t%s\n", head, l.LUN, medium, size, strings.Join(notes, "; "))
		}
	}
	tw.Flush()
}
