package image

import (
	"context"
	"fmt"
	"io"
	"os"

	"github.com/usbflash/usbflash/internal/failure"
	"github.com/usbflash/usbflash/internal/image/catalog"
	"github.com/usbflash/usbflash/internal/image/httpsrc"
	"github.com/usbflash/usbflash/internal/lib/units"
)

// LoadCatalog reads the catalog at ref (an http(s) URL or a file), its
// URLs with http's options: its entries, in order.
func LoadCatalog(ctx context.Context, ref string, http httpsrc.Options) ([]catalog.Entry, error) {
	return loadCatalog(ctx, ref, newClient(http, nil))
}

func loadCatalog(ctx context.Context, ref string, client *httpsrc.Client) ([]catalog.Entry, error) {
	return catalog.Load(ref, func(name string, limit int64) ([]byte, error) {
		if IsURL(name) {
			return client.ReadFile(ctx, name, limit)
		}
		f, err := os.Open(name)
		if err != nil {
			return nil, err
		}
		defer f.Close()
		data, err := io.ReadAll(io.LimitReader(f, limit+1))
		if err == nil && int64(len(data)) > limit {
			err = fmt.Errorf("is larger than %d bytes", limit)
		}
		return data, err
	})
}

// resolveCatalog turns the catalog entry Ref.OS names into the image's
// URL, whose download and decoded image are then checked against the
// entry's two SHA-256s (a sum given or a keyring is for lists beside an
// image, and the catalog's are used instead), and whose decoded size is
// the entry's.
func (o *Opened) resolveCatalog(ctx context.Context) error {
	name := o.ref.OS
	if name == "" {
		return nil
	}
	if o.ref.Path != "" {
		return &failure.SettingError{Setting: SettingOS, Err: ErrImageAndOS}
	}
	if o.ref.Catalog == "" {
		return &failure.SettingError{Setting: SettingCatalog, Err: ErrNoCatalog}
	}
	entries, err := loadCatalog(ctx, o.ref.Catalog, o.httpClient())
	if err != nil {
		return &ReadError{Err: err}
	}
	e, err := catalog.Find(entries, name)
	if err == nil {
		err = e.Check()
		if err != nil {
			err = &catalog.Error{Ref: o.ref.Catalog, Err: fmt.Errorf("entry %q: %w", e.Name, err)}
		}
	}
	if err != nil {
		return err
	}
	what := e.Name
	if e.ReleaseDate != "" {
		what += " (" + e.ReleaseDate + ")"
	}
	if e.ExtractSize > 0 {
		what += ", " + units.FormatBytes(e.ExtractSize)
	}
	o.note(fmt.Sprintf("%q is %s: %s", name, what, Shown(e.URL)))
	o.ref.Path, o.entry = e.URL, &e
	return nil
}

// catalogSum is what a catalog entry's image is checked against: the
// download's SHA-256 and then the decoded image's, or the one of them
// the entry gives; nil for an image not from a catalog, or an entry with
// neither.
func (o *Opened) catalogSum() *checksum {
	e := o.entry
	if e == nil {
		return nil
	}
	from := "the catalog's entry " + e.Name
	switch {
	case e.DownloadSHA256 != "":
		c := &checksum{want: e.DownloadSHA256, from: from + " (image_download_sha256)"}
		if e.ExtractSHA256 != "" {
			c.also = []alsoSum{{want: e.ExtractSHA256, from: from + " (extract_sha256)", decoded: true}}
		}
		return c
	case e.ExtractSHA256 != "":
		return &checksum{want: e.ExtractSHA256, from: from + " (extract_sha256)", decodedOnly: true}
	}
	return nil
}

// expectCatalogSize gives src the decoded size its catalog entry states,
// when its container states none, so that a card too small is refused
// before anything is written and progress shows how far the write got;
// reading then checks it. A size other than the container's, or than the
// image decodes to, is the entry's (ErrStatedSize), not damage.
func (o *Opened) expectCatalogSize(src *Source) error {
	if o.entry == nil {
		return nil
	}
	if err := src.ExpectSize(o.entry.ExtractSize, "the catalog's entry "+o.entry.Name+" (extract_size)"); err != nil {
		return &ReadError{Err: fmt.Errorf("%s: %w", o.Shown(), err)}
	}
	return nil
}
