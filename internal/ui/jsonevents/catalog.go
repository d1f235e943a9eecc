package jsonevents

import "github.com/usbflash/usbflash/internal/image/catalog"

// CatalogEntry is an image of an OS list as usbflash images --json prints
// it (catalog.Entry), one object per line, and serve's page reads it:
// rpi-imager's field names, the entry's name with its folders'.
type CatalogEntry struct {
	Name           string   `json:"name"`
	Description    string   `json:"description,omitempty"`
	URL            string   `json:"url"`
	ReleaseDate    string   `json:"release_date,omitempty"`
	Devices        []string `json:"devices,omitempty"`
	InitFormat     string   `json:"init_format,omitempty"`
	Icon           string   `json:"icon,omitempty"`
	ExtractSize    int64    `json:"extract_size,omitempty"`
	ExtractSHA256  string   `json:"extract_sha256,omitempty"`
	DownloadSize   int64    `json:"image_download_size,omitempty"`
	DownloadSHA256 string   `json:"image_download_sha256,omitempty"`
	Unavailable    string   `json:"unavailable,omitempty"`
}

// NewCatalogEntry is e as images --json prints it.
func NewCatalogEntry(e catalog.Entry) CatalogEntry {
	return CatalogEntry{Name: e.Name, Description: e.Description, URL: e.URL, ReleaseDate: e.ReleaseDate, Devices: e.Devices,
		InitFormat: e.InitFormat, Icon: e.Icon, ExtractSize: e.ExtractSize, ExtractSHA256: e.ExtractSHA256, DownloadSize: e.DownloadSize,
		DownloadSHA256: e.DownloadSHA256, Unavailable: e.Unavailable}
}
