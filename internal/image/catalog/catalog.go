// Package catalog reads lists of OS images in rpi-imager's os_list format
// (a JSON document whose os_list holds entries with a name, a url, the
// sizes and SHA-256s of the download and of the image it decodes to, and
// folders of entries as subitems or subitems_url), and finds an entry by
// name: exactly, or by a prefix only one entry has. A folder whose
// subitems_url cannot be read is an entry marked unavailable, with why;
// the rest of the catalog is read. A catalog that is a file may name
// images by paths relative to it.
package catalog

import (
	"encoding/json"
	"errors"
	"fmt"
	"net/url"
	"path/filepath"
	"strings"

	"github.com/usbflash/usbflash/internal/failure"
)

// Entry is an image of the catalog.
type Entry struct {
	// Name is the entry's name under its folders' ("Raspberry Pi OS
	// (other) / Raspberry Pi OS Lite (64-bit)").
	Name        string
	Description string
	URL         string
	ReleaseDate string
	Devices     []string
	InitFormat  string
	// Icon is the entry's picture (a URL, or a file beside a catalog
	// file), "" for none.
	Icon string
	// ExtractSize and ExtractSHA256 are the decoded image's; DownloadSize
	// and DownloadSHA256 the file's as served. 0 and "": not given.
	ExtractSize    int64
	ExtractSHA256  string
	DownloadSize   int64
	DownloadSHA256 string
	// Unavailable, for a folder whose list (subitems_url) could not be
	// read, says why; such an entry has no URL and is never chosen.
	Unavailable string
}

// item is an os_list element as the format has it.
type item struct {
	Name           string   `json:"name"`
	Description    string   `json:"description"`
	URL            string   `json:"url"`
	ReleaseDate    string   `json:"release_date"`
	Devices        []string `json:"devices"`
	InitFormat     string   `json:"init_format"`
	Icon           string   `json:"icon"`
	ExtractSize    int64    `json:"extract_size"`
	ExtractSHA256  string   `json:"extract_sha256"`
	DownloadSize   int64    `json:"image_download_size"`
	DownloadSHA256 string   `json:"image_download_sha256"`
	Subitems       []item   `json:"subitems"`
	SubitemsURL    string   `json:"subitems_url"`
}

// Read is how a catalog's documents are read: the list itself, and the
// lists its folders name by subitems_url (resolved against the document
// that names them). limit bounds a document's size.
type Read func(ref string, limit int64) ([]byte, error)

// Limits on what a catalog may make Load read.
const (
	maxDocument  = 16 << 20
	maxDocuments = 32
	maxDepth     = 8
)

// ErrNotCatalog: a document is not an os_list.
var ErrNotCatalog = failure.New(failure.Image, "is not an OS list (a JSON document with an os_list array)")

// ErrTooMany: the catalog's folders name more lists, or nest deeper, than
// a catalog may (a loop of subitems_url).
var ErrTooMany = failure.New(failure.Image, fmt.Sprintf("its folders name more than %d lists or nest deeper than %d", maxDocuments, maxDepth))

// Error is a catalog that cannot be read or used.
type Error struct {
	Ref string
	Err error
}

func (e *Error) Error() string { return fmt.Sprintf("catalog %s: %v", e.Ref, e.Err) }
func (e *Error) Unwrap() error { return e.Err }

// Class is the cause's, else Image.
func (e *Error) Class() failure.Class { return failure.Within(failure.Image, e.Err) }

// Load reads the catalog at ref with read, following subitems_url, and
// returns its images in the document's order. A folder whose list cannot
// be read or is not one is an entry with Unavailable set; the catalog
// itself failing, or its folders passing the limits, is Load's error. An
// entry without a url (a separator) is left out, as is one whose url no
// image is read from (rpi-imager's internal://format).
func Load(ref string, read Read) ([]Entry, error) {
	l := &loader{read: read}
	if err := l.load(ref, nil, 0); err != nil {
		return nil, err
	}
	return l.out, nil
}

type loader struct {
	read Read
	docs int
	out  []Entry
}

func (l *loader) load(ref string, folders []string, depth int) error {
	if l.docs++; l.docs > maxDocuments || depth > maxDepth {
		return &Error{Ref: ref, Err: ErrTooMany}
	}
	data, err := l.read(ref, maxDocument)
	if err != nil {
		return &Error{Ref: ref, Err: err}
	}
	items, err := parse(data)
	if err != nil {
		return &Error{Ref: ref, Err: err}
	}
	return l.items(ref, items, folders, depth)
}

func (l *loader) items(ref string, items []item, folders []string, depth int) error {
	for _, it := range items {
		path := append(folders[:len(folders):len(folders)], strings.TrimSpace(it.Name))
		switch {
		case len(it.Subitems) > 0:
			if err := l.items(ref, it.Subitems, path, depth+1); err != nil {
				return err
			}
		case it.SubitemsURL != "":
			sub := resolve(ref, it.SubitemsURL)
			if !readable(ref, sub) {
				continue // internal:// and the like
			}
			if err := l.load(sub, path, depth+1); err != nil {
				if errors.Is(err, ErrTooMany) {
					return err
				}
				l.out = append(l.out, Entry{Name: strings.Join(path, " / "), Description: it.Description, Unavailable: unavailable(err)})
			}
		case it.URL != "" && readable(ref, resolve(ref, it.URL)):
			l.out = append(l.out, Entry{Name: strings.Join(path, " / "), Description: it.Description,
				URL: resolve(ref, it.URL), ReleaseDate: it.ReleaseDate, Devices: it.Devices, InitFormat: it.InitFormat,
				Icon:        resolveIcon(ref, it.Icon),
				ExtractSize: it.ExtractSize, ExtractSHA256: strings.ToLower(it.ExtractSHA256),
				DownloadSize: it.DownloadSize, DownloadSHA256: strings.ToLower(it.DownloadSHA256)})
		}
	}
	return nil
}

