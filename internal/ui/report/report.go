// Package report writes a write session's report file, the record of
// every card for a production line: JSON (the image, its SHA-256, the
// start, and each card's record in the shape of the card event,
// jsonevents.Record) or CSV (a row per card), chosen by the file's
// extension. A File is the session's session.ReportFile: the session
// says when a card is recorded (as it finishes, before it is told), the
// File how, and that it is on disk when Add returns.
package report

import (
	"encoding/csv"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/usbflash/usbflash/internal/failure"
	"github.com/usbflash/usbflash/internal/lib/outfile"
	"github.com/usbflash/usbflash/internal/lib/shown"
	"github.com/usbflash/usbflash/internal/session"
	"github.com/usbflash/usbflash/internal/ui/jsonevents"
)

// ErrFormat: a report must be a .json or .csv file.
var ErrFormat = failure.New(failure.Usage, "a report is a .json or .csv file")

// Error is a report that could not be saved.
type Error struct {
	Path string
	Err  error
}

func (e *Error) Error() string { return fmt.Sprintf("report %s: %v", e.Path, e.Err) }
func (e *Error) Unwrap() error { return e.Err }

// Class is Usage: the report's name is the caller's.
func (e *Error) Class() failure.Class { return failure.Usage }

// JSON is a JSON report file's document.
type JSON struct {
	Image   string              `json:"image"`
	SHA256  string              `json:"sha256"`
	Started time.Time           `json:"started"`
	Cards   []jsonevents.Record `json:"cards"`
}

// format is the report file's format, chosen by its extension.
func format(path string) (string, error) {
	switch ext := strings.ToLower(filepath.Ext(path)); ext {
	case ".json", ".csv":
		return ext[1:], nil
	default:
		return "", fmt.Errorf("report %s: %w", path, ErrFormat)
	}
}

// Check refuses, before anything is written to a card, a report that
// could not be saved: a name that is neither .json nor .csv, a directory
// that does not exist or cannot be written. A report that cannot be kept
// must not be found out after the cards are written.
func Check(path string) error {
	if _, err := format(path); err != nil {
		return err
	}
	var oe *outfile.Error
	if err := outfile.Check(path); errors.As(err, &oe) {
		return &Error{Path: path, Err: oe.Err}
	} else if err != nil {
		return err
	}
	return nil
}

// File is a session's report file.
type File struct {
	path, format string
	// station: a station's file (internal/station), to which each card
	// is added rather than the whole report written again (a station
	// keeps no records). f is then the open file once the first card made it,
	// end where the next card goes: JSON's closing brackets, CSV's end.
	station bool
	f       *os.File
	end     int64
}

// New is the report file path of a Run: the whole report is written again
// as each card finishes (a new file renamed into place, so a reader of
// the report, or a crash, never sees half a record). It is checked
// (Check), not yet made.
func New(path string) (*File, error) { return newFile(path, false) }

// NewStation is the report file path of a station (internal/station's
// Watch): the first card's report is written whole, as New's, and each
// later card added to it (its CSV row appended, its JSON record written
// over the closing brackets, which follow it again, in one write), synced
// before Add returns.
// Between cards the file is what New would have written.
func NewStation(path string) (*File, error) { return newFile(path, true) }

func newFile(path string, station bool) (*File, error) {
	if err := Check(path); err != nil {
		return nil, err
	}
	f, _ := format(path)
	return &File{path: path, format: f, station: station}, nil
}

// Path is the file's name.
func (f *File) Path() string { return f.path }

// Add records card, the last of report's cards (a Run's) or the next
// (a station's, whose report holds none).
func (f *File) Add(report *session.Report, card session.Record) error {
	if !f.station {
		return save(f.path, f.format, report)
	}
	if f.f == nil {
		return f.create(report, card)
	}
	return f.append(report, card)
}

// Close closes a station's file; the report is whole already.
func (f *File) Close() error {
	if f == nil || f.f == nil {
		return nil
	}
	err := f.f.Close()
	f.f = nil
	if err != nil {
		return &Error{Path: f.path, Err: fmt.Errorf("closing: %w", unwrapPath(err))}
	}
	return nil
}

