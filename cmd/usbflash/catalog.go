package main

import (
	"encoding/json"
	"fmt"
	"os"
	"text/tabwriter"

	"github.com/spf13/cobra"

	"github.com/usbflash/usbflash/flash"
	"github.com/usbflash/usbflash/internal/units"
)

// catalogEnv names the catalog when --catalog does not.
const catalogEnv = "USBFLASH_CATALOG"

// addCatalogFlag adds --catalog, defaulting to $USBFLASH_CATALOG.
func addCatalogFlag(c *cobra.Command, v *string) {
	c.Flags().StringVar(v, "catalog", os.Getenv(catalogEnv), "the OS list (rpi-imager's os_list JSON, a URL or a file) that an IMAGE of catalog:NAME is looked up in (default $"+catalogEnv+")")
}

func newCatalogCommand(a *app) *cobra.Command {
	var asJSON bool
	var ref string
	c := &cobra.Command{
		Use:   "catalog [URL|FILE]",
		Short: "List the images of an OS list (rpi-imager's os_list JSON)",
		Long: `List the images of an OS list in rpi-imager's os_list format (folders of
entries with a url, the image's and the download's sizes and SHA-256s),
read from URL or FILE (default --catalog, else $` + catalogEnv + `). Write one
with 'usbflash write --catalog LIST catalog:NAME TARGET': NAME is an entry's
name, with its folders' or alone, or the start of only one entry's.`,
		Args: func(c *cobra.Command, args []string) error {
			if len(args) > 1 {
				return &usageError{fmt.Sprintf("catalog takes at most one URL or FILE, got %s", plural(len(args), "argument"))}
			}
			return nil
		},
		RunE: func(c *cobra.Command, args []string) error {
			if len(args) == 1 {
				ref = args[0]
			}
			if ref == "" {
				return &usageError{"catalog needs an OS list: a URL or FILE, --catalog or $" + catalogEnv}
			}
			entries, err := flash.LoadCatalog(c.Context(), ref, flash.Config{})
			if err != nil {
				return err
			}
			if asJSON {
				enc := json.NewEncoder(a.stdout)
				for _, e := range entries {
					if err := enc.Encode(e); err != nil {
						return err
					}
				}
				return nil
			}
			w := tabwriter.NewWriter(a.stdout, 0, 4, 2, ' ', 0)
			fmt.Fprintln(w, "NAME\tRELEASED\tIMAGE\tDOWNLOAD")
			for _, e := range entries {
				fmt.Fprintf(w, "%s\t%s\t%s\t%s\n", e.Name, e.ReleaseDate, sizeOrDash(e.ExtractSize), sizeOrDash(e.DownloadSize))
			}
			return w.Flush()
		},
	}
	c.Flags().BoolVar(&asJSON, "json", false, "print one JSON object per entry")
	addCatalogFlag(c, &ref)
	return c
}

func sizeOrDash(n int64) string {
	if n <= 0 {
		return "-"
	}
	return units.FormatBytes(n)
}
