package report

import (
	"bytes"
	"encoding/csv"
	"encoding/json"
	"os"

	"github.com/usbflash/usbflash/internal/session"
	"github.com/usbflash/usbflash/internal/ui/jsonevents"
)

// jsonClose ends a JSON report as save writes it, after the last card.
const jsonClose = "\n  ]\n}\n"

// create saves the report of a station's first card whole, as save does
// (a new file, renamed into place), and opens it for the next cards.
func (f *File) create(head *session.Report, card session.Record) error {
	first := *head
	first.Cards = []session.Record{card}
	if err := save(f.path, f.format, &first); err != nil {
		return err
	}
	file, err := os.OpenFile(f.path, os.O_WRONLY, 0)
	if err != nil {
		return &Error{Path: f.path, Err: unwrapPath(err)}
	}
	st, err := file.Stat()
	if err != nil {
		file.Close()
		return &Error{Path: f.path, Err: unwrapPath(err)}
	}
	f.f, f.end = file, st.Size()
	if f.format == "json" {
		f.end -= int64(len(jsonClose))
	}
	return nil
}

// append writes card after the station's cards so far, and syncs.
func (f *File) append(head *session.Report, card session.Record) error {
	var b bytes.Buffer
	switch f.format {
	case "csv":
		w := csv.NewWriter(&b)
		if err := w.Write(csvRow(head, &card)); err != nil {
			return err
		}
		w.Flush()
	case "json":
		rec, err := json.MarshalIndent(jsonevents.NewRecord(card), "    ", "  ")
		if err != nil {
			return err
		}
		b.WriteString(",\n    ")
		b.Write(rec)
		b.WriteString(jsonClose)
	}
	if _, err := f.f.WriteAt(b.Bytes(), f.end); err != nil {
		return &Error{Path: f.path, Err: unwrapPath(err)}
	}
	if err := f.f.Sync(); err != nil {
		return &Error{Path: f.path, Err: unwrapPath(err)}
	}
	f.end += int64(b.Len())
	if f.format == "json" {
		f.end -= int64(len(jsonClose))
	}
	return nil
}
