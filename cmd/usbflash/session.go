package main

import (
	"encoding/csv"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"
)

// cardOutcome is what happened to one card of a many-card session: one row
// of the final table, of --report and of the JSON summary.
type cardOutcome struct {
	Target   string    `json:"target"`
	Serial   string    `json:"serial"`
	Capacity int64     `json:"capacity"`
	Bytes    int64     `json:"bytes"`     // image bytes written
	Rate     float64   `json:"rate"`      // bytes/s over the card's own write
	Bound    bound     `json:"bound"`     // what set this card's pace
	Verified bool      `json:"verified"`  // read back and matched
	SHA256   string    `json:"sha256"`    // of the image written to it
	Error    string    `json:"error"`     // "" on success
	Code     int       `json:"exit_code"` // the exit code this card alone would give
	Started  time.Time `json:"started"`
	Finished time.Time `json:"finished"`
}

// session is the record of a many-card write, for a production line: the
// image, and one outcome per card, in the order they were written.
type session struct {
	Image   string        `json:"image"`
	SHA256  string        `json:"sha256"`
	Started time.Time     `json:"started"`
	Cards   []cardOutcome `json:"cards"`
}

// reportFormat is the --report file's format, chosen by its extension.
func reportFormat(path string) (string, error) {
	switch ext := strings.ToLower(filepath.Ext(path)); ext {
	case ".json", ".csv":
		return ext[1:], nil
	default:
		return "", &usageError{fmt.Sprintf("--report %s: name a .json or .csv file", path)}
	}
}

// save writes the whole session to path (JSON or CSV by extension). It
// writes a temporary file and renames it, so a reader of the report, or a
// crash, never sees half a record; --watch saves after every card.
func (s *session) save(path string) error {
	format, err := reportFormat(path)
	if err != nil {
		return err
	}
	tmp, err := os.CreateTemp(filepath.Dir(path), "."+filepath.Base(path)+".*")
	if err != nil {
		return fmt.Errorf("report %s: %w", path, err)
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
		return fmt.Errorf("report %s: %w", path, err)
	}
	return nil
}

var csvHeader = []string{"image", "sha256", "target", "serial", "capacity", "bytes", "rate_mbps",
	"bound", "verified", "exit_code", "error", "started", "finished"}

func (s *session) writeCSV(f *os.File) error {
	w := csv.NewWriter(f)
	if err := w.Write(csvHeader); err != nil {
		return err
	}
	for _, c := range s.Cards {
		if err := w.Write([]string{
			s.Image, s.SHA256, c.Target, c.Serial, strconv.FormatInt(c.Capacity, 10),
			strconv.FormatInt(c.Bytes, 10), strconv.FormatFloat(c.Rate/1e6, 'f', 1, 64),
			string(c.Bound), strconv.FormatBool(c.Verified), strconv.Itoa(c.Code), c.Error,
			c.Started.UTC().Format(time.RFC3339), c.Finished.UTC().Format(time.RFC3339),
		}); err != nil {
			return err
		}
	}
	w.Flush()
	return w.Error()
}
