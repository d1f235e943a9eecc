package catalog

import (
	"encoding/json"
	"fmt"
	"io"
	"text/tabwriter"

	"github.com/usbflash/usbflash/internal/lib/shown"
	"github.com/usbflash/usbflash/internal/lib/units"
)

// List prints entries to w: a table of their names, release dates and
// the image's and the download's sizes, or with asJSON one JSON object per
// entry.
func List(w io.Writer, entries []Entry, asJSON bool) error {
	if asJSON {
		enc := json.NewEncoder(w)
		for _, e := range entries {
			if err := enc.Encode(e); err != nil {
				return err
			}
		}
		return nil
	}
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	// A catalog's names are its author's to choose: escaped.
	out := shown.Writer(tw)
	fmt.Fprintln(out, "NAME\tRELEASED\tIMAGE\tDOWNLOAD")
	for _, e := range entries {
		fmt.Fprintf(out, "%s\t%s\t%s\t%s\n", e.Name, e.ReleaseDate, sizeOrDash(e.ExtractSize), sizeOrDash(e.DownloadSize))
	}
	return tw.Flush()
}

func sizeOrDash(n int64) string {
	if n <= 0 {
		return "-"
	}
	return units.FormatBytes(n)
}

// Names are the entries' names, in order (for completing one).
func Names(entries []Entry) []string {
	names := make([]string, len(entries))
	for i, e := range entries {
		names[i] = e.Name
	}
	return names
}
