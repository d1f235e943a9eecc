package session

import (
	"context"
	"fmt"
	"io"
	"os"

	"github.com/usbflash/usbflash/internal/failure"
	"github.com/usbflash/usbflash/internal/image"
	"github.com/usbflash/usbflash/internal/image/catalog"
	"github.com/usbflash/usbflash/internal/lib/units"
)

// SettingCatalog is the catalog an image is looked up in.
const SettingCatalog failure.Setting = "catalog"

// SettingOS is the catalog entry (Config.OS) that names the image.
const SettingOS failure.Setting = "os"

// ErrNoCatalog: an image is named by a catalog entry and no catalog was
// given.
var ErrNoCatalog = failure.New(failure.Usage, "an image named by a catalog entry needs a catalog (an os_list URL or file)")

// ErrImageAndOS: an image was given both as a file or URL and as a
// catalog entry.
var ErrImageAndOS = failure.New(failure.Usage, "an image is named by a file or URL or by a catalog entry, not both")

// LoadCatalog reads the catalog at ref (an http(s) URL or a file) with
// the session's client: its entries, in order.
func LoadCatalog(ctx context.Context, ref string, opts Config) ([]catalog.Entry, error) {
	return newSession(opts).loadCatalog(ctx, ref)
}

func (s *session) loadCatalog(ctx context.Context, ref string) ([]catalog.Entry, error) {
	return catalog.Load(ref, func(name string, limit int64) ([]byte, error) {
		if isURL(name) {
			return s.httpClient().ReadFile(ctx, name, limit)
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

// resolveCatalog turns the catalog entry Config.OS names into the image's URL,
// whose download and decoded image are then checked against the entry's
// two SHA-256s (a sum given or a keyring is for lists beside an image, and
// the catalog's are used instead), and whose decoded size is the entry's.
func (s *session) resolveCatalog(ctx context.Context) error {
	name := s.cfg.OS
	if name == "" {
		return nil
	}
	if s.cfg.Image != "" {
		return &failure.SettingError{Setting: SettingOS, Err: ErrImageAndOS}
	}
	if s.cfg.Catalog == "" {
		return &failure.SettingError{Setting: SettingCatalog, Err: ErrNoCatalog}
	}
	entries, err := s.loadCatalog(ctx, s.cfg.Catalog)
	if err != nil {
		return &ImageError{Err: err}
	}
	e, err := catalog.Find(entries, name)
	if err == nil {
		err = e.Check()
		if err != nil {
			err = &catalog.Error{Ref: s.cfg.Catalog, Err: fmt.Errorf("entry %q: %w", e.Name, err)}
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
	s.emit(Note{Message: fmt.Sprintf("%q is %s: %s", name, what, displayImage(e.URL))})
	s.cfg.Image, s.entry = e.URL, &e
	return nil
}

// imageLabel is the image as a session's outcome names it: its path or
// URL, or its catalog entry's name and URL.
func (s *session) imageLabel() string {
	if s.entry == nil {
		return imageName(s.cfg.Image)
	}
	return s.entry.Name + " (" + displayImage(s.cfg.Image) + ")"
}

// catalogDownload is what a catalog entry's image is checked against:
// the download's SHA-256 and then the decoded image's, or the one of them
// the entry gives; nil for an image not from a catalog, or an entry with
// neither.
func catalogDownload(cfg Config, e *catalog.Entry) *download {
	if e == nil {
		return nil
	}
	from := "the catalog's entry " + e.Name
	switch {
	case e.DownloadSHA256 != "":
		d := &download{want: e.DownloadSHA256, from: from + " (image_download_sha256)"}
		if e.ExtractSHA256 != "" {
			d.also = []sumCheck{{want: e.ExtractSHA256, from: from + " (extract_sha256)", decoded: true}}
		}
		return d
	case e.ExtractSHA256 != "":
		return &download{want: e.ExtractSHA256, from: from + " (extract_sha256)", decodedOnly: true}
	}
	return nil
}

// expectCatalogSize gives src the decoded size its catalog entry states,
// when its container states none, so that a card too small is refused
// before anything is written and progress shows how far the write got;
// reading then checks it. A size other than the container's, or than the
// image decodes to, is the entry's (image.ErrStatedSize), not damage.
func (s *session) expectCatalogSize(src *image.Source) error {
	if s.entry == nil {
		return nil
	}
	if err := src.ExpectSize(s.entry.ExtractSize, "the catalog's entry "+s.entry.Name+" (extract_size)"); err != nil {
		return &ImageError{Err: fmt.Errorf("%s: %w", displayImage(s.cfg.Image), err)}
	}
	return nil
}