// resolveIcon is an entry's icon relative to the document that names it;
// "" for none.
func resolveIcon(base, icon string) string {
	if strings.TrimSpace(icon) == "" {
		return ""
	}
	return resolve(base, icon)
}

// resolve is ref relative to the document base names (a URL or a file).
func resolve(base, ref string) string {
	r, err := url.Parse(ref)
	if err != nil || r.Scheme != "" {
		return ref
	}
	b, err := url.Parse(base)
	if err != nil || b.Scheme == "" {
		if filepath.IsAbs(ref) {
			return ref
		}
		return filepath.Join(filepath.Dir(base), filepath.FromSlash(ref))
	}
	return b.ResolveReference(r).String()
}

// readable says u, named by the catalog document ref, is read from: an
// http(s) URL, or for a catalog that is a file also a file's path (a
// remote catalog never names a local file).
func readable(ref, u string) bool { return isURL(u) || !isURL(ref) && local(u) }

// isURL says u is an http(s) URL.
func isURL(u string) bool {
	p, err := url.Parse(u)
	return err == nil && (p.Scheme == "http" || p.Scheme == "https")
}

// local says u is a file's path (a local catalog's image or list, resolved
// against it), not a URL of another scheme (rpi-imager's
// internal://format).
func local(u string) bool {
	return u != "" && !strings.Contains(u, "://") && !strings.HasPrefix(u, "file:")
}

// unavailable is why a folder's list could not be read, without the
// list's own name (Error's), which the folder's entry says.
func unavailable(err error) string {
	var ce *Error
	if errors.As(err, &ce) {
		return ce.Err.Error()
	}
	return err.Error()
}

// parse reads one os_list document.
func parse(data []byte) ([]item, error) {
	var d struct {
		OSList *[]item `json:"os_list"`
	}
	if err := json.Unmarshal(data, &d); err != nil {
		return nil, fmt.Errorf("%w: %v", ErrNotCatalog, err)
	}
	if d.OSList == nil {
		return nil, ErrNotCatalog
	}
	return *d.OSList, nil
}

// The reasons Find finds no one entry.
var (
	ErrNoEntry   = failure.New(failure.Usage, "no entry of the catalog has this name")
	ErrAmbiguous = failure.New(failure.Usage, "several entries of the catalog start with this name")
	// ErrUnavailable: the name is in a folder whose list could not be
	// read.
	ErrUnavailable = failure.New(failure.Image, "the catalog's folder that would hold it could not be read")
)

// FindError is a name that names no entry, or several.
type FindError struct {
	Name       string
	Candidates []string // for an ambiguous name, the entries it starts
	Err        error
}

func (e *FindError) Error() string {
	if len(e.Candidates) > 0 {
		return fmt.Sprintf("%q: %v: %s", e.Name, e.Err, strings.Join(e.Candidates, "; "))
	}
	return fmt.Sprintf("%q: %v", e.Name, e.Err)
}
func (e *FindError) Unwrap() error { return e.Err }

// Find is the entry named name: the one whose name with its folders' is
// name, case aside; else the one whose own name is (an entry at the top
// is chosen by its name even when a folder holds one of the same name,
// which its folder's name then chooses); else the one whose name starts
// with it. An unavailable folder is never chosen, and a name that could
// only be in one is ErrUnavailable.
func Find(entries []Entry, name string) (Entry, error) {
	want := strings.ToLower(strings.TrimSpace(name))
	var full, own, prefix []Entry
	var blocked []string // unavailable folders the name may be in
	for _, e := range entries {
		whole := strings.ToLower(e.Name)
		last := whole
		if i := strings.LastIndex(whole, " / "); i >= 0 {
			last = whole[i+3:]
		}
		if e.Unavailable != "" {
			if want == whole || strings.HasPrefix(want, whole+" / ") || strings.HasPrefix(whole, want) {
				blocked = append(blocked, e.Name+": "+e.Unavailable)
			}
			continue
		}
		switch {
		case whole == want:
			full = append(full, e)
		case last == want:
			own = append(own, e)
		case strings.HasPrefix(whole, want) || strings.HasPrefix(last, want):
			prefix = append(prefix, e)
		}
	}
	for _, found := range [][]Entry{full, own, prefix} {
		switch len(found) {
		case 0:
			continue
		case 1:
			return found[0], nil
		}
		names := make([]string, len(found))
		for i, e := range found {
			names[i] = e.Name
		}
		return Entry{}, &FindError{Name: name, Candidates: names, Err: ErrAmbiguous}
	}
	if len(blocked) > 0 {
		return Entry{}, &FindError{Name: name, Candidates: blocked, Err: ErrUnavailable}
	}
	return Entry{}, &FindError{Name: name, Err: ErrNoEntry}
}

// errSize is an entry's size that cannot be one.
var errSize = errors.New("a negative size")

// Check refuses an entry whose sizes or sums cannot be used.
func (e Entry) Check() error {
	if e.ExtractSize < 0 || e.DownloadSize < 0 {
		return errSize
	}
	for _, s := range []string{e.ExtractSHA256, e.DownloadSHA256} {
		if s != "" && (len(s) != 64 || strings.Trim(s, "0123456789abcdef") != "") {
			return fmt.Errorf("%q is not a SHA-256", s)
		}
	}
	return nil
}
