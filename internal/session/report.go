package session

import (
	"encoding/csv"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/usbflash/usbflash/internal/customize"
	"github.com/usbflash/usbflash/internal/failure"
	"github.com/usbflash/usbflash/internal/lib/outfile"
)

// Record is what happened to one card of a session: one row of the final
// table, of the report and of the card event.
type Record struct {
	Target   string    `json:"target"`
	Serial   string    `json:"serial"`
	Capacity int64     `json:"capacity"`
	Bytes    int64     `json:"bytes"`     // image bytes written
	Rate     float64   `json:"rate"`      // bytes/s over the card's own write
	Bound    string    `json:"bound"`     // what set this card's pace: device, slowest
	Verified bool      `json:"verified"`  // read back and matched
	Verify   string    `json:"verify"`    // how it was checked (pipeline.VerifyMethod); "" unless verified
	SHA256   string    `json:"sha256"`    // of the image written to it
	Error    string    `json:"error"`     // "" on success
	Code     int       `json:"exit_code"` // the exit code this card alone would give
	Started  time.Time `json:"started"`
	Finished time.Time `json:"finished"`
	// Customized is what the card's boot partition received: the format
	// and each file's name, size and SHA-256 (never its text, which can
	// hold secrets); JSON only, absent without a customisation.
	Customized *Customized `json:"customized,omitempty"`
	// A station's fields (station.go): the card's result in one word
	// (Outcome.Result), the labels of the station, the card's slot and
	// identity, how it was written, its phases' times, what a repair
	// wrote again, and where a card that failed its verify differs.
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

// Customized is a card's customisation as the report records it.
type Customized struct {
	Format string           `json:"format"`
	Files  []customize.File `json:"files"`
}

// Report is the record of a session, for a production line: the image,
// and one record per card, in the order they finished.
type Report struct {
	Image   string    `json:"image"`
	SHA256  string    `json:"sha256"`
	Started time.Time `json:"started"`
	Cards   []Record  `json:"cards"`
}

// ErrReportFormat: a report must be a .json or .csv file.
var ErrReportFormat = failure.New(failure.Usage, "a report is a .json or .csv file")

// reportFormat is the report file's format, chosen by its extension.
func reportFormat(path string) (string, error) {
	switch ext := strings.ToLower(filepath.Ext(path)); ext {
	case ".json", ".csv":
		return ext[1:], nil
	default:
		return "", fmt.Errorf("report %s: %w", path, ErrReportFormat)
	}
}

// CheckReport refuses, before anything is written to a card, a report
// that could not be saved: a name that is neither .json nor .csv, a
// directory that does not exist or cannot be written. A report that
// cannot be kept must not be found out after the cards are written.
func CheckReport(path string) error {
	if _, err := reportFormat(path); err != nil {
		return err
	}
	var oe *outfile.Error
	if err := outfile.Check(path); errors.As(err, &oe) {
		return &ReportError{Path: path, Err: oe.Err}
	} else if err != nil {
		return err
	}
	return nil
}

// ReportError is a report that could not be saved.
type ReportError struct {
	Path string
	Err  error
}

func (e *ReportError) Error() string { return fmt.Sprintf("report %s: %v", e.Path, e.Err) }
func (e *ReportError) Unwrap() error { return e.Err }

// Class is Usage: the report's name is the caller's.
func (e *ReportError) Class() failure.Class { return failure.Usage }

// unwrapPath drops the temporary file's name from an *os.PathError: the
// user named the report, not it.
func unwrapPath(err error) error {
	var pe *os.PathError
	if errors.As(err, &pe) {
		return pe.Err
	}
	return err
}

// Save writes the whole report to path (JSON or CSV by extension). It
// writes a temporary file and renames it, so a reader of the report, or a
// crash, never sees half a record. A session of Cards saves its first card
// so, then adds each card to the file (reportLog).
func (s *Report) Save(path string) error {
	format, err := reportFormat(path)
	if err != nil {
		return err
	}
	tmp, err := os.CreateTemp(filepath.Dir(path), "."+filepath.Base(path)+".*")
	if err != nil {
		return &ReportError{Path: path, Err: unwrapPath(err)}
	}
	defer os.Remove(tmp.Name()) // after a successful rename there is nothing to remove
	switch format {
	case "json":
		enc := json.NewEncoder(tmp)
		enc.SetIndent("", "  ")
		err = enc.Encode(s)
	case "csv":
		err = s.writeCSV(tmp)
	}
	if cerr := tmp.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = os.Rename(tmp.Name(), path)
	}
	if err != nil {
		return &ReportError{Path: path, Err: unwrapPath(err)}
	}
	return nil
}

var csvHeader = []string{"image", "sha256", "target", "serial", "capacity", "bytes", "rate_mbps",
	"bound", "verified", "exit_code", "error", "started", "finished",
	"verify"} // last: added after the others, which readers may take by position

// csvRow is c's row of the CSV report of s.
func csvRow(s *Report, c *Record) []string {
	return append([]string{
		s.Image, s.SHA256, c.Target, c.Serial, strconv.FormatInt(c.Capacity, 10),
		strconv.FormatInt(c.Bytes, 10), strconv.FormatFloat(c.Rate/1e6, 'f', 1, 64),
		c.Bound, strconv.FormatBool(c.Verified), strconv.Itoa(c.Code), c.Error,
		c.Started.UTC().Format(time.RFC3339), c.Finished.UTC().Format(time.RFC3339), c.Verify,
	}, csvStationRow(c)...)
}

func (s *Report) writeCSV(f *os.File) error {
	w := csv.NewWriter(f)
	if err := w.Write(append(append([]string(nil), csvHeader...), csvStation...)); err != nil {
		return err
	}
	for i := range s.Cards {
		if err := w.Write(csvRow(s, &s.Cards[i])); err != nil {
			return err
		}
	}
	w.Flush()
	return w.Error()
}
