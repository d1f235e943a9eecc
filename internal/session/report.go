package session

import (
	"time"

	"github.com/usbflash/usbflash/internal/customize"
)

// Record is what happened to one card of a session: one row of the final
// table, of the report and of the card event.
type Record struct {
	Target   string
	Serial   string
	Capacity int64
	Bytes    int64   // image bytes written
	Rate     float64 // bytes/s over the card's own write
	Bound    string  // what set this card's pace: device, slowest
	Verified bool    // read back and matched
	Verify   string  // how it was checked (pipeline.VerifyMethod); "" unless verified
	SHA256   string  // of the image written to it
	Error    string  // "" on success
	Code     int     // the exit code this card alone would give
	Started  time.Time
	Finished time.Time
	// Customized is what the card's boot partition received: the format
	// and each file's name, size and SHA-256 (never its text, which can
	// hold secrets); nil without a customisation.
	Customized *Customized
	// A station's fields (station.go): the card's result in one word
	// (Outcome.Result), the labels of the station, the card's slot and
	// identity, how it was written, its phases' times, what a repair
	// wrote again, and where a card that failed its verify differs.
	Result         string
	Station        string
	Operator       string
	Image          string
	Slot           string
	USBPath        string
	Vendor         string
	Product        string
	Revision       string
	Transport      string
	TransferSize   int
	WriteS         float64
	VerifyS        float64
	RepairedRanges int
	RepairedBytes  int64
	BadLBA         *int64
	Expected       string
	Read           string
}

// Customized is a card's customisation as the report records it.
type Customized struct {
	Format string
	Files  []customize.File
}

// Report is the record of a session, for a production line: the image,
// and one record per card, in the order they finished. A ReportFile
// keeps it on disk (internal/ui/report: a .json or .csv file).
type Report struct {
	Image   string
	SHA256  string
	Started time.Time
	Cards   []Record
}

// ReportFile keeps a session's report as its cards finish: Add is given
// each finished card's record, in the order they finish, before the card
// is told to the observer (a station killed between cards has recorded
// every card it told of), with the report so far: its image, its SHA-256
// (the first card's that has one) and start, and for a Run every record
// so far, for a session of Cards none (a station keeps no records: its
// file holds them). An error from Add is told as a note; the cards go on.
type ReportFile interface {
	Add(report *Report, card Record) error
}