// save writes report whole to path, in format: a temporary file renamed
// into place.
func save(path, format string, report *session.Report) error {
	tmp, err := os.CreateTemp(filepath.Dir(path), "."+filepath.Base(path)+".*")
	if err != nil {
		return &Error{Path: path, Err: unwrapPath(err)}
	}
	defer os.Remove(tmp.Name()) // after a successful rename there is nothing to remove
	switch format {
	case "json":
		enc := json.NewEncoder(tmp)
		enc.SetIndent("", "  ")
		err = enc.Encode(jsonOf(report))
	case "csv":
		err = writeCSV(tmp, report)
	}
	if cerr := tmp.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = os.Rename(tmp.Name(), path)
	}
	if err != nil {
		return &Error{Path: path, Err: unwrapPath(err)}
	}
	return nil
}

// jsonOf is report's JSON document.
func jsonOf(report *session.Report) JSON {
	cards := make([]jsonevents.Record, len(report.Cards))
	for i, c := range report.Cards {
		cards[i] = jsonevents.NewRecord(c)
	}
	if report.Cards == nil {
		cards = nil
	}
	return JSON{Image: report.Image, SHA256: report.SHA256, Started: report.Started, Cards: cards}
}

// unwrapPath drops the temporary file's name from an *os.PathError: the
// user named the report, not it.
func unwrapPath(err error) error {
	var pe *os.PathError
	if errors.As(err, &pe) {
		return pe.Err
	}
	return err
}

var csvHeader = []string{"image", "sha256", "target", "serial", "capacity", "bytes", "rate_mbps",
	"bound", "verified", "exit_code", "error", "started", "finished",
	"verify", // after the others, which readers may take by position
	// A station's fields, after those.
	"result", "station", "operator", "slot", "usb_path", "vendor", "product", "revision",
	"transport", "transfer_size", "write_s", "verify_s", "repaired_ranges", "repaired_bytes", "bad_lba", "expected", "read"}

// csvRow is c's row of the CSV report of r.
func csvRow(r *session.Report, c *session.Record) []string {
	lba := ""
	if c.BadLBA != nil {
		lba = strconv.FormatInt(*c.BadLBA, 10)
	}
	secs := func(s float64) string { return strconv.FormatFloat(s, 'f', 3, 64) }
	t := textCell
	return []string{
		t(r.Image), r.SHA256, t(c.Target), t(c.Serial), strconv.FormatInt(c.Capacity, 10),
		strconv.FormatInt(c.Bytes, 10), strconv.FormatFloat(c.Rate/1e6, 'f', 1, 64),
		c.Bound, strconv.FormatBool(c.Verified), strconv.Itoa(c.Code), t(c.Error),
		c.Started.UTC().Format(time.RFC3339), c.Finished.UTC().Format(time.RFC3339), c.Verify,
		c.Result, t(c.Station), t(c.Operator), t(c.Slot), c.USBPath, t(c.Vendor), t(c.Product), t(c.Revision),
		c.Transport, strconv.Itoa(c.TransferSize), secs(c.WriteS), secs(c.VerifyS),
		strconv.Itoa(c.RepairedRanges), strconv.FormatInt(c.RepairedBytes, 10), lba, c.Expected, c.Read,
	}
}

// textCell is text from outside (a device's strings, an error, a name
// given) as a CSV cell: control characters escaped (shown.Text), and a
// cell a spreadsheet would take for a formula (=, +, -, @ or a tab first) opened
// with an apostrophe, as OWASP advises: a reader's serial "=HYPERLINK(...)"
// stays text.
func textCell(s string) string {
	s = shown.Text(s)
	if s != "" && strings.ContainsRune("=+-@\t", rune(s[0])) {
		return "'" + s
	}
	return s
}

func writeCSV(w io.Writer, r *session.Report) error {
	cw := csv.NewWriter(w)
	if err := cw.Write(csvHeader); err != nil {
		return err
	}
	for i := range r.Cards {
		if err := cw.Write(csvRow(r, &r.Cards[i])); err != nil {
			return err
		}
	}
	cw.Flush()
	return cw.Error()
}
