package readerinfo

import (
	"encoding/json"
	"fmt"
	"io"
	"strings"
)

// List is what list shows: the readers, the disks disk: writes, and what
// it cannot show and why.
type List struct {
	Readers []Reader
	Disks   []Disk
	// NoUSB, when set, is why there are no readers to list here (no USB
	// access, a build without USB), and what still works.
	NoUSB string
	// Notes say what could not be listed or opened, and why.
	Notes []string
}

// Print shows l: a table of readers and one of disks on out and the notes
// on errOut, or with asJSON one object ({"devices": [...], "disks": [...],
// "note": ...}) on out.
func (l List) Print(out, errOut io.Writer, asJSON bool) error {
	if asJSON {
		notes := l.Notes
		if l.NoUSB != "" {
			notes = append([]string{l.NoUSB}, notes...)
		}
		doc := map[string]any{"devices": orEmpty(l.Readers), "disks": orEmpty(l.Disks)}
		if len(notes) > 0 {
			doc["note"] = strings.Join(notes, " ")
		}
		return json.NewEncoder(out).Encode(doc)
	}
	switch {
	case l.NoUSB != "":
		fmt.Fprintf(out, "No USB readers: %s\n", l.NoUSB)
	case len(l.Readers) == 0:
		fmt.Fprintln(out, "No USB mass-storage readers attached.")
	default:
		PrintReaders(out, l.Readers)
	}
	if len(l.Disks) > 0 {
		fmt.Fprintln(out, "\nDisks (disk: targets, written through the system's uncached path):")
		PrintDisks(out, l.Disks)
	}
	for _, n := range l.Notes {
		fmt.Fprintln(errOut, n)
	}
	return nil
}

// orEmpty is s, an empty list rather than null when it has nothing.
func orEmpty[T any](s []T) []T {
	if s == nil {
		return []T{}
	}
	return s
}
