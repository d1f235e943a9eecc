package main

import (
	"context"
	"os"

	"github.com/spf13/cobra"

	"github.com/usbflash/usbflash/internal/image"
	"github.com/usbflash/usbflash/internal/image/catalog"
	"github.com/usbflash/usbflash/internal/image/httpsrc"
	"github.com/usbflash/usbflash/internal/ui/catalogview"
)

// catalogEnv names the catalog when --catalog does not.
const catalogEnv = "USBFLASH_CATALOG"

// catalogFlags are --catalog and --os: the image named by a catalog entry.
type catalogFlags struct{ catalog, os string }

// register adds --catalog (default $USBFLASH_CATALOG) and, withOS, --os,
// completed with the catalog's entries.
func (f *catalogFlags) register(c *cobra.Command, withOS bool) {
	c.Flags().StringVar(&f.catalog, "catalog", os.Getenv(catalogEnv), "the OS list (rpi-imager's os_list JSON, a URL or a file) that --os is looked up in (default $"+catalogEnv+")")
	if !withOS {
		return
	}
	c.Flags().StringVar(&f.os, "os", "", "write the image of this catalog entry (its name, with its folders' or alone, or the start of only one entry's) instead of an IMAGE: checked against the entry's SHA-256s and size")
	_ = c.RegisterFlagCompletionFunc("os", func(c *cobra.Command, _ []string, _ string) ([]string, cobra.ShellCompDirective) {
		entries, _ := image.LoadCatalog(c.Context(), f.catalog, httpsrc.Options{})
		return catalog.Names(entries), cobra.ShellCompDirectiveNoFileComp
	})
}

// image splits the arguments into the IMAGE and the targets: with --os
// there is no IMAGE argument.
func (f *catalogFlags) image(args []string) (string, []string) {
	if f.os != "" || len(args) == 0 {
		return "", args
	}
	return args[0], args[1:]
}

// imagesOptions is what an images command line asks for: the OS list and
// how to read it.
type imagesOptions struct {
	Catalog string
	HTTP    httpsrc.Options
	JSON    bool
}

func newImagesCommand(a *app, runF func(*imagesOptions) error) *cobra.Command {
	var asJSON bool
	var f catalogFlags
	c := &cobra.Command{
		Use:   "images [--catalog URL|FILE]",
		Short: "List the images of an OS list (rpi-imager's os_list JSON)",
		Long: `List the images of an OS list in rpi-imager's os_list format (folders of
entries with a url, the image's and the download's sizes and SHA-256s),
read from --catalog URL or FILE (default $` + catalogEnv + `). Write one
with 'usbflash write --catalog LIST --os NAME TARGET': NAME is an entry's
name, with its folders' or alone, or the start of only one entry's.`,
		Args: exactArgs(0, "no arguments (the list is --catalog)"),
		RunE: func(c *cobra.Command, args []string) error {
			if f.catalog == "" {
				return &usageError{"images needs an OS list: --catalog URL|FILE or $" + catalogEnv}
			}
			http, err := a.httpOptions()
			if err != nil {
				return err
			}
			o := &imagesOptions{Catalog: f.catalog, HTTP: http, JSON: asJSON}
			return runOr(c.Context(), runF, o, a.imagesRun)
		},
	}
	c.Flags().BoolVar(&asJSON, "json", false, "print one JSON object per entry")
	f.register(c, false)
	return c
}

// imagesRun lists the OS list's images.
func (a *app) imagesRun(ctx context.Context, o *imagesOptions) error {
	entries, err := image.LoadCatalog(ctx, o.Catalog, o.HTTP)
	if err != nil {
		return err
	}
	return catalogview.List(a.stdout, entries, o.JSON)
}
