// Package catalogview is what usbflash images shows of an OS list: a
// table of its entries, or one JSON object per entry
// (jsonevents.CatalogEntry).
package catalogview

import (
	"encoding/json"
	"fmt"
	"io"
	"text/tabwriter"

	"github.com/usbflash/usbflash/internal/image/catalog"
	"github.com/usbflash/usbflash/internal/lib/shown"
	"github.com/usbflash/usbflash/internal/lib/units"
	"github.com/usbflash/usbflash/internal/ui/jsonevents"
)

// List prints entries to w: a table of their names, release dates and
// the image's and the download's sizes (a folder that could not be read
// marked unavailable, and why said below the table), or with asJSON one
// JSON object per entry.
func List(w io.Writer, entries []catalog.Entry, asJSON bool) error {
	if asJSON {
		enc := json.NewEncoder(w)
		for _, e := range entries {
			if err := enc.Encode(jsonevents.NewCatalogEntry(e)); err != nil {
				return err
			}
		}
		return nil
	}
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	// A catalog's names are its author's to choose: escaped.
	out := shown.Writer(tw)
	fmt.Fprintln(out, "NAME\tRELEASED\tIMAGE\tDOWNLOAD")
	var why []string
	for _, e := range entries {
		if e.Unavailable != "" {
			fmt.Fprintf(out, "%s (unavailable)\t-\t-\t-\n", e.Name)
			why = append(why, fmt.Sprintf("%s is unavailable: %s\n", e.Name, e.Unavailable))
			continue
		}
		fmt.Fprintf(out, "%s\t%s\t%s\t%s\n", e.Name, e.ReleaseDate, sizeOrDash(e.ExtractSize), sizeOrDash(e.DownloadSize))
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	for _, line := range why {
		if _, err := io.WriteString(shown.Writer(w), line); err != nil {
			return err
		}
	}
	return nil
}

func sizeOrDash(n int64) string {
	if n <= 0 {
		return "-"
	}
	return units.FormatBytes(n)
}
