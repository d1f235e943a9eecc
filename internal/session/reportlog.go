package session

import (
	"bytes"
	"encoding/csv"
	"encoding/json"
	"fmt"
	"os"
)

// RecentCards is how many finished cards a session of Cards (a station's)
// keeps in its Result (Result.Cards); Result.Tally counts them all. A
// station that runs for a week must not keep every card it wrote: its
// report file holds them.
const RecentCards = 16

// jsonClose ends a JSON report as Save writes it, after the last card.
const jsonClose = "\n  ]\n}\n"

// reportLog is the report of a session of Cards (a station's), written
// as cards finish: a station must neither keep every card's record nor
// write them all again after each card. Between cards the file has Save's format: the first
// card's report is saved whole; each later card's CSV row is appended,
// and its JSON record written over the closing brackets, which follow it
// again (one write). Each card is on disk (fsync) before it is told to
// the observer, so a station killed between cards leaves a report of
// every card it finished.
type reportLog struct {
	path, format string
	f            *os.File
	end          int64 // where the next card is written: JSON's closing brackets, CSV's end
}

// add writes r, one card of the report whose image and SHA-256 head gives
// (head's Cards are not written).
func (l *reportLog) add(head *Report, r Record) error {
	if l.f == nil {
		return l.create(head, r)
	}
	var b bytes.Buffer
	switch l.format {
	case "csv":
		w := csv.NewWriter(&b)
		if err := w.Write(csvRow(head, &r)); err != nil {
			return err
		}
		w.Flush()
	case "json":
		rec, err := json.MarshalIndent(r, "    ", "  ")
		if err != nil {
			return err
		}
		b.WriteString(",\n    ")
		b.Write(rec)
		b.WriteString(jsonClose)
	}
	if _, err := l.f.WriteAt(b.Bytes(), l.end); err != nil {
		return &ReportError{Path: l.path, Err: unwrapPath(err)}
	}
	if err := l.f.Sync(); err != nil {
		return &ReportError{Path: l.path, Err: unwrapPath(err)}
	}
	l.end += int64(b.Len())
	if l.format == "json" {
		l.end -= int64(len(jsonClose))
	}
	return nil
}

// create saves the report of the first card whole, as Save does (a new
// file, renamed into place), and opens it for the next cards.
func (l *reportLog) create(head *Report, r Record) error {
	format, err := reportFormat(l.path)
	if err != nil {
		return err
	}
	first := *head
	first.Cards = []Record{r}
	if err := first.Save(l.path); err != nil {
		return err
	}
	f, err := os.OpenFile(l.path, os.O_WRONLY, 0)
	if err != nil {
		return &ReportError{Path: l.path, Err: unwrapPath(err)}
	}
	st, err := f.Stat()
	if err != nil {
		f.Close()
		return &ReportError{Path: l.path, Err: unwrapPath(err)}
	}
	l.f, l.format, l.end = f, format, st.Size()
	if format == "json" {
		l.end -= int64(len(jsonClose))
	}
	return nil
}

// close closes the file; the report is whole already.
func (l *reportLog) close() error {
	if l == nil || l.f == nil {
		return nil
	}
	err := l.f.Close()
	l.f = nil
	if err != nil {
		return &ReportError{Path: l.path, Err: fmt.Errorf("closing: %w", unwrapPath(err))}
	}
	return nil
}
