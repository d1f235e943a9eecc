package jsonevents

import (
	"time"

	"github.com/usbflash/usbflash/internal/customize"
	"github.com/usbflash/usbflash/internal/session"
)

// Record is what became of one card (session.Record) as the JSON of the
// card event, of a --report file's cards and of a slot log's record say
// it: one shape for all three.
type Record struct {
	Target   string    `json:"target"`
	Serial   string    `json:"serial"`
	Capacity int64     `json:"capacity"`
	Bytes    int64     `json:"bytes"`     // image bytes written
	Rate     float64   `json:"rate"`      // bytes/s over the card's own write
	Bound    string    `json:"bound"`     // what set this card's pace: device, slowest
	Verified bool      `json:"verified"`  // read back and matched
	Verify   string    `json:"verify"`    // how it was checked; "" unless verified
	SHA256   string    `json:"sha256"`    // of the image written to it
	Error    string    `json:"error"`     // "" on success
	Code     int       `json:"exit_code"` // the exit code this card alone would give
	Started  time.Time `json:"started"`
	Finished time.Time `json:"finished"`
	// Customized is what the card's boot partition received; absent
	// without a customisation.
	Customized *Customized `json:"customized,omitempty"`
	// A station's fields: the card's result in one word, the labels of
	// the station, the card's slot and identity, how it was written, its
	// phases' times, what a repair wrote again, and where a card that
	// failed its verify differs.
	Result         string  `json:"result"`
	Station        string  `json:"station,omitempty"`
	Operator       string  `json:"operator,omitempty"`
	Image          string  `json:"image,omitempty"`
	Slot           string  `json:"slot,omitempty"`
	USBPath        string  `json:"usb_path,omitempty"`
	Vendor         string  `json:"vendor,omitempty"`
	Product        string  `json:"product,omitempty"`
	Revision       string  `json:"revision,omitempty"`
	Transport      string  `json:"transport,omitempty"`
	TransferSize   int     `json:"transfer_size,omitempty"`
	WriteS         float64 `json:"write_s,omitempty"`
	VerifyS        float64 `json:"verify_s,omitempty"`
	RepairedRanges int     `json:"repaired_ranges,omitempty"`
	RepairedBytes  int64   `json:"repaired_bytes,omitempty"`
	BadLBA         *int64  `json:"bad_lba,omitempty"`
	Expected       string  `json:"expected,omitempty"`
	Read           string  `json:"read,omitempty"`
}

// Customized is a card's customisation: the format and each file written
// (its name, size and SHA-256, never its text, which can hold secrets).
type Customized struct {
	Format string           `json:"format"`
	Files  []CustomizedFile `json:"files"`
}

// CustomizedFile is one file a customisation wrote (customize.File).
type CustomizedFile struct {
	Name   string `json:"name"`
	Size   int    `json:"size"`
	SHA256 string `json:"sha256"`
}

// NewRecord is r in the JSON's shape.
func NewRecord(r session.Record) Record {
	out := Record{Target: r.Target, Serial: r.Serial, Capacity: r.Capacity, Bytes: r.Bytes, Rate: r.Rate, Bound: r.Bound,
		Verified: r.Verified, Verify: r.Verify, SHA256: r.SHA256, Error: r.Error, Code: r.Code, Started: r.Started, Finished: r.Finished,
		Result: r.Result, Station: r.Station, Operator: r.Operator, Image: r.Image, Slot: r.Slot, USBPath: r.USBPath,
		Vendor: r.Vendor, Product: r.Product, Revision: r.Revision, Transport: r.Transport, TransferSize: r.TransferSize,
		WriteS: r.WriteS, VerifyS: r.VerifyS, RepairedRanges: r.RepairedRanges, RepairedBytes: r.RepairedBytes,
		BadLBA: r.BadLBA, Expected: r.Expected, Read: r.Read}
	if c := r.Customized; c != nil {
		out.Customized = &Customized{Format: c.Format, Files: mapSlice(c.Files, func(f customize.File) CustomizedFile {
			return CustomizedFile{Name: f.Name, Size: f.Size, SHA256: f.SHA256}
		})}
	}
	return out
}

// SlotLine is one line of a station's slot log (slotlog): a note about a
// card, or its record.
type SlotLine struct {
	Time   time.Time `json:"time"`
	Card   string    `json:"card"`
	Note   string    `json:"note,omitempty"`
	Record *Record   `json:"record,omitempty"`
}
