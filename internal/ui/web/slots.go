package web

import (
	"fmt"
	"strings"

	"github.com/usbflash/usbflash/internal/ui/readerinfo"
)

// Slot is one place a card goes, as the page lists it: the target that
// writes to it, the reader it is in, and what it holds.
type Slot struct {
	Target string `json:"target"`
	// Name is the card as the sessions' events and question name it
	// (a sim: target without its options); "": Target.
	Name   string `json:"name,omitempty"`
	Reader string `json:"reader"`
	// Medium: a card is in it; Bytes its size.
	Medium         bool   `json:"medium"`
	Bytes          int64  `json:"bytes"`
	WriteProtected bool   `json:"write_protected"`
	Card           string `json:"card,omitempty"` // the card's vendor and product
	// InUse says how the system uses the card's disk (mounted ...);
	// such a card is not written unless forced.
	InUse string `json:"in_use,omitempty"`
	// Error says why the slot could not be asked, with its advice.
	Error string `json:"error,omitempty"`
}

// SlotsOfReaders are the slots of the readers `list` describes, one per
// LUN, each with the target that names it.
func SlotsOfReaders(readers []readerinfo.Reader) []Slot {
	var out []Slot
	for _, r := range readers {
		name := strings.TrimSpace(r.Manufacturer + " " + r.Product)
		if name == "" {
			name = r.VID + ":" + r.PID
		}
		if !r.Supported || len(r.LUNs) == 0 {
			why := r.Reason
			if why == "" {
				why = "no slot answered"
			}
			out = append(out, Slot{Target: r.Target, Reader: name, Error: why})
			continue
		}
		for _, l := range r.LUNs {
			s := slotOf(l)
			s.Reader, s.Target = name, r.Target
			if len(r.LUNs) > 1 {
				s.Target = fmt.Sprintf("%s/%d", r.Target, l.LUN)
			}
			if r.NoPermission && s.Error == "" {
				s.Error = "no permission to open the reader"
			}
			out = append(out, s)
		}
	}
	return out
}

// SlotsOfDisks are the slots of the disks `list` shows for disk: targets
// (external or removable whole disks: a card reader the system drives).
func SlotsOfDisks(disks []readerinfo.Disk) []Slot {
	var out []Slot
	for _, d := range disks {
		reader := strings.TrimSpace(d.Bus + " disk " + d.Node)
		out = append(out, Slot{Target: d.Target, Reader: reader, Medium: d.Bytes > 0, Bytes: d.Bytes, Card: d.Name,
			InUse: strings.Join(d.Mounted, ", ")})
	}
	return out
}

// SlotOfTarget is the slot of a target `info` describes (a sim: card, a
// file).
func SlotOfTarget(t readerinfo.Target) Slot {
	s := Slot{Target: t.Target, Reader: t.Target}
	switch {
	case t.LUN != nil:
		ls := slotOf(*t.LUN)
		ls.Target, ls.Reader = s.Target, s.Reader
		if t.SimReader != nil {
			ls.Reader = fmt.Sprintf("simulated reader %s:%s", t.SimReader.VID, t.SimReader.PID)
			if t.SimReader.Serial != "" {
				ls.Reader += ", serial " + t.SimReader.Serial
			}
		}
		return ls
	case t.File != nil:
		s.Reader, s.Medium, s.Bytes = "file", true, t.File.Bytes
	}
	return s
}

// slotOf is what a LUN of list or info says, as a slot.
func slotOf(l readerinfo.LUN) Slot {
	s := Slot{Medium: l.Medium, Bytes: l.Bytes, WriteProtected: l.WriteProtected,
		Card: strings.TrimSpace(l.Vendor + " " + l.Product), InUse: strings.Join(l.Mounted, ", ")}
	if !l.Medium {
		s.Bytes = 0
		if l.Error != "" && l.Error != "no medium" {
			s.Error = l.Error
		}
	}
	return s
}
