package session

import (
	"encoding/hex"
	"errors"
	"fmt"

	"github.com/usbflash/usbflash/internal/drive"
	"github.com/usbflash/usbflash/pipeline"
)

// Every card's record (of one write, several, or a station's) says what a
// duplicator's row says: which slot, which reader and card (USB serial,
// INQUIRY identity, capacity), which image, how it was written and for how
// long, what became of it, and on a verify failure where and how the card
// differs. These fields are a station's first, but RecordOf gives every
// record them, so they live with the record, not in internal/station.

// Identity is who a card and its reader are.
type Identity struct {
	// Slot is where the card sat: the reader's USB port path and the
	// LUN ("1-2.3/0"); a sim: or file: target's name.
	Slot    string
	USBPath string // the reader's bus and port path ("1-2.3"); "" but for usb:
	// Vendor, Product and Revision are what the card's INQUIRY says.
	Vendor, Product, Revision string
	Transport                 string // BOT or UAS; "" for a file: target
	TransferSize              int    // bytes per WRITE the card took
}

// identityOf is d's identity, written with transfer-byte commands.
func identityOf(d *drive.Device, transfer int) Identity {
	id := Identity{Slot: d.Name, TransferSize: transfer, Transport: transportOf(d).Protocol}
	if s, ok := d.Dev.(drive.SCSI); ok {
		lun := s.SCSI()
		inq := lun.Inquiry()
		id.Vendor, id.Product, id.Revision = inq.Vendor, inq.Product, inq.Revision
		if u, ok := d.Dev.(drive.USBReader); ok {
			id.USBPath = u.USBInfo().PortPath
			id.Slot = fmt.Sprintf("%s/%d", id.USBPath, lun.Number())
		}
	}
	return id
}

// Difference is where a card that failed its verify first differs: the
// first bad LBA and, as the verify saw them, what the image has there and
// what the card read (a byte, or the xxh3-128 of the write command's
// range, hex).
type Difference struct {
	LBA            int64
	Expected, Read string
}

// differenceOf is the first difference err names; nil when it names none.
func differenceOf(err error) *Difference {
	var ve *pipeline.VerifyError
	if !errors.As(err, &ve) || ve.HashOnly {
		return nil
	}
	if ve.Transfer {
		return &Difference{LBA: ve.LBA, Expected: hex.EncodeToString(ve.WantDigest[:]), Read: hex.EncodeToString(ve.GotDigest[:])}
	}
	return &Difference{LBA: ve.LBA, Expected: fmt.Sprintf("%02x", ve.Want), Read: fmt.Sprintf("%02x", ve.Got)}
}

// stationFields fills r's station fields from o.
func stationFields(r *Record, o *Outcome) {
	id := o.Identity
	r.Result, r.Station, r.Operator, r.Image = o.Result(), o.Station, o.Operator, o.Image
	r.Slot, r.USBPath, r.Vendor, r.Product, r.Revision = id.Slot, id.USBPath, id.Vendor, id.Product, id.Revision
	r.Transport, r.TransferSize = id.Transport, id.TransferSize
	if o.Write.Elapsed > 0 {
		r.WriteS = o.Write.Elapsed.Seconds()
	}
	if o.Verify != nil {
		r.VerifyS = o.Verify.Elapsed.Seconds()
	}
	if o.Repair != nil {
		r.RepairedRanges, r.RepairedBytes = o.Repair.Ranges, o.Repair.Bytes
	}
	if d := differenceOf(o.Err); d != nil {
		lba := d.LBA
		r.BadLBA, r.Expected, r.Read = &lba, d.Expected, d.Read
	}
}
